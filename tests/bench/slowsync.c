/* A slow disk on demand (issue 43), for ZooKeeper only: an LD_PRELOAD library whose fsync and
 * fdatasync do the real call, then sleep SLOWSYNC_US microseconds (default 0: no change).
 * ZooKeeper fsyncs its transaction log once per group of requests (SyncRequestProcessor), so
 * this stands for a device whose every flush takes that long, as the slow days of this
 * machine's disk did (docs/performance.md, issue 43). packaging/zk-sandbox loads it with
 * ZK_SLOW_FSYNC_US=N (built by tests/bench/issue43, or: cc -O2 -shared -fPIC -o slowsync.so
 * slowsync.c -ldl). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long delay_us = -1;

static void slow(void)
{
    if (delay_us < 0) {
        const char *e = getenv("SLOWSYNC_US");
        delay_us = e ? atol(e) : 0;
    }
    if (delay_us > 0) {
        struct timespec ts = {delay_us / 1000000, (delay_us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
}

int fsync(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    int rc = real(fd);
    slow();
    return rc;
}

int fdatasync(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    int rc = real(fd);
    slow();
    return rc;
}
