/* deferd's stderr lines, and the ZooKeeper client's lines in them:
 *  - at log_level = debug the client's lines come in deferd's own format (timestamp,
 *    "deferd debug: zookeeper client: function@line: text"), not in the client's;
 *  - at the default level (info) none of the client's chatter is there;
 *  - when stderr is the journal (JOURNAL_STREAM names it) lines carry a "<N>" priority
 *    and no timestamp; log_timestamps = no drops the timestamp elsewhere too;
 *  - a loop that never runs out of work (the failpoint loop-busy: a callback that makes
 *    itself active again for ever, as the packer did in issue 38) still answers clients and
 *    drains on SIGTERM. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define STAMP "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z"

/* Lines of the log that match the extended regular expression RE. */
static int lines_matching(const struct daemon_proc *d, const char *re)
{
    regex_t rx;
    char line[4096];
    int n = 0;
    if (regcomp(&rx, re, REG_EXTENDED | REG_NOSUB) != 0)
        return -1;
    FILE *f = fopen(d->log, "r");
    while (f && fgets(line, sizeof line, f))
        n += regexec(&rx, line, 0, NULL, 0) == 0;
    if (f)
        fclose(f);
    regfree(&rx);
    return n;
}

/* A daemon up and connected to ZooKeeper (a put went through). */
static int start(struct daemon_proc *d, const char *root, const char *tag,
                 const char *const *ov)
{
    char id[DEFERD_ID_SIZE];
    if (daemon_start(d, root, tag, ov) != 0)
        return -1;
    deferd_client *c = client(d);
    int rc = put_job(c, "a", "x", -1, -1, -1, id);
    deferd_close(c);
    return rc;
}

static void client_lines_at_debug(const char *root)
{
    struct daemon_proc d;
    CHECK(start(&d, root, "debug", NULL) == 0); /* the harness's file has log_level = debug */
    CHECK(log_wait(&d, 0, "zookeeper client: ", 10000));
    CHECK(lines_matching(&d, "^" STAMP " deferd debug: zookeeper client: "
                             "zookeeper_init_internal@[0-9]+: Initiating client connection") == 1);
    CHECK(lines_matching(&d, "ZOO_(INFO|DEBUG|WARN|ERROR)@") == 0); /* its own prefix is gone */
    CHECK(lines_matching(&d, "^" STAMP " deferd info: deferd started") == 1);
    daemon_kill(&d, SIGTERM);
}

static void no_chatter_at_info(const char *root)
{
    struct daemon_proc d;
    const char *ov[] = {"daemon.log_level=info", NULL};
    CHECK(start(&d, root, "info", ov) == 0);
    CHECK(lines_matching(&d, "^" STAMP " deferd info: deferd started") == 1);
    CHECK(lines_matching(&d, "zookeeper client|Initiating client connection") == 0);
    CHECK(lines_matching(&d, " debug: ") == 0);
    daemon_kill(&d, SIGTERM);
}

/* JOURNAL_STREAM set to the log file itself: deferd takes its stderr for the journal. */
static void journal(const char *root)
{
    struct daemon_proc d;
    struct stat st;
    char dir[256], log[300], js[64];
    snprintf(dir, sizeof dir, "/tmp/deferd-it-%d-journal", (int)getpid());
    snprintf(log, sizeof log, "%s/deferd.log", dir);
    mkdir(dir, 0755);
    FILE *f = fopen(log, "a");
    CHECK(f && stat(log, &st) == 0);
    if (f)
        fclose(f);
    snprintf(js, sizeof js, "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    setenv("JOURNAL_STREAM", js, 1);
    const char *ov[] = {"daemon.log_level=info", NULL};
    CHECK(start(&d, root, "journal", ov) == 0);
    unsetenv("JOURNAL_STREAM");
    CHECK(lines_matching(&d, "^<6>info: deferd started") == 1);
    CHECK(lines_matching(&d, "^[0-9]") == 0);
    daemon_kill(&d, SIGTERM);

    const char *nostamp[] = {"daemon.log_level=info", "daemon.log_timestamps=no", NULL};
    CHECK(start(&d, root, "nostamp", nostamp) == 0);
    CHECK(lines_matching(&d, "^deferd info: deferd started") == 1);
    CHECK(lines_matching(&d, "^<") == 0);
    daemon_kill(&d, SIGTERM);
}

/* Without the loop's bound on callbacks between polls, deferd never answers PING here, and
 * never hears SIGTERM. */
static void busy_loop_drains(const char *root)
{
    struct daemon_proc d;
    setenv("DEFERD_FAILPOINT", "loop-busy", 1);
    CHECK(start(&d, root, "busy", NULL) == 0);
    unsetenv("DEFERD_FAILPOINT");
    CHECK(lines_matching(&d, "failpoint loop-busy fires") == 1);
    deferd_client *c = client(&d);
    CHECK(c && deferd_ping(c) == DEFERD_OK);
    deferd_close(c);
    kill(d.pid, SIGTERM);
    CHECK(daemon_wait_exit(&d, 10000) == 0); /* drained and exited 0 */
    if (d.pid > 0)
        daemon_kill(&d, SIGKILL);
}

int main(void)
{
    char root[128];
    harness_init("log", root, sizeof root);
    unsetenv("JOURNAL_STREAM"); /* ours, if the tests run under systemd, is not deferd's */
    client_lines_at_debug(root);
    no_chatter_at_info(root);
    journal(root);
    busy_loop_drains(root);
    return check_report("integration.log");
}
