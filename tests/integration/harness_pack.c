#include "harness_pack.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "pack.h"

int pack_marker_set(zhandle_t *zh, const char *root, const char *value)
{
    char path[LAYOUT_PATH_MAX];
    snprintf(path, sizeof path, "%s/" LAYOUT_MARKER, root);
    if (!value)
        return zoo_delete(zh, path, -1);
    zoo_create(zh, root, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0); /* NodeExists is fine */
    int len = (int)strlen(value);
    int rc = zoo_create(zh, path, value, len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    return rc == ZNODEEXISTS ? zoo_set(zh, path, value, len, -1) : rc;
}

int pack_root_of_old(zhandle_t *zh, const char *root)
{
    char queues[LAYOUT_PATH_MAX];
    snprintf(queues, sizeof queues, "%s/queues", root);
    int rc = zoo_create(zh, root, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (rc == ZOK || rc == ZNODEEXISTS)
        rc = zoo_create(zh, queues, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    return rc == ZNODEEXISTS ? ZOK : rc;
}

void pack_of_id(const char *id, char *pack, size_t len)
{
    char queue[80];
    struct job_name jn;
    pack[0] = '\0';
    if (layout_parse_id(id, queue, sizeof queue, &jn) == 0)
        snprintf(pack, len, "%s", jn.pack);
}

int pack_jobs(zhandle_t *zh, const char *root, const char *queue, const char *pack)
{
    static unsigned char buf[PACK_BYTES_MAX];
    char path[LAYOUT_PATH_MAX];
    int len = (int)sizeof buf;
    struct pack_reader rd;
    if (layout_pack_path(path, sizeof path, root, queue, pack) != 0 ||
        zoo_get(zh, path, 0, (char *)buf, &len, NULL) != ZOK || len < 0 ||
        pack_open(&rd, buf, (size_t)len) != 0)
        return -1;
    return (int)rd.count;
}

int pack_gone_within(zhandle_t *zh, const char *root, const char *queue, const char *pack,
                     int ms)
{
    char path[LAYOUT_PATH_MAX];
    int64_t until = now_ms() + ms;
    if (layout_pack_path(path, sizeof path, root, queue, pack) != 0)
        return 0;
    while (zk_exists(zh, path) && now_ms() < until)
        usleep(50000);
    return !zk_exists(zh, path);
}

int zk_count_packs(zhandle_t *zh, const char *root, const char *queue)
{
    char path[LAYOUT_PATH_MAX], dir[LAYOUT_PATH_MAX + 80];
    struct String_vector windows, packs;
    int n = 0;
    if (layout_packs_path(path, sizeof path, root, queue) != 0 ||
        zoo_get_children(zh, path, 0, &windows) != ZOK)
        return -1;
    for (int i = 0; i < windows.count; i++) {
        snprintf(dir, sizeof dir, "%s/%s", path, windows.data[i]);
        if (zoo_get_children(zh, dir, 0, &packs) != ZOK)
            continue; /* deleted meanwhile: empty */
        n += packs.count;
        deallocate_String_vector(&packs);
    }
    deallocate_String_vector(&windows);
    return n;
}

int64_t pack_window_ahead(int64_t ahead_ms)
{
    int64_t t = now_ms() + ahead_ms + PACK_TEST_WINDOW_MS - 1;
    return t - t % PACK_TEST_WINDOW_MS;
}

long daemon_stat(const struct daemon_proc *d, const char *field)
{
    deferd_client *c = client(d);
    char buf[4096] = "", want[64];
    const char *at;
    long v = -1;
    snprintf(want, sizeof want, " %s=", field);
    if (deferd_stats(c, buf, sizeof buf) == DEFERD_OK && (at = strstr(buf, want)))
        v = strtol(at + strlen(want), NULL, 10);
    deferd_close(c);
    return v;
}

long daemon_stat_sum(const struct daemon_proc *d, int n, const char *field)
{
    long sum = 0;
    for (int k = 0; k < n; k++)
        sum += daemon_stat(&d[k], field);
    return sum;
}

int wait_daemon_stat(const struct daemon_proc *d, const char *field, long want, int ms)
{
    int64_t deadline = now_ms() + ms;
    long v;
    while ((v = daemon_stat(d, field)) != want) {
        if (now_ms() > deadline) {
            fprintf(stderr, "harness: %s=%ld, not %ld, in %s within %d ms\n", field, v, want,
                    d->log, ms);
            return 0;
        }
        usleep(50000);
    }
    return 1;
}

int put_sent(deferd_client *c, const char *queue, const char *key, int64_t at,
             struct sent_job *s)
{
    deferd_put_opts o = {.has_at = 1, .at_ms = (uint64_t)at, .key = key};
    int64_t deadline = now_ms() + 20000;
    memset(s, 0, sizeof *s);
    s->at = at;
    for (;;) {
        int rc = deferd_put(c, queue, "p", 1, &o, s->id, sizeof s->id);
        if (rc == DEFERD_OK)
            return 0;
        if (rc != DEFERD_ESERVER || strcmp(deferd_last_error_code(c), "UNAVAILABLE") != 0 ||
            now_ms() > deadline) {
            fprintf(stderr, "put into %s failed: %s\n", queue, deferd_last_error(c));
            return -1;
        }
        usleep(50000);
    }
}

int put_sent_pipelined(deferd_client *c, const char *queue, struct sent_job *s, int n,
                       int64_t start, int step_ms)
{
    int failed = 0;
    memset(s, 0, (size_t)n * sizeof *s);
    for (int i = 0; i < n; i++) {
        deferd_put_opts o = {.has_at = 1, .at_ms = (uint64_t)(s[i].at = start + i * step_ms)};
        failed |= deferd_put_send(c, queue, "p", 1, &o) != DEFERD_OK;
    }
    for (int i = 0; i < n && !failed; i++)
        failed |= deferd_put_recv(c, s[i].id, sizeof s[i].id, 10000) != DEFERD_OK;
    return failed ? -1 : 0;
}

/* The job of S whose uid is UID; NULL when none is. */
static struct sent_job *sent_by_uid(struct sent_job *s, int n, const char *uid)
{
    char want[DEFERD_UID_SIZE];
    for (int i = 0; i < n; i++)
        if (deferd_job_uid(s[i].id, want, sizeof want) == DEFERD_OK && strcmp(uid, want) == 0)
            return &s[i];
    return NULL;
}

/* One delivery of JOB, checked against what was put. */
static void check_delivery(struct sent_job *s, int n, const deferd_job *job, int64_t at)
{
    char uid[DEFERD_UID_SIZE];
    struct sent_job *sj = NULL;
    CHECK(deferd_job_uid(job->id, uid, sizeof uid) == DEFERD_OK &&
          (sj = sent_by_uid(s, n, uid)) != NULL);
    if (!sj) {
        fprintf(stderr, "delivered a job no test put: %s\n", job->id);
        return;
    }
    CHECK(sj->seen++ == 0 && job->attempt == 1);
    CHECK(job->due_ms == sj->at && at >= sj->at);
    if (sj->seen == 1)
        sj->late_ms = at - sj->at;
}

int collect_jobs(deferd_client **cons, int ncons, struct sent_job *s, int n, int ms)
{
    int got = 0;
    int64_t until = now_ms() + ms;
    while (got < n && now_ms() < until) {
        for (int k = 0; k < ncons; k++) {
            deferd_job job;
            if (next_job_push(cons[k], &job, 50) != 0)
                continue;
            check_delivery(s, n, &job, now_ms());
            got++;
            CHECK(deferd_ack(cons[k], job.id) == DEFERD_OK);
            deferd_job_clear(&job);
        }
    }
    return got;
}

int64_t sent_latest(const struct sent_job *s, int n)
{
    int64_t latest = 0;
    for (int i = 0; i < n; i++)
        latest = s[i].late_ms > latest ? s[i].late_ms : latest;
    return latest;
}
