/* A put token taken but unreadable (engine/tokens.h): both put paths, the put set (a job
 * due now) and the packer (a far job without a key), answer the retry with the same
 * ERR UNAVAILABLE stored=maybe, never "not stored": a try may have stored the job. Made on
 * demand twice: the read fails (the test-only failpoint token-read-fails, docs/deferd.md),
 * and the token's node names no job (planted by hand). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "harness_pack.h"

#define FAR "delay=2592000000"

static char root[128];
static const char *const packing[] = {PACK_TEST_OVERRIDES("emails"), NULL};

static void token(char *buf, size_t len, const char *tag)
{
    snprintf(buf, len, "%lld-%s%08x", (long long)now_ms(), tag, (unsigned)getpid());
}

/* Sends PUT with OPTS and token TOK once; the reply into OUT. */
static void put(const struct daemon_proc *d, const char *opts, const char *tok, char *out,
                size_t len)
{
    char req[256];
    snprintf(req, sizeof req, "PUT emails 3 %s%sidem=%s\nabc\n", opts, opts[0] ? " " : "", tok);
    out[0] = '\0';
    CHECK(raw_request(d, req, 1, out, len, 10000) == 1);
}

/* The put stored, then sent again: its token taken, the read fails. */
static void retry_unread(const struct daemon_proc *d, const char *opts, const char *tag,
                         char *again, size_t len)
{
    char tok[64], first[256];
    token(tok, sizeof tok, tag);
    put(d, opts, tok, first, sizeof first);
    put(d, opts, tok, again, len);
    printf("%s put, then again with the token read failing:\n  %s  %s", tag, first, again);
    CHECK(strncmp(first, "OK emails/", 10) == 0);
}

static int start(struct daemon_proc *d, const char *tag, const char *failpoint)
{
    if (failpoint)
        setenv("DEFERD_FAILPOINT", failpoint, 1);
    int rc = daemon_start(d, root, tag, packing);
    unsetenv("DEFERD_FAILPOINT");
    return rc == 0 && daemon_wait_connected(d, 20000) == 0 ? 0 : -1;
}

static void read_fails(void)
{
    struct daemon_proc d;
    char near[256], far[256];
    if (start(&d, "t1", "token-read-fails") != 0) {
        CHECK(!"deferd with the failpoint did not start");
        return;
    }
    long mark = log_mark(&d);
    retry_unread(&d, "", "near", near, sizeof near);
    retry_unread(&d, FAR, "far", far, sizeof far);
    CHECK_STR(near, "ERR UNAVAILABLE stored=maybe reason=zookeeper the job may have been "
                    "stored: its put token is taken but could not be read (system error)\n");
    CHECK_STR(far, near);
    CHECK(log_count(&d, mark, "failpoint token-read-fails fires") == 2);
    CHECK(log_count(&d, mark, "is taken but could not be read: system error") == 2);
    daemon_kill(&d, SIGTERM);
}

/* A node at the token's path whose data names no job (not one deferd wrote). */
static void plant(zhandle_t *zh, const char *tok)
{
    char path[512];
    long long minute = atoll(tok) / 60000;
    const char *const dirs[] = {"queues", "queues/emails", "queues/emails/tokens"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", root, dirs[i]);
        zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    }
    snprintf(path, sizeof path, "%s/queues/emails/tokens/%lld", root, minute);
    zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    snprintf(path, sizeof path, "%s/queues/emails/tokens/%lld/%s", root, minute, tok);
    CHECK(zoo_create(zh, path, "junk", 4, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK);
}

static void names_no_job(zhandle_t *zh)
{
    struct daemon_proc d;
    char t1[64], t2[64], near[256], far[256];
    token(t1, sizeof t1, "junknear");
    token(t2, sizeof t2, "junkfar");
    plant(zh, t1);
    plant(zh, t2);
    if (start(&d, "t2", NULL) != 0) {
        CHECK(!"deferd did not start");
        return;
    }
    int jobs = zk_count_jobs(zh, root, "emails");
    put(&d, "", t1, near, sizeof near);
    put(&d, FAR, t2, far, sizeof far);
    printf("a token naming no job, near and far:\n  %s  %s", near, far);
    CHECK_STR(near, "ERR UNAVAILABLE stored=maybe reason=zookeeper the job may have been "
                    "stored: its put token is taken but could not be read (it names no job "
                    "this deferd knows)\n");
    CHECK_STR(far, near);
    CHECK(zk_count_jobs(zh, root, "emails") == jobs); /* nothing made */
    daemon_kill(&d, SIGTERM);
}

int main(void)
{
    harness_init("tokens_unread", root, sizeof root);
    zhandle_t *zh = zk_connect();
    CHECK(zh != NULL && pack_marker_set(zh, root, "2") == ZOK);
    read_fails();
    names_no_job(zh);
    zookeeper_close(zh);
    return check_report("it_tokens_unread");
}
