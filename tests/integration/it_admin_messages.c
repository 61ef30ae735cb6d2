/* deferctl as an operator reads it (issue 17): every message starts "deferctl: ", help
 * works everywhere, malformed ids are usage errors (2), missing dead jobs are "no such
 * job" (3), dead list always prints its header, unknown queues are refused alike, one time
 * syntax, list's next-page hint runs as printed, stats explains txn.* and shows why a queue
 * is paused, show words times and the holder, and --timeout gives up on an unreachable
 * ZooKeeper in time, having said what it waits for. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct daemon_proc d;
static char root[128];

#define GOOD_ID "emails/1763769605123-10-5f1e0c2a9b3d4e01"

/* Runs deferctl with D's config and socket and ARGS: its exit status, stdout in OUT,
 * stderr in ERR. */
static int ctl(const char *args, char *out, size_t olen, char *err, size_t elen)
{
    char cmd[2048], file[400];
    snprintf(file, sizeof file, "%s/ctl.stderr", d.dir);
    snprintf(cmd, sizeof cmd, "%s 2>%s", args, file);
    int rc = run_deferctl(&d, cmd, out, olen);
    FILE *f = fopen(file, "r");
    size_t n = f ? fread(err, 1, elen - 1, f) : 0;
    err[n] = '\0';
    if (f)
        fclose(f);
    return rc;
}

/* getopt's errors, global and per command, start "deferctl: " like every other message. */
static void getopt_prefix(void)
{
    char out[4096], err[4096];
    CHECK(ctl("--bogus list emails", out, sizeof out, err, sizeof err) == 2);
    CHECK(strncmp(err, "deferctl: unrecognized option", 29) == 0);
    CHECK(ctl("list --bogus emails", out, sizeof out, err, sizeof err) == 2);
    CHECK(strncmp(err, "deferctl: list: unrecognized option", 35) == 0);
    CHECK(ctl("put -z", out, sizeof out, err, sizeof err) == 2);
    CHECK(strncmp(err, "deferctl: put: invalid option", 29) == 0);
    CHECK(ctl("dead show -x " GOOD_ID, out, sizeof out, err, sizeof err) == 2);
    CHECK(strncmp(err, "deferctl: dead show: invalid option", 35) == 0);
}

/* help help, and dead SUB --help without reading any config. */
static void help_everywhere(void)
{
    char out[4096], err[4096];
    CHECK(ctl("help help", out, sizeof out, err, sizeof err) == 0);
    CHECK_CONTAINS(out, "Usage: deferctl help [COMMAND]");
    const char *subs[] = {"list emails --help", "show --help", "kick -h", "delete --help"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        char args[200];
        snprintf(args, sizeof args, "-c /nonexistent/deferd.ini dead %s", subs[i]);
        CHECK(ctl(args, out, sizeof out, err, sizeof err) == 0);
        CHECK_CONTAINS(out, "Usage: deferctl [-c CONFIG] dead list QUEUE");
    }
}

/* Malformed ids: exit 2 and "not a valid job id", before ZooKeeper is asked. */
static void bad_ids(void)
{
    char out[4096], err[4096];
    const char *cmds[] = {"show bogus", "cancel bogus", "reschedule bogus --at now",
                          "dead show bogus", "dead kick emails/x", "dead delete bogus"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        CHECK(ctl(cmds[i], out, sizeof out, err, sizeof err) == 2);
        CHECK_CONTAINS(err, "is not a valid job id");
    }
}

/* A dead job that is not there reads like show's "no job", exit 3; dead list's header is
 * always there; an unconfigured queue is refused by dead list as by list. */
