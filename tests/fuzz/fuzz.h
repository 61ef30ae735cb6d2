/* Shared by the libFuzzer harnesses: the entry point and CHECK, which abort()s on a failed
 * check, so that libFuzzer reports it as a crash and saves the input. */
#ifndef DEFERD_FUZZ_H
#define DEFERD_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                              \
    do {                                                                                      \
        if (!(c)) {                                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);             \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

#endif
