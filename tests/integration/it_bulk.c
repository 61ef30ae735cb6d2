/* deferctl's bulk commands (docs/deferctl.md) against real ZooKeeper: dead kick --all and
 * dead delete --all of a queue's dead letters, purge QUEUE --until TIME of its pending jobs.
 * Without --yes nothing changes; --dry-run lists exactly what --yes then does; a keyed job's
 * key is freed by the purge; a job a consumer holds is left alone (and its ack still works);
 * bad arguments are usage errors (exit 2). */
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

static struct daemon_proc d;
static char root[128];
static zhandle_t *zh;

static const char *const ov[] = {"queue b.max_attempts=1", NULL};

static int lines(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

static long dead_count(const char *queue)
{
    char out[4096], args[64];
    snprintf(args, sizeof args, "stats %s --json", queue);
    if (run_deferctl(&d, args, out, sizeof out) != 0)
        return -1;
    const char *at = strstr(out, "\"dead_letters\":");
    return at ? atol(at + strlen("\"dead_letters\":")) : -1;
}

static void dead_letters(void)
{
    char out[8192];
    CHECK(make_dead_letters(&d, "b", 3) == 0);
    CHECK(dead_count("b") == 3);
    CHECK(run_deferctl(&d, "dead delete --all b", out, sizeof out) == 2); /* no --yes */
    CHECK(dead_count("b") == 3);
    CHECK(run_deferctl(&d, "dead kick --all b --dry-run", out, sizeof out) == 0);
    CHECK(lines(out) == 3 && strstr(out, "b/") == out);
    CHECK(dead_count("b") == 3);
    CHECK(run_deferctl(&d, "dead kick --all b --yes --json", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "\"action\":\"kick\",\"dry_run\":false,\"matched\":3,\"done\":3,");
    CHECK(dead_count("b") == 0);
    CHECK(zk_count_jobs(zh, root, "b") == 3); /* back in the queue, due now */
    /* the kicked jobs die again (attempts from zero, max_attempts 1): then delete them all */
    deferd_client *c = client(&d);
    CHECK(deferd_subscribe(c, "b", 3) == DEFERD_OK);
    for (int i = 0; i < 3; i++) {
        deferd_job job;
        memset(&job, 0, sizeof job);
        CHECK(next_job_push(c, &job, 10000) == 0 && job.attempt == 1);
        CHECK(deferd_nack(c, job.id, 0) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    deferd_close(c);
    CHECK(dead_count("b") == 3);
    CHECK(run_deferctl(&d, "dead delete --all b --yes", out, sizeof out) == 0);
    CHECK(lines(out) == 3);
    CHECK(dead_count("b") == 0 && zk_count_jobs(zh, root, "b") == 0);
    CHECK(run_deferctl(&d, "dead delete --all b --yes", out, sizeof out) == 0); /* none: fine */
}

static void purge(void)
{
    char out[16384], keyed[DEFERD_ID_SIZE + 2], again[DEFERD_ID_SIZE + 2], id[DEFERD_ID_SIZE];
    deferd_client *prod = client(&d), *cons = client(&d);
    for (int i = 0; i < 5; i++)
        CHECK(put_job(prod, "a", "soon", 10 * 60000, -1, -1, id) == 0);
    for (int i = 0; i < 4; i++)
        CHECK(put_job(prod, "a", "later", 2 * 3600000, -1, -1, id) == 0);
    CHECK(run_deferctl(&d, "put --queue a --key k1 --delay 5m keyed", keyed, sizeof keyed) == 0);
    CHECK(put_job(prod, "a", "held", 0, -1, -1, id) == 0);
    CHECK(deferd_subscribe(cons, "a", 1) == DEFERD_OK);
    deferd_job held;
    memset(&held, 0, sizeof held);
    CHECK(next_job_push(cons, &held, 10000) == 0);
    CHECK(zk_count_jobs(zh, root, "a") == 11);

    CHECK(run_deferctl(&d, "purge a --until now+1h", out, sizeof out) == 2); /* no --yes */
    CHECK(run_deferctl(&d, "purge a --until now+1h --dry-run", out, sizeof out) == 0);
    CHECK(lines(out) == 7); /* 5 soon, the keyed one, the held one */
    CHECK(zk_count_jobs(zh, root, "a") == 11);
    CHECK(run_deferctl(&d, "purge a --until now+1h --yes --json", out, sizeof out) == 0);
    printf("purge: %s", out);
    CHECK_CONTAINS(out, "\"matched\":7,\"done\":6,\"gone\":0,\"held\":1,\"failed\":0,");
    CHECK(zk_count_jobs(zh, root, "a") == 5); /* the 4 later ones and the held one */
    CHECK(deferd_ack(cons, held.id) == DEFERD_OK);
    deferd_job_clear(&held);
    CHECK(zk_count_jobs(zh, root, "a") == 4);
    /* the key went with its job: the same key now makes a new job */
    CHECK(run_deferctl(&d, "put --queue a --key k1 --delay 5m keyed", again, sizeof again) == 0);
    CHECK(strcmp(again, keyed) != 0);
    deferd_close(prod);
    deferd_close(cons);
}

static void usage_errors(void)
{
    char out[4096];
    CHECK(run_deferctl(&d, "purge a", out, sizeof out) == 2);
    CHECK(run_deferctl(&d, "purge a --until now --dry-run --yes", out, sizeof out) == 2);
    CHECK(run_deferctl(&d, "purge a --until soon --yes", out, sizeof out) == 2);
    CHECK(run_deferctl(&d, "purge a --from now --until now-1h --yes", out, sizeof out) == 2);
    CHECK(run_deferctl(&d, "dead kick --all", out, sizeof out) == 2);
    CHECK(run_deferctl(&d, "dead kick --all 'bad queue'", out, sizeof out) == 2);
    CHECK(run_deferctl(&d, "purge nosuchqueue --until now --yes", out, sizeof out) == 1);
    CHECK(run_deferctl(&d, "purge --help", out, sizeof out) == 0);
    CHECK_CONTAINS(out, "purge QUEUE --until TIME");
}

int main(void)
{
    harness_init("bulk", root, sizeof root);
    harness_root_layout(root, 2); /* it counts held jobs in their buckets (claimed ones leave them) */
    CHECK(daemon_start(&d, root, "bulk", ov) == 0 && daemon_wait_connected(&d, 15000) == 0);
    zh = zk_connect();
    dead_letters();
    purge();
    usage_errors();
    zookeeper_close(zh);
    daemon_kill(&d, SIGTERM);
    return check_report("it_bulk");
}
