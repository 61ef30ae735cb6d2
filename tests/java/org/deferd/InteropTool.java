package org.deferd;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The Java side of java.interop (tests/java/test_java_interop.py):
 * {@code put QUEUE FILE...} puts each file's bytes as a job and prints its id, one a line;
 * {@code take QUEUE N DIR} takes N jobs, writes each payload to DIR/UID, acks them all and
 * waits for the replies. The socket is $DEFERD_SOCKET.
 */
public final class InteropTool {
    private InteropTool() {
    }

    public static void main(String[] args) throws Exception {
        try (Client c = Client.builder().timeout(Duration.ofSeconds(20)).connect()) {
            if (args[0].equals("put")) {
                for (int i = 2; i < args.length; i++) {
                    System.out.println(c.put(Put.to(args[1], Files.readAllBytes(Path.of(args[i])))).id());
                }
                return;
            }
            int n = Integer.parseInt(args[2]);
            c.subscribe(List.of(args[1]), n);
            for (int i = 0; i < n; i++) {
                Job job = c.nextJob(Duration.ofSeconds(20));
                if (job == null) {
                    throw new AssertionError("no job after " + i + " of " + n);
                }
                Files.write(Path.of(args[3], job.uid()), job.payload());
                job.ack();
            }
            c.flush();
        }
    }
}
