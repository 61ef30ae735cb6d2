/* deferctl with [zookeeper] auth_file and acl = creator (issue 9). A daemon with the same
 * identity (alice, from an owner-only auth_file) made the queue's znodes creator-only:
 *  - deferctl as alice puts (plain and keyed, through the daemon), lists, shows, cancels
 *    (by key), reschedules, pauses, resumes and lists dead letters, and what it creates
 *    carries alice's ACL too;
 *  - deferctl as mallory (another auth_file) or with no identity at all is told
 *    "permission denied by ZooKeeper" with exit status 1, and nothing changes;
 *  - an auth_file that others may read is refused, naming the file. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "harness_acl.h"

static struct daemon_proc alice;
static char root[128];
static char alice_auth[400], ini_alice[400], ini_mallory[400], ini_anon[400], ini_loose[400];

/* A copy of the daemon's config for deferctl, with ZK_LINES at the top of [zookeeper]. */
static int write_ini(const char *path, const char *zk_lines)
{
    char src[400], text[8192];
    snprintf(src, sizeof src, "%s/deferd.ini", alice.dir);
    FILE *in = fopen(src, "r"), *out = fopen(path, "w");
    size_t n = in ? fread(text, 1, sizeof text - 1, in) : 0;
    text[n] = '\0';
    char *zk = strstr(text, "[zookeeper]\n");
    if (in)
        fclose(in);
    if (!out || !zk)
        return -1;
    zk += strlen("[zookeeper]\n");
    fprintf(out, "%.*s%s%s", (int)(zk - text), text, zk_lines, zk);
    return fclose(out);
}

/* deferctl -c INI ARGS, stderr with stdout in OUT; its exit status. */
static int ctl(const char *ini, const char *args, char *out, size_t len)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "-c %s %s 2>&1", ini, args);
    return run_deferctl(&alice, cmd, out, len);
}

static void setup_identities(void)
{
    char file[400], lines[600];
    snprintf(ini_alice, sizeof ini_alice, "%s/alice.ini", alice.dir);
    snprintf(ini_mallory, sizeof ini_mallory, "%s/mallory.ini", alice.dir);
    snprintf(ini_anon, sizeof ini_anon, "%s/anon.ini", alice.dir);
    snprintf(ini_loose, sizeof ini_loose, "%s/loose.ini", alice.dir);
    snprintf(lines, sizeof lines, "auth_file = %s\nacl = creator\n", alice_auth);
    CHECK(write_ini(ini_alice, lines) == 0);
    snprintf(file, sizeof file, "%s/mallory.auth", alice.dir);
    CHECK(write_auth_file(file, "digest:mallory:x") == 0);
    snprintf(lines, sizeof lines, "auth_file = %s\nacl = creator\n", file);
    CHECK(write_ini(ini_mallory, lines) == 0);
    CHECK(write_ini(ini_anon, "") == 0);
    snprintf(file, sizeof file, "%s/loose.auth", alice.dir);
    CHECK(write_auth_file(file, "digest:alice:secret") == 0 && chmod(file, 0644) == 0);
    snprintf(lines, sizeof lines, "auth_file = %s\n", file);
    CHECK(write_ini(ini_loose, lines) == 0);
}

/* The first line of OUT, without its newline, into BUF. */
static const char *first_line(const char *out, char *buf, size_t len)
{
    snprintf(buf, len, "%.*s", (int)strcspn(out, "\n"), out);
    return buf;
}

/* Every operator command as another identity, or none: refused, exit 1, nothing changed. */
static void refused(zhandle_t *owner, const char *ini, const char *id, const char *dead_id)
{
    char args[600], out[8192], paused[300];
    snprintf(paused, sizeof paused, "%s/queues/a/paused", root);
    const struct { const char *cmd, *arg, *rest; } run[] = {
        {"list a", "", ""}, {"show", id, ""}, {"cancel", id, ""},
        {"reschedule", id, "--delay 3h"}, {"pause a", "", ""}, {"dead list limited", "", ""},
        {"dead show", dead_id, ""}, {"dead kick", dead_id, ""},
    };
    for (size_t i = 0; i < sizeof run / sizeof run[0]; i++) {
        snprintf(args, sizeof args, "%s %s %s", run[i].cmd, run[i].arg, run[i].rest);
        int rc = ctl(ini, args, out, sizeof out);
        CHECK(rc == 1);
        CHECK_CONTAINS(out, "deferctl: ");
        CHECK_CONTAINS(out, "permission denied by ZooKeeper");
        if (rc != 1 || !strstr(out, "permission denied"))
            fprintf(stderr, "deferctl %s -> %d: %s\n", args, rc, out);
    }
    /* A put goes through the daemon, whose identity counts, not deferctl's. */
    CHECK(ctl(ini, "put --queue a --key k2 via-the-daemon", out, sizeof out) == 0);
    CHECK(zk_job_exists(owner, root, id) == 1);
    CHECK(zk_exists(owner, paused) == 0);
    CHECK(ctl(ini_alice, "pause a", out, sizeof out) == 0);
    CHECK(ctl(ini, "resume a", out, sizeof out) == 1);
    CHECK_CONTAINS(out, "permission denied by ZooKeeper");
    CHECK(zk_exists(owner, paused) == 1);
    CHECK(ctl(ini_alice, "resume a", out, sizeof out) == 0);
}

