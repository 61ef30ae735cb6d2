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
    if (rc != 0) /* many checks expect a refusal; the text shows which one failed */
        fprintf(stderr, "deferctl %s: exit %d: %s", args, rc, err);
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

/* stats --all: txn.* with a legend and as numbers in JSON; a paused queue's reason. */
static void stats_explained(void)
{
    char out[8192], err[4096];
    CHECK(ctl("stats --all", out, sizeof out, err, sizeof err) == 0);
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
    CHECK_CONTAINS(out, "queue a: paused by ");
    CHECK_CONTAINS(out, "it-messages-reason");
    CHECK(ctl("stats --all", out, sizeof out, err, sizeof err) == 0);
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

/* Runs "env -u DEFERD_SOCKET -u DEFERD_CONFIG ENV deferctl ARGS" (no -c, no -s of D's):
 * its exit status, stderr in ERR. */
static int bare_ctl(const char *env, const char *args, char *err, size_t elen)
{
    char cmd[2048], file[400];
    snprintf(file, sizeof file, "%s/bare.stderr", d.dir);
    snprintf(cmd, sizeof cmd, "env -u DEFERD_SOCKET -u DEFERD_CONFIG %s %s %s >/dev/null 2>%s",
             env, getenv("DEFERCTL_BIN"), args, file);
    int rc = system(cmd);
    FILE *f = fopen(file, "r");
    size_t n = f ? fread(err, 1, elen - 1, f) : 0;
    err[n] = '\0';
    if (f)
        fclose(f);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Issue 38: nobody listens on the socket: the message names it, where it came from, and
 * asks whether deferd runs; a missing config does not stop a command that needs only the
 * socket, which says which socket it uses. */
static void daemon_down(void)
{
    char err[4096], want[600], env[600], args[600], ini[400];
    snprintf(args, sizeof args, "-s %s/none.sock ping", d.dir);
    CHECK(bare_ctl("", args, err, sizeof err) == 1);
    snprintf(want, sizeof want, "deferctl: cannot connect to %s/none.sock (from --socket): "
             "No such file or directory: is deferd running?\n", d.dir);
    CHECK_STR(err, want);
    snprintf(env, sizeof env, "DEFERD_SOCKET=%s/none.sock", d.dir);
    CHECK(bare_ctl(env, "put -q a x", err, sizeof err) == 1);
    CHECK_CONTAINS(err, "none.sock (from DEFERD_SOCKET): ");
    CHECK_CONTAINS(err, "is deferd running?");
    snprintf(ini, sizeof ini, "%s/down.ini", d.dir);
    FILE *f = fopen(ini, "w");
    CHECK(f != NULL);
    if (f) {
        fprintf(f, "[daemon]\nsocket = %s/none.sock\n[zookeeper]\nhosts = %s\nroot = /x\n"
                "[queue a]\n", d.dir, harness_zk_hosts);
        fclose(f);
    }
    snprintf(args, sizeof args, "-c %s ping", ini);
    CHECK(bare_ctl("", args, err, sizeof err) == 1);
    snprintf(want, sizeof want, "none.sock (from %s): ", ini);
    CHECK_CONTAINS(err, want);
    /* a stale DEFERD_CONFIG: put and ping still go to the socket named, or the default */
    snprintf(args, sizeof args, "-s %s ping", d.sock);
    CHECK(bare_ctl("DEFERD_CONFIG=/nonexistent/deferd.ini", args, err, sizeof err) == 0);
    snprintf(args, sizeof args, "-s %s put -q a stale-config", d.sock);
    CHECK(bare_ctl("DEFERD_CONFIG=/nonexistent/deferd.ini", args, err, sizeof err) == 0);
    bare_ctl("DEFERD_CONFIG=/nonexistent/deferd.ini", "ping", err, sizeof err);
    CHECK_CONTAINS(err, "deferctl: config /nonexistent/deferd.ini does not exist: using the "
                        "default socket /run/deferd/deferd.sock\n");
    CHECK(strstr(err, "cannot open") == NULL);
}

/* Issue 38: stats without a queue leads with each queue's pending, due, in flight, dead and
 * lateness; the daemon's internals come with --all. */
static int retry_pending(char *out, size_t len)
{
    char err[4096];
    long pending = -1;
    if (ctl("stats", out, len, err, sizeof err) != 0)
        return -1;
    const char *row = strstr(out, "\nretry ");
    if (row && sscanf(row, " retry %ld", &pending) != 1)
        pending = -1;
    return (int)pending;
}

static void stats_summary(deferd_client *c)
{
    char out[16384], err[4096], id[DEFERD_ID_SIZE];
    for (int i = 0; i < 2; i++)
        CHECK(put_job(c, "retry", "later", 3600000, -1, 5, id) == 0);
    int64_t deadline = now_ms() + 30000; /* the daemon's census counts them (depth_interval) */
    while (retry_pending(out, sizeof out) != 2 && now_ms() < deadline)
        usleep(100000);
    CHECK(retry_pending(out, sizeof out) == 2);
    CHECK_CONTAINS(out, "deferd: ZooKeeper CONNECTED for ");
    CHECK_CONTAINS(out, "PENDING         DUE   IN-FLIGHT        DEAD LATE-P50-MS LATE-P99-MS");
    CHECK(strstr(out, "packs_unreadable") == NULL && strstr(out, "change_round_trips") == NULL);
    CHECK(strstr(out, "jobs_known") == NULL);
    CHECK(ctl("stats --all", out, sizeof out, err, sizeof err) == 0);
    CHECK_CONTAINS(out, "PENDING");
    CHECK_CONTAINS(out, "packs_unreadable");
    CHECK_CONTAINS(out, "change_round_trips");
}

/* Issue 38: show gives the ttr a delivery gets, the queue's when the job has none, in the
 * unit one would write; --json has it as a number either way. */
static void show_ttr(deferd_client *c)
{
    char id[DEFERD_ID_SIZE], args[DEFERD_ID_SIZE + 32], out[4096], err[4096];
    CHECK(put_job(c, "b", "default-ttr", 60000, -1, 5, id) == 0);
    snprintf(args, sizeof args, "show %s", id);
    CHECK(ctl(args, out, sizeof out, err, sizeof err) == 0);
    CHECK_CONTAINS(out, "\nttr:      1m (the queue's default)\n"); /* [queue b]: 60 s */
    snprintf(args, sizeof args, "show --json %s", id);
    CHECK(ctl(args, out, sizeof out, err, sizeof err) == 0);
    CHECK_CONTAINS(out, "\"ttr_ms\":60000,\"ttr_default\":true");
    CHECK(ctl("put -q b --delay 1m --ttr 90s explicit", out, sizeof out, err, sizeof err) == 0);
    snprintf(args, sizeof args, "show %.*s", (int)strcspn(out, "\n"), out);
    CHECK(ctl(args, out, sizeof out, err, sizeof err) == 0);
    CHECK_CONTAINS(out, "\nttr:      90s\n");
    snprintf(args + strlen(args), sizeof args - strlen(args), " --json");
    CHECK(ctl(args, out, sizeof out, err, sizeof err) == 0);
    CHECK_CONTAINS(out, "\"ttr_ms\":90000,\"ttr_default\":false");
}

/* The column where the DUE time starts in LINE: after the id and its padding. */
static long due_column(const char *line)
{
    const char *p = line + strcspn(line, " ");
    p += strspn(p, " ");
    return p - line;
}

/* Issue 38: list keeps its columns under the header when an id is long (a keyed one). */
static void list_aligned(void)
{
    char out[8192], err[4096];
    CHECK(ctl("put -q emails --delay 3d --key tick:1795852450000 x", out, sizeof out, err,
              sizeof err) == 0);
    CHECK(ctl("list emails", out, sizeof out, err, sizeof err) == 0);
    long header = strstr(out, "DUE") ? strstr(out, "DUE") - out : -1;
    int rows = 0;
    for (const char *line = strchr(out, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        CHECK(due_column(line + 1) == header);
        rows++;
    }
    CHECK(rows >= 2 && strstr(out, "-ktick:1795852450000 ") != NULL);
}

/* Issue 38: dead delete says what it deleted; --all on dead letters counts no "held". */
static void dead_said(void)
{
    char out[8192], err[4096], args[DEFERD_ID_SIZE + 32], id[DEFERD_ID_SIZE];
    CHECK(make_dead_letters(&d, "limited", 2) == 0);
    CHECK(ctl("dead list limited", out, sizeof out, err, sizeof err) == 0);
    const char *first = strchr(out, '\n');
    CHECK(first && sscanf(first + 1, "%199s", id) == 1);
    if (!first)
        return;
    snprintf(args, sizeof args, "dead delete %s", id);
    CHECK(ctl(args, out, sizeof out, err, sizeof err) == 0);
    snprintf(args, sizeof args, "deleted %s\n", id);
    CHECK_STR(out, args);
    CHECK(ctl("dead kick --all limited --yes", out, sizeof out, err, sizeof err) == 0);
    CHECK_CONTAINS(err, "1 of 1 dead letter(s) kicked, 0 gone meanwhile, 0 failed");
    CHECK(strstr(err, "held") == NULL);
}

/* Issue 38: a time without its zone is refused for that reason. */
static void zone_named(void)
{
    char out[4096], err[4096];
    CHECK(ctl("reschedule " GOOD_ID " --at 2026-12-01T09:00", out, sizeof out, err,
              sizeof err) == 2);
    CHECK_CONTAINS(err, "invalid --at '2026-12-01T09:00': it has no time zone: add Z for UTC");
    char file[400], args[500];
    snprintf(file, sizeof file, "%s/zone.batch", d.dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("queue=a at=2026-12-01T09:00 payload=x\n", f);
    fclose(f);
    snprintf(args, sizeof args, "put --batch %s", file);
    CHECK(ctl(args, out, sizeof out, err, sizeof err) == 2);
    CHECK_CONTAINS(err, "zone.batch:1: it has no time zone: add Z for UTC");
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
    static const char *const ov[] = {"metrics.depth_interval=1s", NULL}; /* stats_summary */
    if (daemon_start(&d, root, "m", ov) != 0 || daemon_wait_connected(&d, 20000) != 0)
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
    daemon_down();
    stats_summary(c);
    show_ttr(c);
    list_aligned();
    dead_said();
    zone_named();
    deferd_close(c);
    daemon_kill(&d, SIGTERM);
    return check_report("it_admin_messages");
}
