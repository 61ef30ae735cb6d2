/* Minimal assertion helpers for every test program (unit, integration): count failures,
 * print where. */
#ifndef DEFERD_TEST_CHECK_H
#define DEFERD_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

/* One pair for the whole test program, not one per file: the integration harness is a
 * library of its own, and its failures (a daemon that did not exit cleanly on SIGTERM, a
 * valgrind report) must count in the test's check_report(). Weak, so that every file that
 * includes this may define them and the linker keeps one. */
__attribute__((weak)) int check_failures;
__attribute__((weak)) int check_count;
/* 1 once check_report() found no failure: the program passed (an early return or exit
 * without the report is a failure too; the integration harness cleans up only after one). */
__attribute__((weak)) int check_passed;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        check_count++;                                                              \
        if (!(cond)) {                                                              \
            check_failures++;                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
        }                                                                           \
    } while (0)

#define CHECK_STR(a, b)                                                             \
    do {                                                                            \
        check_count++;                                                              \
        if (strcmp((a), (b)) != 0) {                                                \
            check_failures++;                                                       \
            fprintf(stderr, "%s:%d: '%s' != '%s'\n", __FILE__, __LINE__, (a), (b));  \
        }                                                                           \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                                 \
    do {                                                                            \
        check_count++;                                                              \
        if (!strstr((hay), (needle))) {                                             \
            check_failures++;                                                       \
            fprintf(stderr, "%s:%d: '%s' does not contain '%s'\n", __FILE__, __LINE__, \
                    (hay), (needle));                                               \
        }                                                                           \
    } while (0)

/* Bytes from hex digits ("0a1b..."), for tests of byte formats; returns how many. */
static inline size_t unhex(const char *hex, unsigned char *out)
{
    size_t n = 0;
    for (; hex[0] && hex[1]; hex += 2) {
        unsigned v;
        sscanf(hex, "%2x", &v);
        out[n++] = (unsigned char)v;
    }
    return n;
}

static inline int check_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    check_passed = !check_failures;
    return check_failures ? 1 : 0;
}

#endif
