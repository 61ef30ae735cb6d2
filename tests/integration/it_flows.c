/* Flows (FLOW, docs/flows.md): a parent stored waiting in <root>/flows/<uid> until its
 * children are settled, then created as a job by the transaction of its last child,
 * whichever daemon settles it. Two daemons on one root: the parent is not a job while any
 * child is pending (judged in ZooKeeper), becomes one with the last child's ack, and is
 * delivered once with its own id and payload; the flow's nodes are gone after. on=success
 * with a dead child sends the parent to the dead letters, on=complete delivers it. Children
 * of one flow acked at once on both daemons: counted once each (the flow's node is set by
 * version; a daemon that loses reads again), the parent delivered once. Refusals: key= in a
 * flow, one job alone. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "httpget.h"

static struct daemon_proc d[2];
static char root[128];
static zhandle_t *zh;
static deferd_client *ce_global; /* the consumer of emails (max_attempts 1) */
static const char *const overrides[] = {"queue.emails.max_attempts=1", "web.dashboard=on",
                                        NULL};

/* Sends a FLOW of a parent in PQ and N children in CQ (payloads "c<i>"); ids into IDS
 * (the parent's first). 0 when stored. */
static int put_flow(const char *on, const char *pq, const char *cq, int n,
                    char ids[][DEFERD_ID_SIZE])
{
    char req[8192], out[8192];
    int k = snprintf(req, sizeof req, "FLOW %d%s%s\nPUT %s 6\nparent\n", n + 1, on ? " on=" : "",
                     on ? on : "", pq);
    for (int i = 0; i < n; i++)
        k += snprintf(req + k, sizeof req - (size_t)k, "PUT %s %d\nc%d\n", cq,
                      i < 10 ? 2 : 3, i);
    if (raw_request(&d[0], req, 1, out, sizeof out, 10000) != 1 || strncmp(out, "OK n=", 5)) {
        printf("flow: %s", out);
        return -1;
    }
    char *p = strstr(out, "ids=");
    CHECK(p != NULL);
    p = p ? p + 4 : out;
    for (int i = 0; i <= n; i++) {
        size_t len = strcspn(p, ", \r\n");
        if (len == 0 || len >= DEFERD_ID_SIZE)
            return -1;
        memcpy(ids[i], p, len);
        ids[i][len] = '\0';
        p += len + (p[len] == ',');
    }
    return 0;
}

static int flow_node(const char *parent_id, char *data, size_t len)
{
    char path[400];
    const char *uid = strrchr(parent_id, '/') + 1; /* <due>-<prio>-<uid>... */
    const char *u = strchr(strchr(uid, '-') + 1, '-') + 1;
    snprintf(path, sizeof path, "%s/flows/%.*s", root, (int)strcspn(u, "-"), u);
    return zk_get(zh, path, data, len);
}

/* Takes N jobs of QUEUE from C and acks (or nacks, NACK) each. */
static int settle_jobs(deferd_client *c, int n, int nack)
{
    deferd_job job;
    int done = 0;
    for (int64_t until = now_ms() + 10000; done < n && now_ms() < until;)
        if (deferd_next_job(c, &job, 100) == DEFERD_OK) {
            int rc = nack ? deferd_nack(c, job.id, -1) : deferd_ack(c, job.id);
            if (rc != DEFERD_OK)
                printf("flows: settling %s: %s\n", job.id, deferd_last_error(c));
            CHECK(rc == DEFERD_OK);
            deferd_job_clear(&job);
            done++;
        }
    return done;
}

/* A parent in b waits for three children in a; two acked: still waiting; the last: the
 * parent is a job, delivered once, and the flow leaves nothing behind. */
