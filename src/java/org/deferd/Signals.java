package org.deferd;

import java.lang.reflect.Proxy;

/**
 * SIGTERM and SIGINT as calls of a Runnable, through the JDK's {@code sun.misc.Signal}
 * (module jdk.unsupported, in every OpenJDK), found by reflection so that the library
 * compiles without warnings and still loads where it is missing. Without it, a shutdown hook
 * does the same, and the JVM's exit status is then 143 rather than the worker's.
 *
 * <p>Thread-safety: call {@link #onTerminate} once, from the main thread.
 */
final class Signals {
    private Signals() {
    }

    /**
     * Calls {@code action} (on a thread of the JDK's) on each SIGTERM and SIGINT.
     *
     * @return true if signals were hooked, false if a shutdown hook stands in
     */
    static boolean onTerminate(Runnable action) {
        try {
            Class<?> signal = Class.forName("sun.misc.Signal");
            Class<?> handlerType = Class.forName("sun.misc.SignalHandler");
            Object handler = Proxy.newProxyInstance(Signals.class.getClassLoader(),
                    new Class<?>[] {handlerType}, (proxy, method, args) -> {
                        switch (method.getName()) {
                            case "handle":
                                action.run();
                                return null;
                            case "hashCode":
                                return System.identityHashCode(proxy);
                            case "equals":
                                return proxy == args[0];
                            default:
                                return "deferd worker signal handler";
                        }
                    });
            for (String name : new String[] {"TERM", "INT"}) {
                Object sig = signal.getConstructor(String.class).newInstance(name);
                signal.getMethod("handle", signal, handlerType).invoke(null, sig, handler);
            }
            return true;
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            Runtime.getRuntime().addShutdownHook(new Thread(action, "deferd-worker-stop"));
            return false;
        }
    }
}
