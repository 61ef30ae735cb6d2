/* The process_* families every Prometheus client library exports (their names and units
 * are the convention dashboards and alerts expect), read from /proc/self when scraped. */
#include <dirent.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "metrics_int.h"

struct proc_stat {
    double cpu_s, start_s;
    unsigned long long vsize, rss_pages;
};

/* /proc/self/stat after the command's ")" (it may hold spaces and parentheses), and
 * /proc/stat's btime for the start time. */
static int read_stat(struct proc_stat *ps)
{
    char buf[1024], line[256];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    unsigned long long utime, stime, start;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d "
                            "%*d %*d %*d %*d %llu %llu %llu", &utime, &stime, &start,
                     &ps->vsize, &ps->rss_pages) != 5)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    unsigned long long btime = 0;
    f = fopen("/proc/stat", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "btime %llu", &btime) == 1)
            break;
    if (f)
        fclose(f);
    ps->cpu_s = (double)(utime + stime) / (double)(hz > 0 ? hz : 100);
    ps->start_s = (double)btime + (double)start / (double)(hz > 0 ? hz : 100);
    return 0;
}

static long open_fds(void)
{
    DIR *dir = opendir("/proc/self/fd");
    long n = 0;
    if (!dir)
        return -1;
    for (struct dirent *e; (e = readdir(dir));)
        n += e->d_name[0] != '.';
    closedir(dir);
    return n - 1; /* the directory's own descriptor */
}

void metrics_process_out(struct evbuffer *out)
{
    struct proc_stat ps;
    struct rlimit rl;
    long fds = open_fds();
    if (read_stat(&ps) == 0) {
        metrics_family(out, "process_cpu_seconds_total", "counter",
                       "Total user and system CPU time spent in seconds.");
        evbuffer_add_printf(out, "process_cpu_seconds_total %.2f\n", ps.cpu_s);
        metrics_family(out, "process_resident_memory_bytes", "gauge",
                       "Resident memory size in bytes.");
        evbuffer_add_printf(out, "process_resident_memory_bytes %llu\n",
                            ps.rss_pages * (unsigned long long)sysconf(_SC_PAGESIZE));
        metrics_family(out, "process_virtual_memory_bytes", "gauge",
                       "Virtual memory size in bytes.");
        evbuffer_add_printf(out, "process_virtual_memory_bytes %llu\n", ps.vsize);
        metrics_family(out, "process_start_time_seconds", "gauge",
                       "Start time of the process since unix epoch in seconds.");
        evbuffer_add_printf(out, "process_start_time_seconds %.2f\n", ps.start_s);
    }
    if (fds >= 0) {
        metrics_family(out, "process_open_fds", "gauge", "Number of open file descriptors.");
        evbuffer_add_printf(out, "process_open_fds %ld\n", fds);
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        metrics_family(out, "process_max_fds", "gauge",
                       "Maximum number of open file descriptors.");
        evbuffer_add_printf(out, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
    }
}
