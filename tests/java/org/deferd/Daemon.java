package org.deferd;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** What the Java tests know of the deferd run_java_test.py started for them. */
final class Daemon {
    private Daemon() {
    }

    /** A new connection with a 20 s reply timeout. */
    static Client client() {
        return Client.builder().timeout(Duration.ofSeconds(20)).connect();
    }

    /** The ids of the queue's jobs in ZooKeeper ({@code deferctl list --json}). */
    static List<String> jobsInZooKeeper(String queue) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(System.getenv("DEFERCTL_BIN"), "-c",
                System.getenv("DEFERD_TEST_CONFIG"), "list", queue, "--json", "--limit", "10000")
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new AssertionError("deferctl list " + queue + " failed");
        }
        List<String> ids = new ArrayList<>();
        Matcher m = Pattern.compile("\"id\": ?\"([^\"]+)\"").matcher(out);
        while (m.find()) {
            ids.add(m.group(1));
        }
        return ids;
    }
}
