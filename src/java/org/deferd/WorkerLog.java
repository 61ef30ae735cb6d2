package org.deferd;

import java.io.PrintStream;
import java.time.Instant;
import java.time.temporal.ChronoUnit;

/**
 * The worker's log: one line per event on standard error, {@code key=value} pairs with
 * {@code ts}, {@code level} and {@code event} first, as the Python worker writes them.
 *
 * <p>Thread-safety: thread-safe (a line is written whole).
 */
final class WorkerLog {
    private final PrintStream out;

    WorkerLog(PrintStream out) {
        this.out = out;
    }

    /** Logs {@code event} with {@code fields} given as key, value, key, value... (null skipped). */
    void log(String level, String event, Object... fields) {
        StringBuilder b = new StringBuilder(160).append("ts=")
                .append(Instant.now().truncatedTo(ChronoUnit.MILLIS)).append(" level=")
                .append(level).append(" event=").append(event);
        for (int i = 0; i + 1 < fields.length; i += 2) {
            if (fields[i + 1] != null) {
                b.append(' ').append(fields[i]).append('=').append(quote(String.valueOf(fields[i + 1])));
            }
        }
        synchronized (out) {
            out.println(b);
            out.flush();
        }
    }

    /** A value as one word: as it is when plain, else in double quotes with escapes. */
    static String quote(String v) {
        boolean plain = !v.isEmpty() && v.chars().allMatch(c -> c > ' ' && c < 127 && c != '"'
                && c != '=');
        if (plain) {
            return v;
        }
        StringBuilder b = new StringBuilder(v.length() + 2).append('"');
        for (char c : v.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < ' ') {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
