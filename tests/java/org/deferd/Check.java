package org.deferd;

import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import java.util.function.Supplier;

/** Assertions and waiting on conditions with a deadline, for the Java tests. */
final class Check {
    private Check() {
    }

    static void equal(Object want, Object got, String what) {
        boolean same = want instanceof byte[] && got instanceof byte[]
                ? Arrays.equals((byte[]) want, (byte[]) got) : Objects.equals(want, got);
        if (!same) {
            throw new AssertionError(what + ": want " + show(want) + ", got " + show(got));
        }
    }

    static void isTrue(boolean cond, String what) {
        if (!cond) {
            throw new AssertionError(what);
        }
    }

    private static String show(Object o) {
        return o instanceof byte[] ? Arrays.toString((byte[]) o) : String.valueOf(o);
    }

    interface Action {
        void run() throws Exception;
    }

    /** Runs {@code action}, which must throw a {@code type}; returns it. */
    static <T extends Throwable> T raises(Class<T> type, Action action) {
        try {
            action.run();
        } catch (Throwable t) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
            throw new AssertionError("want " + type.getSimpleName() + ", got " + t, t);
        }
        throw new AssertionError("want " + type.getSimpleName() + ", nothing was thrown");
    }

    /** Polls {@code cond} until it gives something true (non-null, not false). */
    static <T> T waitFor(Supplier<T> cond, String what, Duration timeout) {
        long until = System.nanoTime() + timeout.toNanos();
        while (true) {
            T v = cond.get();
            if (v != null && !Boolean.FALSE.equals(v)) {
                return v;
            }
            if (System.nanoTime() > until) {
                throw new AssertionError("not within " + timeout.toSeconds() + " s: " + what);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                throw new AssertionError("interrupted waiting for " + what);
            }
        }
    }

    /** Every byte value, 0 .. 255, then the same backwards. */
    static byte[] allBytes() {
        byte[] b = new byte[512];
        for (int i = 0; i < 256; i++) {
            b[i] = (byte) i;
            b[511 - i] = (byte) i;
        }
        return b;
    }
}
