/* Groups (PUT group=, docs/limits.md): the group is part of the job's id and reaches the
 * consumer (deferd_job_group, DEFERD_GROUP of deferctl work, deferctl put --group); a bad
 * group is refused; and the groups of a queue take turns: three small groups put after one
 * big group are delivered within the first rounds, not after the big group's 30 jobs. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct daemon_proc d;
static char root[128];

/* Due at one past instant: every job of a test in one bucket, listed together. */
static uint64_t at_ms;

static int put_group(deferd_client *p, const char *group, const char *payload, char *id)
{
    deferd_put_opts o = {.group = group, .has_at = at_ms != 0, .at_ms = at_ms};
    return deferd_put(p, "a", payload, strlen(payload), &o, id, DEFERD_ID_SIZE);
}

static void group_reaches_consumer(void)
{
    deferd_client *p = client(&d), *c = client(&d);
    char id[DEFERD_ID_SIZE], group[DEFERD_GROUP_MAX + 1];
    CHECK(put_group(p, "stripe-17", "g", id) == DEFERD_OK);
    CHECK(strstr(id, "-gstripe~17") != NULL);
    CHECK(deferd_subscribe(c, "a", 1) == DEFERD_OK);
    deferd_job job = {0};
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, id);
    CHECK(deferd_job_group(job.id, group, sizeof group) == DEFERD_OK);
    CHECK_STR(group, "stripe-17");
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    /* the client refuses a bad group itself; the daemon too, for a client that does not */
    deferd_put_opts o = {.group = "bad group"};
    CHECK(deferd_put(p, "a", "x", 1, &o, id, sizeof id) == DEFERD_EARG);
    char out[512];
    CHECK(raw_request(&d, "PUT a 1 group=-x\nx\n", 1, out, sizeof out, 5000) == 1);
    CHECK_CONTAINS(out, "ERR BAD_REQUEST");
    CHECK_CONTAINS(out, "bad group '-x'");
    deferd_close(c);
    deferd_close(p);
}

/* deferctl put --group, and deferctl work's DEFERD_GROUP. */
static void deferctl_group(void)
{
    char out[512], args[700], file[300];
    snprintf(file, sizeof file, "%s/group.out", d.dir);
    CHECK(run_deferctl(&d, "put --queue a --group tenant.9 hello", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "-gtenant.9");
    snprintf(args, sizeof args, "work --queue a --max-jobs 1 -- sh -c 'echo \"$DEFERD_GROUP\" > %s'",
             file);
    CHECK(run_deferctl(&d, args, out, sizeof out) == 0);
    FILE *f = fopen(file, "r");
    char line[64] = "";
    CHECK(f && fgets(line, sizeof line, f));
    if (f)
        fclose(f);
    CHECK_STR(line, "tenant.9\n");
}

/* 30 jobs of group big, then one each of s1, s2, s3, all due before anyone consumes: the
 * small ones come within the first two rounds (of four groups), not after the 30. */
static void turns(void)
{
    deferd_client *p = client(&d), *c = client(&d);
    char id[DEFERD_ID_SIZE];
    at_ms = (uint64_t)now_ms() / 100 * 100 - 1000;
    for (int i = 0; i < 30; i++)
        CHECK(put_group(p, "big", "big", id) == DEFERD_OK);
    CHECK(put_group(p, "s1", "small", id) == DEFERD_OK);
    CHECK(put_group(p, "s2", "small", id) == DEFERD_OK);
    CHECK(put_group(p, "s3", "small", id) == DEFERD_OK);
    CHECK(deferd_subscribe(c, "a", 1) == DEFERD_OK);
    int small_at[3] = {0}, n = 0;
    deferd_job job;
    while (n < 33 && deferd_next_job(c, &job, 10000) == DEFERD_OK) {
        n++;
        char group[DEFERD_GROUP_MAX + 1];
        if (deferd_job_group(job.id, group, sizeof group) == DEFERD_OK && group[0] == 's')
            small_at[group[1] - '1'] = n;
        CHECK(deferd_ack(c, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    printf("turns: the small groups' jobs came %d, %d and %d of %d\n", small_at[0], small_at[1],
           small_at[2], n);
    CHECK(n == 33);
    for (int i = 0; i < 3; i++)
        CHECK(small_at[i] >= 1 && small_at[i] <= 8);
    deferd_close(c);
    deferd_close(p);
}

int main(void)
{
    harness_init("groups", root, sizeof root);
    if (daemon_start(&d, root, "g1", NULL) != 0)
        return 1;
    CHECK(daemon_wait_connected(&d, 15000) == 0);
    group_reaches_consumer();
    deferctl_group();
    turns();
    daemon_kill(&d, SIGTERM);
    return check_report("it_groups");
}
