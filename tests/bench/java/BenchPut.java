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
 * the producer threads share one Client (it is thread-safe) instead of one each.
 * usage: java -cp deferd.jar:. BenchPut SOCKET N PRODUCERS WINDOW_MS [shared]
 */
public final class BenchPut {
    private BenchPut() {
    }

    public static void main(String[] args) throws Exception {
        String sock = args[0];
        int n = Integer.parseInt(args[1]);
        int producers = Integer.parseInt(args[2]);
        int window = Integer.parseInt(args[3]);
        boolean shared = args.length > 4 && args[4].equals("shared");
        Client one = shared ? Client.builder().socket(sock).connect() : null;
        AtomicInteger next = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        long[] us = new long[n];
        byte[] payload = new byte[64];
        Arrays.fill(payload, (byte) 'x');
        List<Thread> threads = new ArrayList<>();
        long t0 = System.nanoTime();
        for (int p = 0; p < producers; p++) {
            Thread t = new Thread(() -> {
                try (Client own = shared ? null : Client.builder().socket(sock).connect()) {
                    Client c = shared ? one : own;
                    for (int i; (i = next.getAndIncrement()) < n; ) {
                        long delay = 1000 + ThreadLocalRandom.current().nextInt(Math.max(1, window));
                        long s = System.nanoTime();
                        try {
                            c.put(Put.to("bench", payload).delay(Duration.ofMillis(delay)));
                        } catch (RuntimeException e) {
                            failed.incrementAndGet();
                        }
                        us[i] = (System.nanoTime() - s) / 1000;
                    }
                }
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        if (one != null) {
            one.close();
        }
        Arrays.sort(us);
        System.out.printf("{\"client\":\"java\",\"n\":%d,\"producers\":%d,\"connections\":%d,"
                + "\"put_rate\":%d,\"put_fail\":%d,\"put_us_p50\":%d,\"put_us_p99\":%d}%n", n,
                producers, shared ? 1 : producers,
                Math.round(n / seconds), failed.get(), us[n / 2], us[(n * 99) / 100]);
    }
}
