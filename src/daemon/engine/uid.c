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

void uid_next(struct uidgen *g, char uid[LAYOUT_UID_MAX + 1])
{
    snprintf(uid, LAYOUT_UID_MAX + 1, "%08llx%08llx", (unsigned long long)g->prefix,
             (unsigned long long)(g->counter++ & 0xffffffffULL));
}
