import org.deferd.Handler;
import org.deferd.Job;

/** The Java worker's handler in tests/bench/clients: sleeps $BENCH_SLEEP_MS (default 10). */
public final class BenchSleepHandler implements Handler {
    private final long ms = Long.parseLong(System.getenv().getOrDefault("BENCH_SLEEP_MS", "10"));

    @Override
    public void handle(Job job) throws Exception {
        Thread.sleep(ms);
    }
}
