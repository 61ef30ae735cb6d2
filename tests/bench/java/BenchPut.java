import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

import org.deferd.Client;
import org.deferd.Put;

/**
 * Blocking puts with put tokens (Client.put, one at a time per connection) for
 * tests/bench/clients, as build/bench -C 0 -T 1 does them with libdeferd: P producer threads,
 * a connection each, N jobs in all, 64-byte payloads, due within WINDOW_MS after 1 s. Prints
 * one JSON line: put_rate, put_fail and the put latency's p50 and p99 in µs. With "shared",
 * the producer threads share one Client (it is thread-safe) instead of one each. With
 * "warmup=MS", the same threads and connections first put for MS ms untimed (a long-lived
 * JVM's steady state: its optimising compiler has run), counted as warmup_puts.
 * usage: java -cp deferd.jar:. BenchPut SOCKET N PRODUCERS WINDOW_MS [shared] [warmup=MS]
 */
public final class BenchPut {
    private static final byte[] PAYLOAD = new byte[64];

    private BenchPut() {
    }

    /** Puts until N are taken from NEXT, or until DEADLINE (System.nanoTime) when N < 0. */
    private static void puts(Client c, int n, long deadline, int window, AtomicInteger next,
                             AtomicInteger failed, long[] us) {
        while (n >= 0 || System.nanoTime() < deadline) {
            int i = next.getAndIncrement();
            if (n >= 0 && i >= n) {
                break;
            }
            long delay = 1000 + ThreadLocalRandom.current().nextInt(Math.max(1, window));
            long s = System.nanoTime();
            try {
                c.put(Put.to("bench", PAYLOAD).delay(Duration.ofMillis(delay)));
            } catch (RuntimeException e) {
                failed.incrementAndGet();
            }
            if (us != null) {
                us[i] = (System.nanoTime() - s) / 1000;
            }
        }
    }

    /** One pass over the clients, a thread each; returns its seconds. */
    private static double pass(Client[] clients, int n, long warmupMs, int window,
                               AtomicInteger next, AtomicInteger failed, long[] us)
            throws InterruptedException {
        List<Thread> threads = new ArrayList<>();
        long t0 = System.nanoTime();
        long deadline = t0 + warmupMs * 1_000_000L;
        for (Client c : clients) {
            Thread t = new Thread(() -> puts(c, n, deadline, window, next, failed, us));
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
        return (System.nanoTime() - t0) / 1e9;
    }

    public static void main(String[] args) throws Exception {
        String sock = args[0];
        int n = Integer.parseInt(args[1]);
        int producers = Integer.parseInt(args[2]);
        int window = Integer.parseInt(args[3]);
        boolean shared = false;
        long warmupMs = 0;
        for (int a = 4; a < args.length; a++) {
            if (args[a].equals("shared")) {
                shared = true;
            } else if (args[a].startsWith("warmup=")) {
                warmupMs = Long.parseLong(args[a].substring(7));
            }
        }
        Arrays.fill(PAYLOAD, (byte) 'x');
        Client[] clients = new Client[producers];
        Client one = shared ? Client.builder().socket(sock).connect() : null;
        for (int p = 0; p < producers; p++) {
            clients[p] = shared ? one : Client.builder().socket(sock).connect();
        }
        AtomicInteger warm = new AtomicInteger(), warmFailed = new AtomicInteger();
        if (warmupMs > 0) {
            pass(clients, -1, warmupMs, window, warm, warmFailed, null);
        }
        AtomicInteger next = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        long[] us = new long[n];
        double seconds = pass(clients, n, 0, window, next, failed, us);
        for (int p = 0; p < producers; p++) {
            if (!shared || p == 0) {
                clients[p].close();
            }
        }
        Arrays.sort(us);
        System.out.printf("{\"client\":\"java\",\"n\":%d,\"producers\":%d,\"connections\":%d,"
                + "\"put_rate\":%d,\"put_fail\":%d,\"put_us_p50\":%d,\"put_us_p99\":%d,"
                + "\"warmup_ms\":%d,\"warmup_puts\":%d,\"warmup_fail\":%d}%n", n,
                producers, shared ? 1 : producers,
                Math.round(n / seconds), failed.get(), us[n / 2], us[(n * 99) / 100],
                warmupMs, warm.get(), warmFailed.get());
    }
}
