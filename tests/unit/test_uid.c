/* Job uids (src/daemon/engine/uid.c): 16 lowercase hex digits, the run's prefix then the
 * counter, as "%08llx%08llx" wrote them (the hand-written form must not change a name);
 * the counter wraps within its 32 bits. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "layout.h"
#include "uid.h"

int main(void)
{
    struct uidgen g;
    char uid[LAYOUT_UID_MAX + 1], want[64];
    CHECK(uid_init(&g) == 0 && g.prefix <= 0xffffffffULL && g.counter <= 0xffffffffULL);
    const uint64_t prefixes[] = {0, 1, 0xabcdef, 0x80000000ULL, 0xffffffffULL};
    const uint64_t counters[] = {0, 9, 0x10, 0x7fffffffULL, 0xfffffffeULL};
    for (size_t p = 0; p < sizeof prefixes / sizeof *prefixes; p++)
        for (size_t c = 0; c < sizeof counters / sizeof *counters; c++) {
            g.prefix = prefixes[p];
            g.counter = counters[c];
            for (int k = 0; k < 3; k++) { /* 0xfffffffe, 0xffffffff, then 0 */
                snprintf(want, sizeof want, "%08llx%08llx", (unsigned long long)g.prefix,
                         (unsigned long long)(g.counter & 0xffffffffULL));
                uid_next(&g, uid);
                CHECK_STR(uid, want);
                CHECK(layout_valid_uid(uid));
            }
        }
    return check_report("uid");
}
