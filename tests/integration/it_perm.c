/* Socket permissions: the socket's owner, group and mode from the config; each queue's
 * producers and consumers rules checked against the peer's credentials (SO_PEERCRED,
 * SO_PEERGROUPS); refusals answered PERMISSION_DENIED and logged with uid and pid. The
 * clients run as other users: forked children that drop to nobody (65534) before they
 * connect. Needs root (skipped with 77 otherwise). */
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define NOBODY 65534
#define STRANGER_GID 23456 /* a group nobody is in */

static char root[128];
static struct daemon_proc d;

/* Runs FN as uid NOBODY with primary group GID and no supplementary groups; its exit
 * status (the number of failed checks, or 100 + step for a setup failure). */
static int as_user(gid_t gid, int (*fn)(void))
{
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(NOBODY) != 0)
            _exit(101);
        _exit(fn());
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 102;
    return WEXITSTATUS(status);
}

/* A check in a child: says which one failed. */
static int ok_or_say(deferd_client *c, int rc, const char *what)
{
    if (rc != DEFERD_OK)
        fprintf(stderr, "%s: rc %d: %s\n", what, rc, deferd_last_error(c));
    return rc == DEFERD_OK;
}

static int code_is(deferd_client *c, int rc, const char *code)
{
    int ok = rc == DEFERD_ESERVER && strcmp(deferd_last_error_code(c), code) == 0;
    if (!ok)
        fprintf(stderr, "expected %s, got rc %d: %s\n", code, rc, deferd_last_error(c));
    return ok;
}

/* nobody:nogroup. Queue a: producers user:root; b: producers user:nobody, consumers
 * group:nogroup; emails: no rules. */
static int nobody_checks(void)
{
    char id[DEFERD_ID_SIZE];
    int bad = 0;
    deferd_client *c = deferd_connect(d.sock, NULL, 0);
    if (!c)
        return 103;
    deferd_put_opts o = {.has_delay = 1, .delay_ms = 3600000};
    int rc = deferd_put(c, "a", "x", 1, &o, id, sizeof id);
    bad += !code_is(c, rc, "PERMISSION_DENIED");
    bad += !ok_or_say(c, deferd_put(c, "b", "x", 1, &o, id, sizeof id), "put b");
    bad += !ok_or_say(c, deferd_put(c, "emails", "x", 1, &o, id, sizeof id), "put emails");
    /* a batch with one forbidden queue: refused whole */
    deferd_put_item items[2] = {{.queue = "emails", .payload = "y", .len = 1, .opts = o},
                                {.queue = "a", .payload = "z", .len = 1, .opts = o}};
    unsigned parts = 0;
    size_t stored = 9;
    rc = deferd_put_batch(c, items, 2, &parts, &stored);
    bad += !code_is(c, rc, "PERMISSION_DENIED") || stored != 0;
    if (stored != 0)
        fprintf(stderr, "batch: stored %zu\n", stored);
    rc = deferd_cancel(c, NULL, "a", "somekey", 0, NULL, 0);
    bad += !code_is(c, rc, "PERMISSION_DENIED");
    bad += !ok_or_say(c, deferd_subscribe(c, "b", 1), "sub b"); /* group:nogroup */
    bad += !ok_or_say(c, deferd_ping(c), "ping");                 /* still in sync */
    deferd_close(c);
    return bad;
}

/* nobody in a group that is not nogroup: b's consumers rule refuses it. */
static int stranger_checks(void)
{
    int bad = 0;
    deferd_client *c = deferd_connect(d.sock, NULL, 0);
    if (!c)
        return 103;
    bad += !code_is(c, deferd_subscribe(c, "b", 1), "PERMISSION_DENIED");
    bad += !code_is(c, deferd_subscribe(c, "emails,b", 1), "PERMISSION_DENIED");
    bad += !ok_or_say(c, deferd_subscribe(c, "emails", 1), "sub emails");
    deferd_close(c);
    return bad;
}

int main(void)
{
    if (geteuid() != 0) {
        fprintf(stderr, "it_perm: needs root to run clients as other users; skipped\n");
        return 77;
    }
    harness_init("perm", root, sizeof root);
    const char *o[] = {"daemon.socket_mode=0660", "daemon.socket_group=nogroup",
                       "queue a.producers=user:root", "queue b.producers=user:nobody",
                       "queue b.consumers=group:nogroup", NULL};
    CHECK(daemon_start(&d, root, "perm", o) == 0);
    CHECK(chmod(d.dir, 0755) == 0); /* the clients must reach the socket inside it */
    struct stat st;
    CHECK(stat(d.sock, &st) == 0);
    CHECK((st.st_mode & 0777) == 0660 && st.st_gid == NOBODY);

    char id[DEFERD_ID_SIZE];
    deferd_client *rootc = client(&d); /* root: every rule lets it; waits for ZooKeeper */
    CHECK(rootc && put_job(rootc, "a", "from root", 3600000, -1, -1, id) == 0);
    deferd_close(rootc);

    long mark = log_mark(&d);
    int nb = as_user(NOBODY, nobody_checks);
    printf("nobody:nogroup: %d failed checks\n", nb);
    CHECK(nb == 0);
    CHECK(log_wait(&d, mark, "permission denied: PUT on queue a for uid 65534", 5000));
    CHECK(log_count(&d, mark, "permission denied: BATCH on queue a") == 1);
    int st2 = as_user(STRANGER_GID, stranger_checks); /* not in group nogroup: no socket */
    printf("nobody:%d without the socket's group: status %d\n", STRANGER_GID, st2);
    CHECK(st2 == 103); /* mode 0660, group nogroup: it cannot even connect */
    daemon_kill(&d, SIGTERM);

    /* An open socket, so that the consumers rule is what refuses the stranger. */
    const char *o2[] = {"daemon.socket_mode=0666", "queue b.consumers=group:nogroup", NULL};
    CHECK(daemon_start(&d, root, "perm2", o2) == 0);
    CHECK(chmod(d.dir, 0755) == 0);
    mark = log_mark(&d);
    st2 = as_user(STRANGER_GID, stranger_checks);
    printf("nobody:%d on an open socket: %d failed checks\n", STRANGER_GID, st2);
    CHECK(st2 == 0);
    CHECK(log_wait(&d, mark, "permission denied: SUB on queue b for uid 65534 gid 23456", 5000));
    daemon_kill(&d, SIGTERM);

    /* Unknown users and groups in the config are refused at start, by name. */
    const char *o3[] = {"queue a.producers=user:no-such-user-xyz", NULL};
    CHECK(daemon_spawn(&d, root, "perm3", o3) == 0);
    int status = daemon_wait_exit(&d, 10000);
    printf("deferd with an unknown user in producers: exit %d\n", status);
    CHECK(status > 0);
    CHECK(log_wait(&d, 0, "no such user", 1000));
    return check_report("it_perm");
}
