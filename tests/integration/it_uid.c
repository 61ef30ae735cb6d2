/* A job's stable uid: the id changes when a job moves (nack with a delay, reschedule, a dead
 * letter's kick), the uid never does; redeliveries keep both. SUB uid=1 puts it in the JOB
 * push, deferctl work in DEFERD_JOB_UID, deferctl show and list print it. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

static struct daemon_proc d;
static char root[128];

static int same_uid(const char *id_a, const char *id_b)
{
    char a[DEFERD_UID_SIZE], b[DEFERD_UID_SIZE];
    return deferd_job_uid(id_a, a, sizeof a) == DEFERD_OK &&
           deferd_job_uid(id_b, b, sizeof b) == DEFERD_OK && strcmp(a, b) == 0;
}

/* Nacked with a delay: a new id (its due time and attempts are in the name), the same uid;
 * a consumer that vanishes: the same id and uid again, one attempt up. */
static void nack_and_crash_keep_uid(void)
{
    deferd_client *prod = client(&d), *a = client(&d), *b = client(&d);
    char id[DEFERD_ID_SIZE], first[DEFERD_ID_SIZE];
    deferd_job job;
    CHECK(put_job(prod, "a", "nacked", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(a, "a", 1) == DEFERD_OK);
    CHECK(next_job_push(a, &job, 10000) == 0 && job.attempt == 1);
    CHECK_STR(job.id, id);
    CHECK(deferd_nack(a, job.id, 100) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(next_job_push(a, &job, 10000) == 0 && job.attempt == 2);
    CHECK(strcmp(job.id, id) != 0 && same_uid(job.id, id));
    snprintf(first, sizeof first, "%s", job.id);
    deferd_job_clear(&job);
    deferd_close(a); /* holds it unanswered: released, delivered again */
    CHECK(deferd_subscribe(b, "a", 1) == DEFERD_OK);
    CHECK(next_job_push(b, &job, 10000) == 0 && job.attempt == 3);
    CHECK_STR(job.id, first);
    CHECK(deferd_ack(b, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    deferd_close(prod);
    deferd_close(b);
}

/* RESCHEDULE moves it under the same uid; to its own due time it stays where it is. */
static void reschedule_keeps_uid(zhandle_t *zh)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], moved[DEFERD_ID_SIZE], again[DEFERD_ID_SIZE];
    int64_t at = now_ms() + 3600 * 1000;
    CHECK(put_job(prod, "b", "later", -1, at, -1, id) == 0);
    CHECK(deferd_reschedule(prod, id, NULL, NULL, 1, (uint64_t)at + 1000, 0, moved,
                            sizeof moved) == DEFERD_OK);
    CHECK(strcmp(moved, id) != 0 && same_uid(moved, id));
    CHECK(zk_job_exists(zh, root, moved) && !zk_job_exists(zh, root, id));
    char path[512];
    struct Stat before = {0}, after = {0};
    CHECK(job_path(root, moved, path, sizeof path) == 0);
    CHECK(zoo_exists(zh, path, 0, &before) == ZOK);
    CHECK(deferd_reschedule(prod, moved, NULL, NULL, 1, (uint64_t)at + 1000, 0, again,
                            sizeof again) == DEFERD_OK);
    CHECK_STR(again, moved);
    /* the very znode: not deleted and made again under the same name */
    CHECK(zoo_exists(zh, path, 0, &after) == ZOK && after.czxid == before.czxid);
    CHECK(deferd_cancel(prod, moved, NULL, NULL, 0, NULL, 0) == DEFERD_OK);
    deferd_close(prod);
}

/* Reads one line from FD within MS into BUF (without its '\n'); its length, or -1. */
static int read_line(int fd, char *buf, size_t len, int ms)
{
    size_t n = 0;
    int64_t until = now_ms() + ms;
    while (n + 1 < len && now_ms() < until) {
        ssize_t got = read(fd, buf + n, 1);
        if (got == 1 && buf[n] == '\n') {
            buf[n] = '\0';
            return (int)n;
        }
        if (got == 1)
            n++;
        else if (got < 0)
            usleep(5000); /* non-blocking: nothing yet, the deadline bounds the loop */
        else
            return -1;
    }
    return -1;
}

/* A raw connection that sent SUB (answered OK) and got a push: its first line into LINE. */
static int raw_sub(const char *sub, char *line, size_t len)
{
    int fd = raw_connect(&d);
    CHECK(fd >= 0);
    if (fd < 0)
        return -1;
    fcntl(fd, F_SETFL, O_NONBLOCK);
    CHECK(write(fd, sub, strlen(sub)) == (ssize_t)strlen(sub));
    CHECK(read_line(fd, line, len, 10000) >= 0);
    CHECK_STR(line, "OK");
    CHECK(read_line(fd, line, len, 10000) > 0);
    return fd;
}

/* On the wire: uid= after the length only for a consumer that asked with SUB uid=1. */
static void push_carries_uid(void)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], uid[DEFERD_UID_SIZE], line[512], want[600];
    CHECK(put_job(prod, "emails", "x", 0, -1, -1, id) == 0);
    CHECK(deferd_job_uid(id, uid, sizeof uid) == DEFERD_OK);
    int fd = raw_sub("SUB emails uid=1\n", line, sizeof line);
    if (fd < 0)
        return;
    snprintf(want, sizeof want, " 1 uid=%s", uid);
    CHECK(strncmp(line, "JOB ", 4) == 0 && strstr(line, id) != NULL);
    CHECK(strlen(line) > strlen(want) && strcmp(line + strlen(line) - strlen(want), want) == 0);
    close(fd); /* released unanswered: delivered again to the next consumer */
    if ((fd = raw_sub("SUB emails\n", line, sizeof line)) < 0)
        return;
    CHECK(strncmp(line, "JOB ", 4) == 0 && strstr(line, "uid=") == NULL);
    CHECK(strlen(line) > 3 && strcmp(line + strlen(line) - 2, " 1") == 0); /* ends at length */
    snprintf(want, sizeof want, "ACK %s\n", id);
    CHECK(write(fd, want, strlen(want)) == (ssize_t)strlen(want));
    CHECK(read_line(fd, line, sizeof line, 10000) >= 0);
    CHECK_STR(line, "x"); /* the payload's line, then the ack's reply */
    CHECK(read_line(fd, line, sizeof line, 10000) >= 0);
    CHECK_STR(line, "OK");
    close(fd);
    deferd_close(prod);
}

