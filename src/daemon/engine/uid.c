#include "uid.h"

#include <stdio.h>
#include <sys/random.h>

int uid_init(struct uidgen *g)
{
    uint32_t rnd[2] = {0};
    if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
        return -1;
    g->prefix = rnd[0];
    g->counter = rnd[1];
    return 0;
}

/* "%08llx%08llx" of the prefix and the counter, written by hand: once a put. */
void uid_next(struct uidgen *g, char uid[LAYOUT_UID_MAX + 1])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t v = (uint64_t)(g->prefix & 0xffffffffULL) << 32 | (g->counter++ & 0xffffffffULL);
    for (int i = 15; i >= 0; i--, v >>= 4)
        uid[i] = hex[v & 0xf];
    uid[16] = '\0';
}