/* A dead letter of queue limited (max_attempts = 1): put, delivered, nacked. */
static void make_dead(deferd_client *c, char *id)
{
    deferd_client *cl = client(&alice);
    deferd_job job = {0};
    CHECK(put_job(c, "limited", "dead", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(cl, "limited", 1) == DEFERD_OK);
    CHECK(deferd_next_job(cl, &job, 10000) == DEFERD_OK);
    CHECK(deferd_nack(cl, id, -1) == DEFERD_OK);
    deferd_job_clear(&job);
    deferd_close(cl);
}

int main(void)
{
    char opt_file[450], out[8192], args[600], id[DEFERD_ID_SIZE], keyed[DEFERD_ID_SIZE],
        moved[DEFERD_ID_SIZE], dead[DEFERD_ID_SIZE], path[512];
    harness_init("acl_admin", root, sizeof root);
    zhandle_t *owner = zk_identity("alice:secret");
    CHECK(owner != NULL);
    if (!owner)
        return check_report("it_acl_admin");
    snprintf(alice_auth, sizeof alice_auth, "/tmp/deferd-it-%d-alice.auth", (int)getpid());
    CHECK(write_auth_file(alice_auth, "digest:alice:secret") == 0);
    snprintf(opt_file, sizeof opt_file, "zookeeper.auth_file=%s", alice_auth);
    const char *const as_alice[] = {opt_file, "zookeeper.acl=creator", NULL};
    if (daemon_start(&alice, root, "alice", as_alice) != 0)
        return 1;
    setup_identities();
    deferd_client *c = client(&alice);
    CHECK(put_job(c, "a", "warm", -1, now_ms() + 3600000, -1, id) == 0); /* the session is up */

    /* As alice: everything works. */
    CHECK(ctl(ini_alice, "put --queue a --delay 1h hello", out, sizeof out) == 0);
    first_line(out, id, sizeof id);
    CHECK(ctl(ini_alice, "put --queue a --delay 2h --key k1 keyed", out, sizeof out) == 0);
    first_line(out, keyed, sizeof keyed);
    CHECK(strstr(keyed, "-kk1") != NULL);
    CHECK(ctl(ini_alice, "list a", out, sizeof out) == 0);
    CHECK_CONTAINS(out, id);
    CHECK_CONTAINS(out, keyed);
    snprintf(args, sizeof args, "show %s", id);
    CHECK(ctl(ini_alice, args, out, sizeof out) == 0);
    CHECK_CONTAINS(out, "hello");
    snprintf(args, sizeof args, "reschedule %s --delay 90m", id);
    CHECK(ctl(ini_alice, args, out, sizeof out) == 0);
    CHECK(sscanf(out, "%255s", moved) == 1 && strncmp(moved, "a/", 2) == 0);
    CHECK(zk_job_exists(owner, root, id) == 0);
    CHECK(job_path(root, moved, path, sizeof path) == 0);
    CHECK(is_creator_acl(owner, path, "alice")); /* deferctl's create carries acl = creator */
    CHECK(ctl(ini_alice, "cancel --key k1 a", out, sizeof out) == 0);
    CHECK(zk_job_exists(owner, root, keyed) == 0);
    CHECK(ctl(ini_alice, "pause a --reason acl", out, sizeof out) == 0);
    snprintf(path, sizeof path, "%s/queues/a/paused", root);
    CHECK(is_creator_acl(owner, path, "alice"));
    CHECK(ctl(ini_alice, "resume a", out, sizeof out) == 0);
    CHECK(zk_exists(owner, path) == 0);
    make_dead(c, dead);
    CHECK(ctl(ini_alice, "dead list limited", out, sizeof out) == 0);
    const char *row = strstr(out, strchr(dead, '/') + 1);
    char name[200] = "";
    CHECK(row && sscanf(row, "%199s", name) == 1); /* its dead name: a1, attempts made */
    snprintf(dead, sizeof dead, "limited/%s", name);

    /* Another identity, and none: refused, nothing changed. */
    refused(owner, ini_mallory, moved, dead);
    refused(owner, ini_anon, moved, dead);
    CHECK(job_path(root, moved, path, sizeof path) == 0);
    CHECK(zk_exists(owner, path) == 1); /* not moved, not cancelled */
    CHECK(ctl(ini_alice, "dead list limited", out, sizeof out) == 0);
    CHECK_CONTAINS(out, strchr(dead, '/') + 1); /* not kicked */

    /* An auth_file others may read: refused before anything is sent, naming the file. */
    CHECK(ctl(ini_loose, "list a", out, sizeof out) != 0);
    CHECK_CONTAINS(out, "loose.auth");

    deferd_close(c);
    zookeeper_close(owner);
    unlink(alice_auth);
    daemon_kill(&alice, SIGTERM);
    return check_report("it_acl_admin");
}
