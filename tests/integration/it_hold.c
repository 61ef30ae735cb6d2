/* Writes held through a ZooKeeper outage ([daemon] hold_writes): a PUT, a BATCH, a CANCEL
 * and a RESCHEDULE sent while the daemon is SUSPENDED wait, and are answered OK once the
 * same session is back; an outage longer than the hold answers them "not stored" when it
 * runs out, and none is stored afterwards (libdeferd then sends it again); a hold shortened by SIGHUP applies to what
 * waits already; hold_writes = 0 refuses at once. The outage is a
 * cut in a relay between deferd and ZooKeeper, which stays up. */
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "tcpcut.h"

static char root[128];

/* A reply's fields come first (docs/protocol.md, Errors): checked with the code. */
static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int64_t cut_and_wait_suspended(struct daemon_proc *d, struct tcpcut *relay, int ms)
{
    long mark = log_mark(d);
    tcpcut_cut(relay, ms);
    int64_t t = now_ms();
    CHECK(log_wait(d, mark, "-> SUSPENDED", 5000));
    return t;
}

/* One of each write during a short outage: all answered OK after RECONNECTED, none before
 * the connection was back. */
static void short_outage(struct daemon_proc *d, struct tcpcut *relay)
{
    deferd_client *c = client(d);
    char j1[DEFERD_ID_SIZE], j2[DEFERD_ID_SIZE], req[1024], out[4096];
    CHECK(put_job(c, "a", "to cancel", 3600000, -1, -1, j1) == 0);
    CHECK(put_job(c, "a", "to move", 3600000, -1, -1, j2) == 0);
    int64_t cut = cut_and_wait_suspended(d, relay, 1500);
    long mark = log_mark(d);
    snprintf(req, sizeof req, "PUT a 4 delay=3600000\nheld\n"
             "BATCH 2\nPUT a 2 delay=3600000\nb1\nPUT b 2 delay=3600000\nb2\n"
             "CANCEL %s\nRESCHEDULE %s delay=7200000\n", j1, j2);
    int64_t sent = now_ms();
    int n = raw_request(d, req, 4, out, sizeof out, 10000);
    int64_t answered = now_ms();
    printf("held through a %d ms outage (sent %lld ms after the cut), answered after %lld ms:\n%s",
           1500, (long long)(sent - cut), (long long)(answered - sent), out);
    CHECK(n == 4);
    CHECK(strncmp(out, "OK a/", 5) == 0);
    CHECK(strstr(out, "\nOK n=2 ") != NULL);
    /* delay= counts from the put's arrival, not from its release 1.5 s later: its due
     * time is within a second of j1's, put (delay 1 h) just before the cut */
    long long due_held = 0, due_j1 = atoll(strchr(j1, '/') + 1);
    CHECK(sscanf(out, "OK a/%lld-", &due_held) == 1);
    CHECK(due_held >= due_j1 && due_held < due_j1 + 1000);
    int oks = 0;
    for (const char *p = out; (p = strstr(p, "OK")) != NULL; p += 2)
        oks += p == out || p[-1] == '\n';
    CHECK(oks == 4);
    CHECK(log_count(d, mark, "-> RECONNECTED") == 1); /* the same session: it was held */
    CHECK(stats_has(d, "writes_held=0"));
    CHECK(!stats_has(d, "writes_held_total=0"));
    zhandle_t *zh = zk_connect();
    CHECK(!zk_job_exists(zh, root, j1) && !zk_job_exists(zh, root, j2)); /* cancelled, moved */
    zookeeper_close(zh);
    deferd_close(c);
}

/* An outage longer than hold_writes (1 s): the held put is answered "not stored" when the
 * hold runs out, and is not stored once ZooKeeper is back. */
static void long_outage(struct daemon_proc *d, struct tcpcut *relay)
{
    char out[1024];
    zhandle_t *zh = zk_connect();
    int before = zk_count_jobs(zh, root, "emails");
    cut_and_wait_suspended(d, relay, 3000);
    int64_t sent = now_ms();
    int n = raw_request(d, "PUT emails 8 delay=3600000\ntoo long\n", 1, out, sizeof out, 10000);
    int64_t waited = now_ms() - sent;
    printf("held past hold_writes: answered after %lld ms: %s", (long long)waited, out);
    CHECK(n == 1 && starts(out, "ERR UNAVAILABLE stored=no reason=hold_expired not stored"));
    CHECK(strstr(out, "hold_writes") != NULL);
    CHECK(waited >= 900 && waited < 2900); /* the hold's end, not the outage's */
    CHECK(wait_stats(d, "zk_state=CONNECTED", 1));
    deferd_client *c = client(d); /* a put after the reconnection goes after anything else */
    char id[DEFERD_ID_SIZE];
    CHECK(put_job(c, "emails", "after", 3600000, -1, -1, id) == 0);
    deferd_close(c);
    CHECK(zk_count_jobs(zh, root, "emails") == before + 1);
    CHECK(stats_has(d, "writes_hold_expired=1"));
    /* libdeferd sends a put answered "not stored" again (deferd_set_put_retry): the same
     * outage costs a producer through the library a pause, and the job is stored once */
    c = client(d);
    cut_and_wait_suspended(d, relay, 3000);
    sent = now_ms();
    deferd_put_opts o = {.has_delay = 1, .delay_ms = 3600000};
    int rc = deferd_put(c, "emails", "retried", 7, &o, id, sizeof id);
    waited = now_ms() - sent;
    printf("libdeferd put through a 3 s outage (hold 1 s): %s after %lld ms\n",
           rc == DEFERD_OK ? id : deferd_last_error(c), (long long)waited);
    CHECK(rc == DEFERD_OK);
    CHECK(waited >= 900); /* answered "not stored" once at least, then sent again */
    CHECK(zk_count_jobs(zh, root, "emails") == before + 2);
    deferd_close(c);
    zookeeper_close(zh);
}