static void fan_in(deferd_client *ca, deferd_client *cb)
{
    char ids[4][DEFERD_ID_SIZE], data[512];
    CHECK(put_flow(NULL, "b", "a", 3, ids) == 0);
    CHECK(flow_node(ids[0], data, sizeof data) > 0);
    CHECK_CONTAINS(data, "on=success pending=3 acked=0 dead=0");
    CHECK(zk_count_jobs(zh, root, "b") == 0 && zk_count_jobs(zh, root, "a") == 3);
    /* deferctl show: the parent waits, its three children not acked yet; a child names it.
     * ca is subscribed to their queue: each is pending, or held once delivered to it. */
    char args[300], out[4096];
    snprintf(args, sizeof args, "show %s", ids[0]);
    CHECK(run_deferctl(&d[0], args, out, sizeof out) == 0);
    CHECK_CONTAINS(out, "state:    waiting-for-children");
    CHECK_CONTAINS(out, "every child is acked: 3 pending, 0 acked, 0 dead");
    for (int i = 1; i <= 3; i++) {
        char line[300];
        snprintf(line, sizeof line, "child:    %s ", ids[i]);
        const char *at = strstr(out, line);
        CHECK(at && (strncmp(at + strlen(line), "pending\n", 8) == 0 ||
                     strncmp(at + strlen(line), "held\n", 5) == 0));
    }
    CHECK(strstr(out, "\n\nparent") != NULL); /* its payload */
    snprintf(args, sizeof args, "show %s --json", ids[0]);
    CHECK(run_deferctl(&d[0], args, out, sizeof out) == 0);
    CHECK_CONTAINS(out, "\"flow\":{\"on\":\"success\",\"pending\":3,\"acked\":0");
    snprintf(args, sizeof args, "show %s", ids[1]);
    CHECK(run_deferctl(&d[0], args, out, sizeof out) == 0);
    char named[300];
    snprintf(named, sizeof named, "flow:     a child of %s", ids[0]);
    CHECK_CONTAINS(out, named);
    /* the dashboard's job page and its API say the same */
    char *body = NULL;
    snprintf(args, sizeof args, "/ui/job?id=%s", ids[0]);
    CHECK(http_request(metrics_port_in_log(d[0].log), "GET", args, 10000, &body, NULL, 0) ==
          200);
    CHECK(body && strstr(body, "waiting-for-children") &&
          strstr(body, "data-pending=\"3\" data-acked=\"0\"") && strstr(body, ids[2]));
    free(body);
    body = NULL;
    snprintf(args, sizeof args, "/api/v1/job?id=%s", ids[1]);
    CHECK(http_request(metrics_port_in_log(d[0].log), "GET", args, 10000, &body, NULL, 0) ==
          200);
    snprintf(named, sizeof named, "\"flow_parent\":\"%s\"", ids[0]);
    CHECK(body && strstr(body, named));
    free(body);
    CHECK(settle_jobs(ca, 2, 0) == 2);
    CHECK(flow_node(ids[0], data, sizeof data) > 0);
    CHECK_CONTAINS(data, "pending=1 acked=2 dead=0");
    CHECK(zk_count_jobs(zh, root, "b") == 0); /* not a job while a child is pending */
    CHECK(settle_jobs(ca, 1, 0) == 1);
    CHECK(zk_count_jobs(zh, root, "b") == 1 && flow_node(ids[0], data, sizeof data) < 0);
    deferd_job job;
    CHECK(deferd_next_job(cb, &job, 5000) == DEFERD_OK);
    CHECK_STR(job.id, ids[0]);
    CHECK(job.len == 6 && memcmp(job.payload, "parent", 6) == 0);
    CHECK(deferd_ack(cb, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(deferd_next_job(cb, &job, 300) != DEFERD_OK); /* once */
}

/* on=success: a dead child sends the parent to the dead letters; on=complete: delivered. */
static void dead_child(deferd_client *ce, deferd_client *cb)
{
    char ids[3][DEFERD_ID_SIZE], data[512];
    CHECK(put_flow(NULL, "b", "emails", 2, ids) == 0);
    CHECK(settle_jobs(ce, 1, 1) == 1); /* max_attempts 1: dead-lettered */
    CHECK(flow_node(ids[0], data, sizeof data) > 0);
    CHECK_CONTAINS(data, "pending=1 acked=0 dead=1");
    CHECK(settle_jobs(ce, 1, 0) == 1);
    char out[256];
    CHECK(run_deferctl(&d[0], "dead list b", out, sizeof out) == 0);
    CHECK(strstr(out, strchr(ids[0], '/') + 1) != NULL);
    CHECK(zk_count_jobs(zh, root, "b") == 0 && flow_node(ids[0], data, sizeof data) < 0);
    CHECK(put_flow("complete", "b", "emails", 2, ids) == 0);
    CHECK(settle_jobs(ce, 1, 1) == 1 && settle_jobs(ce, 1, 0) == 1);
    deferd_job job;
    unsigned long acked = 0, dead = 0;
    char want[DEFERD_ID_SIZE + 16], uid[DEFERD_UID_SIZE], puid[DEFERD_UID_SIZE];
    CHECK(deferd_next_job(cb, &job, 5000) == DEFERD_OK);
    snprintf(want, sizeof want, "%s-r1.1", ids[0]); /* how its children ended, in its id */
    CHECK_STR(job.id, want);
    CHECK(deferd_job_flow_results(job.id, &acked, &dead) == 1 && acked == 1 && dead == 1);
    CHECK(deferd_job_uid(job.id, uid, sizeof uid) == 0 &&
          deferd_job_uid(ids[0], puid, sizeof puid) == 0);
    CHECK_STR(uid, puid);
    CHECK(deferd_job_flow_results(ids[0], &acked, &dead) == 0); /* as put: none yet */
    char args[DEFERD_ID_SIZE + 32], shown[4096];
    snprintf(args, sizeof args, "show %s", ids[0]); /* the id FLOW gave finds it */
    CHECK(run_deferctl(&d[0], args, shown, sizeof shown) == 0);
    snprintf(args, sizeof args, "id:       %s\n", want);
    CHECK_CONTAINS(shown, args);
    CHECK_CONTAINS(shown, "flow:     released by its children: 1 acked, 1 dead\n");
    snprintf(args, sizeof args, "show --json %s", ids[0]);
    CHECK(run_deferctl(&d[0], args, shown, sizeof shown) == 0);
    CHECK_CONTAINS(shown, "\"flow_results\":{\"acked\":1,\"dead\":1}");
    char *body = NULL; /* the dashboard's job page says it too */
    snprintf(args, sizeof args, "/ui/job?id=%s", ids[0]);
    CHECK(http_request(metrics_port_in_log(d[0].log), "GET", args, 10000, &body, NULL, 0) ==
          200);
    CHECK(body && strstr(body, "data-flow-acked=\"1\" data-flow-dead=\"1\"") &&
          strstr(body, want));
    free(body);
    CHECK(deferd_nack(cb, job.id, 50) == DEFERD_OK); /* moved: it keeps its results */
    deferd_job_clear(&job);
    CHECK(deferd_next_job(cb, &job, 5000) == DEFERD_OK);
    CHECK(deferd_job_flow_results(job.id, &acked, &dead) == 1 && acked == 1 && dead == 1);
    CHECK(job.attempt == 2);
    CHECK(deferd_ack(cb, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
}

/* 40 children acked by consumers of both daemons at once: each counted once, the parent
 * created once, by whichever daemon acked the last. */
static void contended(deferd_client **ca, deferd_client *cb)
{
    enum { N = 40 };
    char ids[N + 1][DEFERD_ID_SIZE], data[512];
    CHECK(deferd_subscribe(ca[1], "a", 8) == DEFERD_OK);
    CHECK(put_flow(NULL, "b", "a", N, ids) == 0);
    int done = 0;
    deferd_job job;
    for (int64_t until = now_ms() + 20000; done < N && now_ms() < until;)
        for (int k = 0; k < 2; k++)
            if (deferd_next_job(ca[k], &job, 20) == DEFERD_OK) {
                CHECK(deferd_ack(ca[k], job.id) == DEFERD_OK);
                deferd_job_clear(&job);
                done++;
            }
    CHECK(done == N);
    CHECK(deferd_next_job(cb, &job, 5000) == DEFERD_OK);
    CHECK_STR(job.id, ids[0]);
    CHECK(deferd_ack(cb, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(deferd_next_job(cb, &job, 300) != DEFERD_OK);
    CHECK(flow_node(ids[0], data, sizeof data) < 0);
    printf("flows: %d children acked on two daemons, the parent delivered once\n", N);
}

/* deferctl put --flow FILE (libdeferd's deferd_put_flow): the parent's id first. */
static void deferctl_flow(deferd_client *ca, deferd_client *cb)
{
    char file[300], out[2048], args[400], data[512];
    snprintf(file, sizeof file, "%s/flow.txt", d[0].dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("# the parent first\nqueue=b prio=3 payload=the parent\nqueue=a payload=one\n"
          "queue=a payload64=dHdv\n", f);
    fclose(f);
    snprintf(args, sizeof args, "put --flow %s --on complete", file);
    CHECK(run_deferctl(&d[0], args, out, sizeof out) == 0);
    char parent[DEFERD_ID_SIZE];
    snprintf(parent, sizeof parent, "%.*s", (int)strcspn(out, "\n"), out);
    CHECK(strncmp(parent, "b/", 2) == 0 && strstr(out, "\na/") != NULL);
    CHECK(flow_node(parent, data, sizeof data) > 0);
    CHECK_CONTAINS(data, "on=complete pending=2 acked=0 dead=0 parent=b/");
    CHECK(settle_jobs(ca, 2, 0) == 2);
    deferd_job job;
    CHECK(deferd_next_job(cb, &job, 5000) == DEFERD_OK);
    strcat(parent, "-r2.0");
    CHECK_STR(job.id, parent);
    CHECK(job.len == 10 && memcmp(job.payload, "the parent", 10) == 0);
    CHECK(deferd_ack(cb, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    snprintf(args, sizeof args, "put --flow %s --json", file); /* the ids as JSON */
    CHECK(run_deferctl(&d[0], args, out, sizeof out) == 0);
    CHECK(strncmp(out, "{\"parent\":\"b/", 13) == 0 && strstr(out, "\"children\":[\"a/") &&
          strstr(out, "],\"stored\":true}"));
    CHECK(settle_jobs(ca, 2, 0) == 2);
    CHECK(deferd_next_job(cb, &job, 5000) == DEFERD_OK && strstr(out, strchr(job.id, '/')));
    CHECK(deferd_ack(cb, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    snprintf(args, sizeof args, "put --flow %s --queue a", file);
    CHECK(run_deferctl(&d[0], args, out, sizeof out) == 2);
    CHECK(run_deferctl(&d[0], "put --queue a --on complete x", out, sizeof out) == 2);
}

/* Two levels: report <- sections <- pages (parent= names a section). A section is released
 * by its last page, the report by its last section. */
static void nested(deferd_client *ca, deferd_client *cb)
{
    char out[4096], data[512], ids[6][DEFERD_ID_SIZE];
    const char req[] = "FLOW 6\nPUT b 6\nreport\nPUT b 1\nA\nPUT b 1\nB\n"
                       "PUT a 2 parent=2\na1\nPUT a 2 parent=2\na2\nPUT a 2 parent=3\nb1\n";
    CHECK(raw_request(&d[0], req, 1, out, sizeof out, 5000) == 1);
    CHECK(strncmp(out, "OK n=6 ids=", 11) == 0);
    char *p = out + 11;
    for (int i = 0; i < 6; i++) {
        size_t len = strcspn(p, ", \r\n");
        snprintf(ids[i], sizeof ids[i], "%.*s", (int)len, p);
        p += len + 1;
    }
    CHECK(strstr(ids[1], "-f") != NULL && strstr(ids[3], "-f") != NULL);
    CHECK(flow_node(ids[1], data, sizeof data) > 0);
    CHECK_CONTAINS(data, "pending=2");
    CHECK(flow_node(ids[0], data, sizeof data) > 0);
    CHECK_CONTAINS(data, "pending=2");
    deferd_job job;
    int acked_a = 0, got_b1 = 0;
    for (int64_t until = now_ms() + 10000; (acked_a < 2 || !got_b1) && now_ms() < until;)
        if (deferd_next_job(ca, &job, 100) == DEFERD_OK) {
            if (job.payload[0] == 'a')
                acked_a++;
            else
                CHECK_STR(job.id, ids[5]); /* b1: held until section A is done */
            got_b1 += job.payload[0] == 'b';
            if (job.payload[0] == 'a')
                CHECK(deferd_ack(ca, job.id) == DEFERD_OK);
            deferd_job_clear(&job);
        }
    CHECK(acked_a == 2 && got_b1 == 1);
    CHECK(deferd_next_job(cb, &job, 5000) == DEFERD_OK); /* section A, released */
    CHECK_STR(job.id, ids[1]);
    CHECK(flow_node(ids[0], data, sizeof data) > 0 && zk_count_jobs(zh, root, "b") == 1);
    CHECK(deferd_ack(cb, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(flow_node(ids[0], data, sizeof data) > 0);
    CHECK_CONTAINS(data, "pending=1 acked=1");
    CHECK(deferd_ack(ca, ids[5]) == DEFERD_OK); /* b1: section B released */
    CHECK(deferd_next_job(cb, &job, 5000) == DEFERD_OK);
    CHECK_STR(job.id, ids[2]);
    CHECK(deferd_ack(cb, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(deferd_next_job(cb, &job, 5000) == DEFERD_OK); /* the report */
    CHECK_STR(job.id, ids[0]);
    CHECK(deferd_ack(cb, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    /* a dead page: its section dead-lettered, counted dead in the report's flow; the
     * report dead-lettered once its other child is acked (on=success) */
    const char dreq[] = "FLOW 4\nPUT b 6\nreport\nPUT b 1\nS\nPUT emails 1 parent=2\np\n"
                        "PUT a 1\no\n";
    CHECK(raw_request(&d[0], dreq, 1, out, sizeof out, 5000) == 1);
    CHECK(strncmp(out, "OK n=4 ids=", 11) == 0);
    snprintf(ids[0], sizeof ids[0], "%.*s", (int)strcspn(out + 11, ","), out + 11);
    CHECK(settle_jobs(ce_global, 1, 1) == 1); /* the page, dead */
    CHECK(flow_node(ids[0], data, sizeof data) > 0);
    CHECK_CONTAINS(data, "pending=1 acked=0 dead=1");
    CHECK(settle_jobs(ca, 1, 0) == 1);
    CHECK(flow_node(ids[0], data, sizeof data) < 0);
    CHECK(run_deferctl(&d[0], "dead list b", out, sizeof out) == 0);
    CHECK(strstr(out, strchr(ids[0], '/') + 1) != NULL);
    CHECK(zk_count_jobs(zh, root, "b") == 0);
}

/* CANCEL: a child is refused (its parent waits for it); the top parent cancels the flow:
 * its nodes go, its children run on and are settled as plain jobs. */
static void cancels(deferd_client *ca, deferd_client *cb)
{
    char out[4096], req[600], ids[3][DEFERD_ID_SIZE], data[512];
    const char flow[] = "FLOW 3\nPUT b 1\nP\nPUT a 1 delay=600000\nx\nPUT a 1 delay=600000\ny\n";
    CHECK(raw_request(&d[0], flow, 1, out, sizeof out, 5000) == 1);
    CHECK(strncmp(out, "OK n=3 ids=", 11) == 0);
    char *p = out + 11;
    for (int i = 0; i < 3; i++) {
        size_t len = strcspn(p, ", \r\n");
        snprintf(ids[i], sizeof ids[i], "%.*s", (int)len, p);
        p += len + 1;
    }
    snprintf(req, sizeof req, "CANCEL %s\n", ids[1]);
    CHECK(raw_request(&d[1], req, 1, out, sizeof out, 5000) == 1);
    CHECK_CONTAINS(out, "ERR BAD_REQUEST job");
    CHECK_CONTAINS(out, "is a child in a flow");
    CHECK(zk_job_exists(zh, root, ids[1]));
    snprintf(req, sizeof req, "CANCEL %s\n", ids[0]);
    CHECK(raw_request(&d[1], req, 1, out, sizeof out, 5000) == 1);
    CHECK(strncmp(out, "OK ", 3) == 0 && strstr(out, ids[0]) != NULL);
    CHECK(flow_node(ids[0], data, sizeof data) < 0);
    CHECK(zk_job_exists(zh, root, ids[1]) && zk_job_exists(zh, root, ids[2]));
    CHECK(raw_request(&d[1], req, 1, out, sizeof out, 5000) == 1);
    CHECK_CONTAINS(out, "ERR NOT_FOUND");
    for (int i = 1; i < 3; i++) { /* due now: delivered and acked as plain jobs */
        snprintf(req, sizeof req, "RESCHEDULE %s delay=0\n", ids[i]);
        CHECK(raw_request(&d[0], req, 1, out, sizeof out, 5000) == 1);
        CHECK(strncmp(out, "OK ", 3) == 0);
    }
    deferd_job job; /* a child of the cancelled flow cannot grow it; still held, acked */
    CHECK(deferd_next_job(ca, &job, 5000) == DEFERD_OK);
    deferd_put_item it = {.queue = "a", .payload = "z", .len = 1};
    CHECK(deferd_ack_join(ca, job.id, &it, 1) == DEFERD_ESERVER);
    CHECK_CONTAINS(deferd_last_error(ca), "its flow is gone");
    CHECK(deferd_ack(ca, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(settle_jobs(ca, 1, 0) == 1);
    CHECK(deferd_next_job(cb, &job, 500) != DEFERD_OK); /* no parent */
    CHECK(zk_count_jobs(zh, root, "a") == 0 && zk_count_jobs(zh, root, "b") == 0);
}

/* A crawler: the flow starts with one seed; each page acked with join=1 adds the links it
 * found to the flow, in its ack's transaction; the parent waits for all of them. */
static void crawler(deferd_client *ca, deferd_client *cb)
{
    char ids[2][DEFERD_ID_SIZE], data[512];
    CHECK(put_flow(NULL, "b", "a", 1, ids) == 0);
    deferd_job job;
    int pages = 0, links = 0;
    while (pages < 7 && deferd_next_job(ca, &job, 5000) == DEFERD_OK) {
        pages++;
        /* the seed finds 3 links, each of those 1 more (1 + 3 + 3 pages in all) */
        int found = job.payload[0] == 'c' ? 3 : job.payload[0] == 'l' ? 1 : 0;
        deferd_put_item items[3];
        for (int i = 0; i < found; i++)
            items[i] = (deferd_put_item){.queue = "a", .payload = found == 3 ? "l" : "m",
                                         .len = 1};
        int rc = found ? deferd_ack_join(ca, job.id, items, (size_t)found)
                       : deferd_ack(ca, job.id);
        if (rc != DEFERD_OK)
            printf("flows: crawler ack: %s\n", deferd_last_error(ca));
        CHECK(rc == DEFERD_OK);
        links += found;
        char tag[40];
        char uid[DEFERD_UID_SIZE] = "";
        CHECK(deferd_job_uid(ids[0], uid, sizeof uid) == 0);
        snprintf(tag, sizeof tag, "-f%s", uid); /* the parent's uid */
        for (int i = 0; i < found; i++)
            CHECK(strstr(items[i].id, tag) != NULL);
        deferd_job_clear(&job);
        if (pages == 1) {
            CHECK(flow_node(ids[0], data, sizeof data) > 0);
            CHECK_CONTAINS(data, "pending=3 acked=1");
        }
    }
    CHECK(pages == 7 && links == 6);
    CHECK(deferd_next_job(cb, &job, 5000) == DEFERD_OK);
    CHECK_STR(job.id, ids[0]);
    CHECK(deferd_ack(cb, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(flow_node(ids[0], data, sizeof data) < 0);
    /* join=1 of a job in no flow, and a follow-up with a key that would join */
    char id[DEFERD_ID_SIZE];
    CHECK(put_job(ca, "a", "plain", 0, -1, -1, id) == 0);
    CHECK(deferd_next_job(ca, &job, 5000) == DEFERD_OK);
    deferd_put_item it = {.queue = "a", .payload = "x", .len = 1};
    CHECK(deferd_ack_join(ca, job.id, &it, 1) == DEFERD_ESERVER);
    CHECK_CONTAINS(deferd_last_error(ca), "is not a flow's child");
    it.opts.key = "k1";
    CHECK(deferd_ack_join(ca, job.id, &it, 1) == DEFERD_EARG);
    CHECK(deferd_ack(ca, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
}

/* A number of daemon K's STATS line, or -1. */
static long stat_of(int k, const char *field)
{
    char out[8192], key[64];
    if (raw_request(&d[k], "STATS\n", 1, out, sizeof out, 5000) != 1)
        return -1;
    snprintf(key, sizeof key, " %s=", field);
    if (getenv("FLOWS_TRACE"))
        printf("STATS %d: %s\n", k, out);
    const char *p = strstr(out, key);
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static void refusals(void)
{
    char out[512];
    CHECK(raw_request(&d[0], "FLOW 2\nPUT b 1\np\nPUT a 1 key=k1\nc\n", 1, out, sizeof out,
                      5000) == 1);
    CHECK_CONTAINS(out, "ERR BAD_REQUEST item 2: a FLOW's jobs take no key=");
    CHECK(raw_request(&d[0], "FLOW 1\nPUT b 1\np\nPING\n", 2, out, sizeof out, 5000) == 2);
    CHECK_CONTAINS(out, "FLOW takes 2..1000 jobs");
    CHECK_CONTAINS(out, "OK");
    CHECK(raw_request(&d[0], "FLOW 2\nPUT nope 1\np\nPUT a 1\nc\n", 1, out, sizeof out,
                      5000) == 1);
    CHECK_CONTAINS(out, "ERR UNKNOWN_QUEUE item 1");
    CHECK(raw_request(&d[0], "FLOW 3\nPUT b 1\np\nPUT a 1 parent=3\nc\nPUT a 1\nc\n", 1, out,
                      sizeof out, 5000) == 1);
    CHECK_CONTAINS(out, "ERR BAD_REQUEST item 2: parent=3 must name an earlier job");
    CHECK(raw_request(&d[0], "BATCH 1\nPUT a 1 parent=1\nc\n", 1, out, sizeof out, 5000) == 1);
    CHECK_CONTAINS(out, "parent= is for the jobs of a FLOW");
    CHECK(raw_request(&d[0], "PUT a 1 parent=1\nc\n", 1, out, sizeof out, 5000) == 1);
    CHECK_CONTAINS(out, "parent= is for the jobs of a FLOW");
    CHECK(zk_count_jobs(zh, root, "a") == 0);
}

int main(void)
{
    harness_init("flows", root, sizeof root);
    if (daemons_start(d, 2, root, overrides) != 0)
        return 1;
    zh = zk_connect();
    deferd_client *ca[2] = {client(&d[0]), client(&d[1])}, *cb = client(&d[1]),
                  *ce = client(&d[0]);
    CHECK(deferd_subscribe(ca[0], "a", 8) == DEFERD_OK);
    CHECK(deferd_subscribe(cb, "b", 1) == DEFERD_OK);
    CHECK(deferd_subscribe(ce, "emails", 1) == DEFERD_OK);
    refusals();
    fan_in(ca[0], cb);
    deferctl_flow(ca[0], cb);
    ce_global = ce;
    nested(ca[0], cb);
    cancels(ca[0], cb);
    crawler(ca[0], cb);
    dead_child(ce, cb);
    contended(ca, cb);
    /* every flow was put through daemon 0: 13 waiting parents (fan_in 1, deferctl 2,
     * dead_child 2, contended 1, nested 3 + 2, cancels 1, crawler 1); released by either
     * daemon: 9 made jobs, 3 dead letters */
    CHECK(stat_of(0, "flows_opened") == 13 && stat_of(1, "flows_opened") == 0);
    long released = stat_of(0, "flows_released") + stat_of(1, "flows_released");
    long dead = stat_of(0, "flows_dead_lettered") + stat_of(1, "flows_dead_lettered");
    printf("flows: opened %ld %ld, released %ld, dead-lettered %ld, version conflicts %ld + %ld\n", stat_of(0, "flows_opened"), stat_of(1, "flows_opened"), released,
           dead, stat_of(0, "flow_conflicts"), stat_of(1, "flow_conflicts"));
    CHECK(released == 9 && dead == 3);
    for (int k = 0; k < 2; k++)
        deferd_close(ca[k]);
    deferd_close(cb);
    deferd_close(ce);
    zookeeper_close(zh);
    daemon_kill(&d[0], SIGTERM);
    daemon_kill(&d[1], SIGTERM);
    return check_report("it_flows");
}
