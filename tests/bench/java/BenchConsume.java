import java.time.Duration;
import java.util.List;

import org.deferd.Client;
import org.deferd.Job;

/**
 * One Java consumer for tests/bench/clients, as python_consume.py: subscribes to `bench` with
 * INFLIGHT, takes N jobs, acks each pipelined, waits for every ack's reply, and prints one
 * JSON line: the seconds from the first job to the last ack reply, and the acks that failed.
 * usage: java -cp deferd.jar:. BenchConsume SOCKET N INFLIGHT
 */
public final class BenchConsume {
    private BenchConsume() {
    }

    public static void main(String[] args) {
        String sock = args[0];
        int n = Integer.parseInt(args[1]);
        int inflight = Integer.parseInt(args[2]);
        try (Client client = Client.builder().socket(sock).timeout(Duration.ofSeconds(60)).connect()) {
            client.subscribe(List.of("bench"), inflight);
            long first = 0;
            for (int got = 0; got < n; got++) {
                Job job = client.nextJob(Duration.ofSeconds(60));
                if (job == null) {
                    System.out.println("{\"error\":\"no job after " + got + " of " + n + "\"}");
                    System.exit(1);
                }
                if (first == 0) {
                    first = System.nanoTime();
                }
                job.ack();
            }
            int failed = 0;
            try {
                client.flush();
            } catch (RuntimeException e) {
                failed = 1;
            }
            failed += client.failedAcks().size();
            double seconds = (System.nanoTime() - first) / 1e9;
            System.out.printf("{\"client\":\"java\",\"n\":%d,\"inflight\":%d,\"seconds\":%.3f,"
                    + "\"rate\":%d,\"failed_acks\":%d}%n", n, inflight, seconds,
                    Math.round(n / seconds), failed);
            System.exit(failed == 0 ? 0 : 1);
        }
    }
}
