/* Zeroed allocations for the put path's small, short-lived blocks. glibc's calloc (2.36)
 * never takes malloc's per-thread cache and goes through its slow path every time; a put
 * made five such calls (performance.md, session 32). malloc and memset take the cache. */
#ifndef DEFERD_ZALLOC_H
#define DEFERD_ZALLOC_H

#include <stdlib.h>
#include <string.h>

/* N elements of SIZE bytes, zeroed; NULL when out of memory or N * SIZE overflows. */
static inline void *zalloc(size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes))
        return NULL;
    void *p = malloc(bytes ? bytes : 1);
    if (p)
        memset(p, 0, bytes);
    return p;
}

#endif