/* deferctl: DEFERD_JOB_UID for work's command, uid in show and list. */
static void deferctl_shows_uid(void)
{
    deferd_client *prod = client(&d);
    char id[DEFERD_ID_SIZE], uid[DEFERD_UID_SIZE], out[8192], args[600], want[80];
    CHECK(put_job(prod, "b", "shown", -1, now_ms() + 3600 * 1000, -1, id) == 0);
    CHECK(deferd_job_uid(id, uid, sizeof uid) == DEFERD_OK);
    snprintf(args, sizeof args, "show %s", id);
    snprintf(want, sizeof want, "\nuid:      %s\n", uid);
    CHECK(run_deferctl(&d, args, out, sizeof out) == 0);
    CHECK_CONTAINS(out, want);
    snprintf(want, sizeof want, "\"uid\":\"%s\"", uid);
    CHECK(run_deferctl(&d, "list b --json", out, sizeof out) == 0);
    CHECK_CONTAINS(out, want);
    CHECK(run_deferctl(&d, "list b", out, sizeof out) == 0);
    CHECK_CONTAINS(out, uid);
    CHECK(deferd_cancel(prod, id, NULL, NULL, 0, NULL, 0) == DEFERD_OK);
    CHECK(put_job(prod, "emails", "worked", 0, -1, -1, id) == 0);
    CHECK(deferd_job_uid(id, uid, sizeof uid) == DEFERD_OK);
    CHECK(run_deferctl(&d, "work --queue emails --max-jobs 1 -- "
                           "sh -c 'echo \"uid=$DEFERD_JOB_UID id=$DEFERD_JOB_ID\"'",
                       out, sizeof out) == 0);
    snprintf(want, sizeof want, "uid=%s id=", uid);
    CHECK_CONTAINS(out, want);
    CHECK_CONTAINS(out, id);
    deferd_close(prod);
}

int main(void)
{
    harness_init("uid", root, sizeof root);
    if (daemon_start(&d, root, "d", NULL) != 0 || daemon_wait_connected(&d, 20000) != 0) {
        fprintf(stderr, "deferd did not start\n");
        return 1;
    }
    zhandle_t *zh = zk_connect();
    CHECK(zh != NULL);
    nack_and_crash_keep_uid();
    if (zh)
        reschedule_keeps_uid(zh);
    push_carries_uid();
    deferctl_shows_uid();
    if (zh)
        zookeeper_close(zh);
    daemon_kill(&d, SIGTERM);
    return check_report("uid");
}
