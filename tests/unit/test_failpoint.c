/* The test-only failpoint switch (src/common/failpoint.c). It reads DEFERD_FAILPOINT once
 * per process, so each value is tried in a child of its own. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "failpoint.h"

#define FP "unpack-before-multi"

/* In a child with DEFERD_FAILPOINT = VALUE (unset when NULL): which of the first four hits
 * of FP fire, as a bit mask (bit 0: the first); a hit of another name must never fire. */
static int fired(const char *value)
{
    pid_t pid = fork();
    if (pid == 0) {
        int mask = 0;
        if (value)
            setenv("DEFERD_FAILPOINT", value, 1);
        else
            unsetenv("DEFERD_FAILPOINT");
        for (int i = 0; i < 4; i++) {
            if (failpoint_hit("unpack-before"))
                _exit(100);
            mask |= failpoint_hit(FP) << i;
        }
        _exit(mask);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(void)
{
    CHECK(fired(NULL) == 0);
    CHECK(fired("") == 0);
    CHECK(fired(FP) == 0xf); /* every hit */
    CHECK(fired(FP ":1") == 0x1); /* only the Nth */
    CHECK(fired(FP ":2") == 0x2);
    CHECK(fired(FP ":5") == 0);
    CHECK(fired("other-place") == 0);
    CHECK(fired(FP ":0") == 0); /* malformed: nothing armed */
    CHECK(fired(FP ":x") == 0);
    CHECK(fired(FP ":") == 0);
    CHECK(fired(":2") == 0);
    return check_report("failpoint");
}
