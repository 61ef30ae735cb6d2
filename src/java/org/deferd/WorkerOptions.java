package org.deferd;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The settings of a {@link Worker}, from its command line or built in code.
 *
 * <p>Thread-safety: immutable.
 *
 * @param queues the queues to consume
 * @param concurrency handler calls at once (threads)
 * @param inflight jobs the daemon may push ahead, at least {@code concurrency}
 * @param socket the daemon's socket, or null for {@code $DEFERD_SOCKET}, else the default
 * @param maxJobs leave after starting this many jobs (0: never)
 * @param drainTimeout how long leaving waits for running handlers before giving up on them
 * @param reconnect how long to keep trying to connect again after the connection broke (zero:
 *     exit at once)
 * @param verbose also a line per lease renewal
 * @param handlerClass the handler's class name (command line only), or null
 */
public record WorkerOptions(List<String> queues, int concurrency, int inflight, String socket,
                            int maxJobs, Duration drainTimeout, Duration reconnect,
                            boolean verbose, String handlerClass) {
    /** The command line's usage line. */
    public static final String USAGE = "usage: java -cp deferd.jar:YOUR.jar org.deferd.Worker"
            + " --queue Q[,Q2] [--concurrency N] [--inflight M] [--socket PATH] [--max-jobs K]"
            + " [--drain-timeout SECONDS] [--reconnect SECONDS] [--verbose] HANDLER_CLASS";

    /**
     * Checks the settings.
     *
     * @param queues the queues to consume
     * @param concurrency handler calls at once (threads)
     * @param inflight jobs the daemon may push ahead, at least {@code concurrency}
     * @param socket the daemon's socket, or null
     * @param maxJobs leave after starting this many jobs (0: never)
     * @param drainTimeout how long leaving waits for running handlers
     * @param reconnect how long to keep trying to connect again (zero: never)
     * @param verbose also a line per lease renewal
     * @param handlerClass the handler's class name, or null
     */
    public WorkerOptions {
        queues = List.copyOf(queues);
        if (queues.isEmpty()) {
            throw new IllegalArgumentException("--queue names no queue");
        }
        if (concurrency < 1) {
            throw new IllegalArgumentException("--concurrency must be at least 1");
        }
        if (inflight < concurrency) {
            throw new IllegalArgumentException("--inflight " + inflight + " is below --concurrency "
                    + concurrency);
        }
    }

    /**
     * The usual settings: {@code inflight} twice the concurrency, a drain timeout of 30 s, 30 s
     * of trying to connect again.
     *
     * @param queues the queues to consume
     * @param concurrency handler calls at once
     * @return the options
     */
    public static WorkerOptions of(List<String> queues, int concurrency) {
        return new WorkerOptions(queues, concurrency, 2 * concurrency, null, 0,
                Duration.ofSeconds(30), Duration.ofSeconds(30), false, null);
    }

    /**
     * Parses the command line.
     *
     * @param args the arguments
     * @return the options
     * @throws IllegalArgumentException saying what is wrong
     */
    public static WorkerOptions parse(String[] args) {
        List<String> queues = new ArrayList<>();
        int concurrency = 1;
        int inflight = -1;
        String socket = null;
        int maxJobs = 0;
        Duration drain = Duration.ofSeconds(30);
        Duration reconnect = Duration.ofSeconds(30);
        boolean verbose = false;
        String handler = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "-q", "--queue" -> {
                    for (String q : value(args, ++i, a).split(",")) {
                        if (!q.isEmpty()) {
                            queues.add(q);
                        }
                    }
                }
                case "-c", "--concurrency" -> concurrency = positive(value(args, ++i, a), a);
                case "--inflight" -> inflight = positive(value(args, ++i, a), a);
                case "-s", "--socket" -> socket = value(args, ++i, a);
                case "--max-jobs" -> maxJobs = positive(value(args, ++i, a), a);
                case "--drain-timeout" -> drain = seconds(value(args, ++i, a), a);
                case "--reconnect" -> reconnect = seconds(value(args, ++i, a), a);
                case "-v", "--verbose" -> verbose = true;
                default -> {
                    if (a.startsWith("-") || handler != null) {
                        throw new IllegalArgumentException("unexpected argument: " + a);
                    }
                    handler = a;
                }
            }
        }
        if (handler == null) {
            throw new IllegalArgumentException("no HANDLER_CLASS given");
        }
        return new WorkerOptions(queues, concurrency, inflight < 0 ? 2 * concurrency : inflight,
                socket, maxJobs, drain, reconnect, verbose, handler);
    }

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args[i];
    }

    private static Duration seconds(String text, String option) {
        try {
            double s = Double.parseDouble(text);
            if (s >= 0 && s < 1e9) {
                return Duration.ofMillis(Math.round(s * 1000));
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new IllegalArgumentException(option + " must be a number of seconds: " + text);
    }

    private static int positive(String text, String option) {
        try {
            int v = Integer.parseInt(text);
            if (v >= 1) {
                return v;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new IllegalArgumentException(option + " must be a whole number of at least 1: " + text);
    }

    /**
     * Loads and makes the handler: a public class implementing {@link Handler} with a public
     * constructor without arguments, found on the class path.
     *
     * @param name the class's binary name, e.g. {@code com.example.SendEmail}
     * @return a new instance
     * @throws IllegalArgumentException saying what is wrong
     */
    static Handler loadHandler(String name) {
        Class<?> cls;
        try {
            cls = Class.forName(name, true, Thread.currentThread().getContextClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            throw new IllegalArgumentException("cannot load handler class " + name + ": " + e
                    + " (is its jar on -cp?)");
        }
        if (!Handler.class.isAssignableFrom(cls)) {
            throw new IllegalArgumentException(name + " does not implement " + Handler.class.getName());
        }
        try {
            return (Handler) cls.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException | RuntimeException e) {
            Throwable why = e.getCause() != null ? e.getCause() : e;
            throw new IllegalArgumentException("cannot make a " + name + " (a public constructor"
                    + " without arguments is needed): " + why);
        }
    }
}