static void dead_letters(void)
{
    char out[4096], err[4096];
    CHECK(ctl("dead delete " GOOD_ID, out, sizeof out, err, sizeof err) == 3);
    CHECK_CONTAINS(err, "deferctl: no dead job " GOOD_ID);
    CHECK(strstr(err, "no node") == NULL && strstr(err, "/queues/") == NULL);
    CHECK(ctl("dead show " GOOD_ID, out, sizeof out, err, sizeof err) == 3);
    CHECK(ctl("dead kick " GOOD_ID, out, sizeof out, err, sizeof err) == 3);
    CHECK(ctl("dead list emails", out, sizeof out, err, sizeof err) == 0);
    CHECK(strncmp(out, "ID\tATTEMPTS\tPRIORITY\tDUE\tBYTES\n", 31) == 0);
    char list_err[4096];
    CHECK(ctl("list nosuch", out, sizeof out, list_err, sizeof list_err) == 1);
    CHECK(ctl("dead list nosuch", out, sizeof out, err, sizeof err) == 1);
    CHECK_CONTAINS(list_err, "deferctl: no queue 'nosuch' in ");
    CHECK_STR(err, list_err);
    CHECK(ctl("dead show nosuch/1763769605123-10-5f1e0c2a9b3d4e01", out, sizeof out, err,
              sizeof err) == 1);
    CHECK_STR(err, list_err);
}

/* put --at takes the same times as reschedule --at. */
static void one_time_syntax(void)
{
    char out[4096], err[4096];
    unsigned long long due = 0;
    int64_t t0 = now_ms();
    CHECK(ctl("put -q b --at now+5m x", out, sizeof out, err, sizeof err) == 0);
    CHECK(sscanf(out, "b/%llu-", &due) == 1);
    CHECK(due >= (unsigned long long)t0 + 300000 && due <= (unsigned long long)now_ms() + 300000);
    CHECK(ctl("put -q b --at 2026-11-23T10:00:05Z x", out, sizeof out, err, sizeof err) == 0);
    CHECK(strncmp(out, "b/1795428005000-", 16) == 0);
    CHECK(ctl("put -q b --at soon x", out, sizeof out, err, sizeof err) == 2);
    CHECK_CONTAINS(err, "now+5m");
}

/* The next-page line, run as printed, gives the next page of the same window. */
static void list_hint_runs(deferd_client *c)
{
    char ids[3][DEFERD_ID_SIZE], late[DEFERD_ID_SIZE], out[8192], err[4096], cmd[2048];
    int64_t base = now_ms() + 3600000;
    for (int i = 0; i < 3; i++)
        CHECK(put_job(c, "emails", "h", -1, base + i * 1000, 5, ids[i]) == 0);
    CHECK(put_job(c, "emails", "late", -1, base + 86400000, 5, late) == 0);
    CHECK(ctl("list emails --limit 2 --from now+30m --until now+2h", out, sizeof out, err,
              sizeof err) == 0);
    const char *hint = strstr(err, "more jobs follow: deferctl ");
    CHECK(hint != NULL);
    if (!hint)
        return;
    hint += strlen("more jobs follow: deferctl ");
    snprintf(cmd, sizeof cmd, "%s %.*s", getenv("DEFERCTL_BIN"), (int)strcspn(hint, "\n"), hint);
    CHECK_CONTAINS(cmd, " --limit 2");
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    CHECK(p && pclose(p) == 0);
    CHECK(strstr(out, ids[2]) && !strstr(out, ids[0]) && !strstr(out, ids[1]));
    CHECK(strstr(out, late) == NULL); /* --until held */
}

static int daemon_says_paused(void)
{
    deferd_client *c = client(&d);
    char buf[4096] = "";
    int yes = c && deferd_stats(c, buf, sizeof buf) == DEFERD_OK && strstr(buf, "paused.a=1");
    deferd_close(c);
    return yes;
}

/* stats: txn.* with a legend and as numbers in JSON; a paused queue's reason. */
static void stats_explained(void)
{
    char out[8192], err[4096];
    CHECK(ctl("stats", out, sizeof out, err, sizeof err) == 0);
    CHECK_CONTAINS(out, "(items/multis");
    CHECK(ctl("stats --json", out, sizeof out, err, sizeof err) == 0);
    CHECK_CONTAINS(out, "\"txn.puts\":{\"items\":");
    CHECK(strstr(out, "\"multis\":") != NULL);
    CHECK(ctl("pause a --reason it-messages-reason", out, sizeof out, err, sizeof err) == 0);
    int64_t deadline = now_ms() + 10000;
    while (!daemon_says_paused() && now_ms() < deadline)
        usleep(20000);
    CHECK(ctl("stats a", out, sizeof out, err, sizeof err) == 0);
    CHECK_CONTAINS(out, "paused_info");
    CHECK_CONTAINS(out, "it-messages-reason");
    CHECK(ctl("stats", out, sizeof out, err, sizeof err) == 0);
    CHECK_CONTAINS(out, "paused_info.a");
    CHECK_CONTAINS(out, "it-messages-reason");
    CHECK(ctl("stats --json a", out, sizeof out, err, sizeof err) == 0);
    CHECK_CONTAINS(out, "\"paused_info\":\"paused by ");
    CHECK(ctl("resume a", out, sizeof out, err, sizeof err) == 0);
}