/* A hold shortened by SIGHUP applies to what is already held: a put held under the default
 * 4 s is answered as soon as the reload makes its wait over (0.5 s), not 4 s on. */
static void shortened_hold(struct daemon_proc *d, struct tcpcut *relay)
{
    char out[1024], path[400];
    cut_and_wait_suspended(d, relay, 6000);
    int fd = raw_connect(d);
    const char *req = "PUT emails 4 delay=3600000\nheld\n";
    int64_t sent = now_ms();
    CHECK(fd >= 0 && write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    CHECK(wait_stats(d, " writes_held=1 ", 1));
    snprintf(path, sizeof path, "%s/deferd.ini", d->dir);
    FILE *f = fopen(path, "a");
    CHECK(f != NULL);
    if (f) {
        fputs("\n[daemon]\nhold_writes = 500ms\n", f);
        fclose(f);
    }
    long mark = log_mark(d);
    CHECK(kill(d->pid, SIGHUP) == 0);
    CHECK(log_wait(d, mark, "daemon.hold_writes changed", 5000));
    int n = fd >= 0 ? raw_read_lines(fd, 1, out, sizeof out, 5000) : 0;
    int64_t waited = now_ms() - sent;
    printf("hold shortened to 0.5 s while a put waited: answered after %lld ms: %s",
           (long long)waited, out);
    CHECK(n == 1 && starts(out, "ERR UNAVAILABLE stored=no reason=hold_expired not stored"));
    CHECK(waited < 3000); /* the old hold would have answered at 4 s */
    if (fd >= 0)
        close(fd);
    CHECK(wait_stats(d, "zk_state=CONNECTED", 1));
}

/* hold_writes = 0: refused at once, as before the hold existed. */
static void no_hold(struct daemon_proc *d, struct tcpcut *relay)
{
    char out[1024];
    cut_and_wait_suspended(d, relay, 1500);
    int64_t sent = now_ms();
    int n = raw_request(d, "PUT emails 3\nnow\n", 1, out, sizeof out, 10000);
    printf("hold_writes=0: answered after %lld ms: %s", (long long)(now_ms() - sent), out);
    CHECK(n == 1 && starts(out, "ERR UNAVAILABLE stored=no reason=not_connected not stored: "
                                "not connected"));
    CHECK(now_ms() - sent < 1000);
}

static int start_relayed(struct daemon_proc *d, struct tcpcut **relay, const char *tag,
                         const char *hold)
{
    char relayed[160], hosts[200];
    *relay = tcpcut_start(harness_zk_hosts, relayed, sizeof relayed);
    if (!*relay)
        return -1;
    snprintf(hosts, sizeof hosts, "zookeeper.hosts=%s", relayed);
    const char *const o[] = {"zookeeper.session_timeout=10s", hosts, hold, NULL};
    return daemon_start(d, root, tag, o) == 0 && daemon_wait_connected(d, 10000) == 0 ? 0 : -1;
}

int main(void)
{
    harness_init("hold", root, sizeof root);
    struct daemon_proc d;
    struct tcpcut *relay;
    if (start_relayed(&d, &relay, "h1", "daemon.hold_writes=1s") != 0)
        return 1;
    long_outage(&d, relay);
    daemon_kill(&d, SIGTERM);
    tcpcut_stop(relay);
    if (start_relayed(&d, &relay, "h2", "daemon.requests_per_turn=64") != 0) /* the default */
        return 1;
    short_outage(&d, relay);
    shortened_hold(&d, relay);
    daemon_kill(&d, SIGTERM);
    tcpcut_stop(relay);
    if (start_relayed(&d, &relay, "h3", "daemon.hold_writes=0") != 0)
        return 1;
    no_hold(&d, relay);
    daemon_kill(&d, SIGTERM);
    tcpcut_stop(relay);
    return check_report("it_hold");
}
