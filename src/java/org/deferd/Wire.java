package org.deferd;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The protocol's encoding of requests and parsing of replies and pushes (docs/protocol.md),
 * free of I/O, so that it can be tested byte for byte.
 *
 * <p>Thread-safety: stateless; every method may be called from any thread.
 */
final class Wire {
    /** One field of an ERR reply's text; the first word that is not one starts the text. */
    private static final Pattern FIELD = Pattern.compile("([a-z_]+)=([A-Za-z0-9_.,-]+)(?: |$)");

    private Wire() {
    }

    /**
     * A name or option value as one word of a header line.
     *
     * @throws IllegalArgumentException if empty or holding a space, tab, CR, LF or NUL
     */
    static String word(String what, String value) {
        if (value == null || value.isEmpty() || value.chars().anyMatch(c -> c == ' '
                || c == '\t' || c == '\r' || c == '\n' || c == 0)) {
            throw new IllegalArgumentException(what + " must be a non-empty word without spaces: "
                    + value);
        }
        return value;
    }

    static byte[] utf8(String line) {
        return line.getBytes(StandardCharsets.UTF_8);
    }

    /** The {@code key=value} fields at the front of an ERR reply's text (after its code). */
    static Map<String, String> refusalFields(String text) {
        Map<String, String> fields = new LinkedHashMap<>();
        Matcher m = FIELD.matcher(text);
        int at = 0;
        while (at < text.length()) {
            m.region(at, text.length());
            if (!m.lookingAt()) {
                break;
            }
            fields.putIfAbsent(m.group(1), m.group(2));
            at = m.end();
        }
        return fields;
    }

    /** {@code BATCH <n>} or a settle's {@code then=<n>} line's tail: the PUT requests. */
    static byte[] withPuts(String line, List<Put> puts) {
        List<byte[]> parts = new ArrayList<>(puts.size() + 1);
        parts.add(utf8(line));
        for (Put p : puts) {
            parts.add(p.encode(null));
        }
        int n = parts.stream().mapToInt(b -> b.length).sum();
        byte[] out = new byte[n];
        int at = 0;
        for (byte[] b : parts) {
            System.arraycopy(b, 0, out, at, b.length);
            at += b.length;
        }
        return out;
    }

    static byte[] batch(List<Put> puts) {
        if (puts.isEmpty()) {
            throw new IllegalArgumentException("a batch needs at least one job");
        }
        return withPuts("BATCH " + puts.size() + "\n", puts);
    }

    /**
     * {@code FLOW <n> on=<on>}, the parent's {@code PUT}, then the children's
     * (docs/flows.md).
     *
     * @throws IllegalArgumentException no child, {@code on} neither {@code "success"} nor
     *     {@code "complete"}, or a job with a key or a put token (a flow's jobs take neither)
     */
    static byte[] flow(Put parent, List<Put> children, String on) {
        if (!"success".equals(on) && !"complete".equals(on)) {
            throw new IllegalArgumentException("on is \"success\" or \"complete\": " + on);
        }
        if (children.isEmpty()) {
            throw new IllegalArgumentException("a flow has at least one child");
        }
        List<Put> jobs = new ArrayList<>(children.size() + 1);
        jobs.add(parent);
        jobs.addAll(children);
        for (Put p : jobs) {
            if (p.key() != null || p.idem() != null) {
                throw new IllegalArgumentException("a flow's jobs take no key or idem");
            }
        }
        return withPuts("FLOW " + jobs.size() + " on=" + on + "\n", jobs);
    }

    /**
     * {@code ACK <id> then=<n> join=1} and the follow-ups' {@code PUT}s, which join the
     * job's flow (docs/protocol.md, Follow-up jobs).
     *
     * @throws IllegalArgumentException no follow-up, or one with a key
     */
    static String ackJoinLine(String jobId, List<Put> followUps) {
        if (followUps.isEmpty()) {
            throw new IllegalArgumentException("join needs at least one follow-up");
        }
        for (Put p : followUps) {
            if (p.key() != null) {
                throw new IllegalArgumentException("follow-ups that join a flow take no key");
            }
        }
        return "ACK " + jobId + " then=" + followUps.size() + " join=1\n";
    }