/* show: "ago" and "in" in words; the holder is the daemon, named as such. */
static void show_words(deferd_client *c)
{
    char id[DEFERD_ID_SIZE], args[DEFERD_ID_SIZE + 16], out[4096], err[4096];
    CHECK(put_job(c, "b", "later", 60000, -1, 5, id) == 0);
    snprintf(args, sizeof args, "show %s", id);
    CHECK(ctl(args, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, ", in 59 s)") || strstr(out, ", in 1 min 00 s)"));
    deferd_client *cons = client(&d);
    deferd_job job = {0};
    CHECK(put_job(c, "a", "held", -1, now_ms() - 5000, 5, id) == 0);
    CHECK(deferd_subscribe(cons, "a", 1) == DEFERD_OK);
    CHECK(deferd_next_job(cons, &job, 10000) == DEFERD_OK);
    snprintf(args, sizeof args, "show %s", id);
    CHECK(ctl(args, out, sizeof out, err, sizeof err) == 0);
    CHECK_CONTAINS(out, " s ago)");
    CHECK(strstr(out, "in -") == NULL);
    CHECK_CONTAINS(out, "held by:  deferd at ");
    CHECK_CONTAINS(out, "(a consumer of that daemon runs it)");
    CHECK(ctl("show emails/1-2-3", out, sizeof out, err, sizeof err) == 3);
    CHECK_CONTAINS(err, "or never put");
    CHECK(deferd_ack(cons, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    deferd_close(cons);
}

/* A port nothing listens on (bound, then closed). */
static int closed_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* --timeout: gives up in time, having said whom it waits for after about a second. */
static void timeout_gives_up(void)
{
    char ini[400], cmd[1200], out[4096], err[4096], hosts[64];
    int port = closed_port();
    CHECK(port > 0);
    snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
    snprintf(ini, sizeof ini, "%s/closed.ini", d.dir);
    FILE *f = fopen(ini, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "[daemon]\nsocket = %s/none.sock\n[zookeeper]\nhosts = %s\nroot = /x\n"
            "[queue emails]\n", d.dir, hosts);
    fclose(f);
    /* coreutils' timeout: a deferctl that never gives up fails the test, not hangs it */
    snprintf(cmd, sizeof cmd, "timeout 30 %s -c %s --timeout 2500ms list emails 2>%s/t.err",
             getenv("DEFERCTL_BIN"), ini, d.dir);
    int64_t t0 = now_ms();
    int rc = system(cmd);
    int64_t took = now_ms() - t0;
    printf("--timeout 2500ms against a closed port: gave up after %lld ms\n", (long long)took);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
    CHECK(took >= 2400 && took < 6000);
    snprintf(cmd, sizeof cmd, "%s/t.err", d.dir);
    f = fopen(cmd, "r");
    size_t n = f ? fread(err, 1, sizeof err - 1, f) : 0;
    err[n] = '\0';
    if (f)
        fclose(f);
    snprintf(out, sizeof out, "deferctl: connecting to ZooKeeper at %s ...\n", hosts);
    CHECK(strncmp(err, out, strlen(out)) == 0);
    snprintf(out, sizeof out, "deferctl: cannot connect to ZooKeeper at %s within 2500 ms",
             hosts);
    CHECK_CONTAINS(err, out);
}

int main(void)
{
    harness_init("admin_messages", root, sizeof root);
    if (daemon_start(&d, root, "m", NULL) != 0 || daemon_wait_connected(&d, 20000) != 0)
        return 1;
    deferd_client *c = client(&d);
    getopt_prefix();
    help_everywhere();
    bad_ids();
    dead_letters();
    one_time_syntax();
    list_hint_runs(c);
    stats_explained();
    show_words(c);
    timeout_gives_up();
    deferd_close(c);
    daemon_kill(&d, SIGTERM);
    return check_report("it_admin_messages");
}
