package org.deferd;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.Comparator;

/**
 * The Java tests' runner (no JUnit: Debian 12 has JUnit 4 only, and this is all it takes):
 * {@code java org.deferd.TestRunner CLASS [METHOD...]} calls each public method whose name
 * starts with {@code test} (or the ones named) on a new instance, in name order, prints
 * {@code ok} or the failure with its stack, and exits 1 if any failed.
 */
public final class TestRunner {
    private TestRunner() {
    }

    public static void main(String[] args) throws Exception {
        Class<?> cls = Class.forName(args[0]);
        Method[] methods = cls.getMethods();
        Arrays.sort(methods, Comparator.comparing(Method::getName));
        int run = 0;
        int failed = 0;
        for (Method m : methods) {
            boolean named = args.length > 1 && Arrays.asList(args).subList(1, args.length)
                    .contains(m.getName());
            if (!(args.length > 1 ? named : m.getName().startsWith("test"))
                    || Modifier.isStatic(m.getModifiers()) || m.getParameterCount() != 0) {
                continue;
            }
            run++;
            long t0 = System.nanoTime();
            try {
                m.invoke(cls.getDeclaredConstructor().newInstance());
                System.out.printf("%s.%s ... ok (%.2f s)%n", cls.getSimpleName(), m.getName(),
                        (System.nanoTime() - t0) / 1e9);
            } catch (InvocationTargetException e) {
                failed++;
                System.out.printf("%s.%s ... FAIL (%.2f s)%n", cls.getSimpleName(), m.getName(),
                        (System.nanoTime() - t0) / 1e9);
                e.getCause().printStackTrace(System.out);
            }
        }
        System.out.printf("%d tests, %d failed%n", run, failed);
        System.exit(failed == 0 && run > 0 ? 0 : 1);
    }
}