    /** The header of a {@code JOB} push; {@code length} payload bytes and a newline follow. */
    record JobHeader(String id, String queue, int attempt, long dueMs, long priority, long ttrMs,
                     int length, String uid) {
    }

    /**
     * Parses {@code JOB <id> <queue> <attempt> <due ms> <prio> <ttr ms> <length> [key=value
     * ...]}; of the keys, {@code uid} is kept and unknown ones skipped. By hand, not with
     * split and a regular expression: it runs for every job a consumer gets.
     */
    static JobHeader jobHeader(String line) {
        String[] w = new String[8];
        int at = 0;
        for (int i = 0; i < 8; i++) {
            int sp = line.indexOf(' ', at);
            int end = i < 7 ? sp : sp < 0 ? line.length() : sp;
            if (end < 0) {
                throw new ProtocolException("bad JOB push: " + line);
            }
            w[i] = line.substring(at, end);
            at = end + 1;
        }
        if (!w[0].equals("JOB")) {
            throw new ProtocolException("bad JOB push: " + line);
        }
        String uid = null;
        for (int i = at; i < line.length(); ) {
            int sp = line.indexOf(' ', i);
            String word = line.substring(i, sp < 0 ? line.length() : sp);
            if (word.indexOf('=') < 1) {
                throw new ProtocolException("bad JOB push: " + line);
            }
            if (word.startsWith("uid=")) {
                uid = word.substring(4);
            }
            i = sp < 0 ? line.length() : sp + 1;
        }
        try {
            return new JobHeader(w[1], w[2], Integer.parseInt(w[3]), Long.parseLong(w[4]),
                    Long.parseLong(w[5]), Long.parseLong(w[6]), Integer.parseInt(w[7]),
                    uid != null ? uid : jobUid(w[1]));
        } catch (NumberFormatException e) {
            throw new ProtocolException("bad number in JOB push: " + line);
        }
    }

    /**
     * The stable uid in a job id of deferd's own format: its name's third field
     * ({@code <due ms>-<prio>-<uid>[-...]}, 1-32 of {@code [0-9a-z]}), or null (a Curator
     * format queue's item has none).
     */
    static String jobUid(String jobId) {
        String name = jobId.substring(jobId.lastIndexOf('/') + 1);
        int a = digitsThenDash(name, 0);
        int b = a < 0 ? -1 : digitsThenDash(name, a);
        if (b < 0) {
            return null;
        }
        int end = b;
        while (end < name.length() && end - b < 33 && isUidChar(name.charAt(end))) {
            end++;
        }
        boolean ends = end == name.length() || name.charAt(end) == '-';
        return ends && end > b && end - b <= 32 ? name.substring(b, end) : null;
    }

    /** After one or more digits from {@code from} and a dash: the index after it, or -1. */
    private static int digitsThenDash(String s, int from) {
        int i = from;
        while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
            i++;
        }
        return i > from && i < s.length() && s.charAt(i) == '-' ? i + 1 : -1;
    }

    private static boolean isUidChar(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
    }

    /** The group in a job id (its name's {@code -g} field, {@code ~} for {@code -}), or "". */
    static String jobGroup(String jobId) {
        String[] f = jobId.substring(jobId.lastIndexOf('/') + 1).split("-");
        for (int i = 3; i < f.length; i++) {
            if (f[i].startsWith("k")) {
                break; // the key is last and may hold dashes
            }
            if (f[i].startsWith("g")) {
                return f[i].substring(1).replace('~', '-');
            }
        }
        return "";
    }

    private static final java.util.regex.Pattern RESULTS =
            java.util.regex.Pattern.compile("r(0|[1-9][0-9]{0,9})\\.(0|[1-9][0-9]{0,9})");

    /** A released on=complete parent's "-r&lt;acked&gt;.&lt;dead&gt;" field, null for none. */
    static FlowResults jobFlowResults(String jobId) {
        String[] f = jobId.substring(jobId.lastIndexOf('/') + 1).split("-");
        for (int i = 3; i < f.length && !f[i].startsWith("k"); i++) { // the key is last
            java.util.regex.Matcher m = RESULTS.matcher(f[i]);
            if (m.matches()) {
                long acked = Long.parseLong(m.group(1));
                long dead = Long.parseLong(m.group(2));
                return acked <= 0xffffffffL && dead <= 0xffffffffL
                        ? new FlowResults(acked, dead) : null;
            }
        }
        return null;
    }

    static PutResult putReply(String rest) {
        String[] w = rest.strip().split(" ");
        if (w[0].isEmpty()) {
            throw new ProtocolException("no job id in the reply to PUT");
        }
        return new PutResult(w[0], w.length > 1 && w[1].equals("duplicate"));
    }

    /** {@code OK [<moved id>] n=<n> [parts=<k>] ids=<ids> dup=<positions>}. */
    static BatchResult batchReply(String rest) {
        String[] words = rest.strip().split(" ");
        String moved = words.length > 0 && !words[0].isEmpty() && !words[0].contains("=")
                ? words[0] : null;
        Map<String, String> f = okFields(rest);
        String ids = f.getOrDefault("ids", "-");
        List<String> idList = ids.equals("-") ? List.of() : List.of(ids.split(","));
        Set<Integer> dups = new HashSet<>();
        for (String p : f.getOrDefault("dup", "-").split(",")) {
            if (!p.isEmpty() && p.chars().allMatch(Character::isDigit)) {
                dups.add(Integer.parseInt(p));
            }
        }
        if (f.containsKey("n") && Integer.parseInt(f.get("n")) != idList.size()) {
            throw new ProtocolException("n= and ids= disagree: " + rest);
        }
        List<PutResult> results = new ArrayList<>(idList.size());
        for (int i = 0; i < idList.size(); i++) {
            results.add(new PutResult(idList.get(i), dups.contains(i + 1)));
        }
        return new BatchResult(results, Integer.parseInt(f.getOrDefault("parts", "1")), moved);
    }

    /** The {@code key=value} words of an OK reply, in order. */
    static Map<String, String> okFields(String rest) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String w : rest.strip().split(" ")) {
            int eq = w.indexOf('=');
            if (eq > 0) {
                out.put(w.substring(0, eq), w.substring(eq + 1));
            }
        }
        return out;
    }

    /** The first word of an OK reply (a job id), or null for a bare {@code OK}. */
    static String optionalId(String rest) {
        String r = rest.strip();
        return r.isEmpty() ? null : r.split(" ")[0];
    }

    /** A nack's new id; null when it kept its id or went to the dead letters ({@code dead=}). */
    static String nackReply(String rest) {
        String id = optionalId(rest);
        return id == null || id.startsWith("dead=") ? null : id;
    }

    /**
     * The event of a one-line push ({@code DEADLINE}, {@code EXPIRED}, {@code CANCELLED},
     * {@code STATE}); one this client does not know, or of another shape, is
     * {@link Event.Unknown}. {@code held} finds the job an id names (null if none).
     */
    static Event event(String line, java.util.function.Function<String, Job> held) {
        String[] w = line.split(" ");
        switch (w[0]) {
            case "DEADLINE":
                if (w.length == 3 && !w[2].isEmpty() && w[2].chars().allMatch(Character::isDigit)) {
                    return new Event.Deadline(w[1], Long.parseLong(w[2]), held.apply(w[1]));
                }
                break;
            case "EXPIRED":
                if (w.length == 2) {
                    return new Event.Expired(w[1], held.apply(w[1]));
                }
                break;
            case "CANCELLED":
                if (w.length == 2) {
                    return new Event.Cancelled(w[1], held.apply(w[1]));
                }
                break;
            case "STATE":
                if (w.length == 2) {
                    return new Event.State(w[1]);
                }
                break;
            default:
                break;
        }
        return new Event.Unknown(line);
    }

    static Void empty(String rest) {
        return null;
    }

    static Void pong(String rest) {
        if (!rest.strip().equals("PONG")) {
            throw new ProtocolException("not PONG: " + rest);
        }
        return null;
    }
}
