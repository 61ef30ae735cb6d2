/* BATCH (docs/protocol.md) is all or none: an invalid item names itself and nothing is
 * stored (not even the other items' keys), also when only the daemon sees it (raw wire);
 * a taken key, or a key twice in the batch, is answered as a duplicate and the rest is
 * created; a batch over one ZooKeeper packet goes in parts, in order. */
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness_keys.h"
#include "layout.h"
#include "names.h"

static struct daemon_proc d[3];
static char root[128];
static zhandle_t *zh;

/* ---- BATCH ---- */

#define NB 6

static void batch_items(deferd_put_item *items, char payloads[][32], char keys[][32])
{
    for (int i = 0; i < NB; i++) {
        snprintf(payloads[i], 32, "batch item %d", i + 1);
        snprintf(keys[i], 32, "bi-%d", i + 1);
        keyed_item(&items[i], i % 2 ? "bq2" : "bq1", payloads[i], keys[i], HOUR_MS + i * 1000);
    }
}

/* A batch with one bad item at POS (from 1) fails naming it, and stores nothing: not the
 * other items, nor their keys. An item the client can judge (a bad key) it may refuse
 * itself, sending nothing. Each on a connection of its own, from daemon DP; what a failed
 * check left behind is cancelled, so that the next parts start clean. */
static void batch_refused(const struct daemon_proc *dp, deferd_put_item *items, int pos,
                          const char *what)
{
    deferd_client *c = client(dp);
    unsigned parts = 99;
    size_t stored = 99;
    int rc = deferd_put_batch(c, items, NB, &parts, &stored);
    char item[32];
    snprintf(item, sizeof item, "item %d", pos);
    printf("batch with %s at %d: rc %d, %s\n", what, pos, rc, deferd_last_error(c));
    int client_judges = items[pos - 1].opts.key && !names_valid_key(items[pos - 1].opts.key);
    CHECK(rc == DEFERD_ESERVER || (client_judges && rc == DEFERD_EARG));
    CHECK_CONTAINS(deferd_last_error(c), item); /* the daemon's reply, or the client's */
    CHECK(stored == 0);
    int ping = deferd_ping(c); /* the connection is in step */
    if (ping != DEFERD_OK)
        fprintf(stderr, "PING after the refused batch: rc %d, %s\n", ping, deferd_last_error(c));
    CHECK(ping == DEFERD_OK);
    deferd_close(c);
    CHECK(zk_count_jobs(zh, root, "bq1") == 0 && zk_count_jobs(zh, root, "bq2") == 0);
    c = client(dp);
    for (int i = 0; i < NB; i++)
        if (i + 1 != pos && items[i].opts.key && !key_absent(items[i].queue, items[i].opts.key)) {
            CHECK(!"a refused batch stored a job");
            cancel_key(c, items[i].queue, items[i].opts.key, 1, NULL);
        }
    deferd_close(c);
}

/* On the wire, whatever a client checks first: a BATCH whose item has a bad option (a bad
 * key) is one error naming it; the daemon reads the item's payload and the remaining
 * items, so the next request (PING) gets the next reply, and nothing is stored. */
static void batch_bad_option_raw(void)
{
    static const char req[] = "BATCH 3\n"
                              "PUT bq1 2 delay=3600000 key=raw-1\nr1\n"
                              "PUT bq1 2 delay=3600000 key=-raw-2\nr2\n"
                              "PUT bq2 2 delay=3600000 key=raw-3\nr3\n"
                              "PING\n";
    int fd = raw_connect(&d[0]);
    CHECK(fd >= 0 && write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1));
    char in[1024] = "";
    size_t n = 0;
    int64_t deadline = now_ms() + 10000;
    while (n + 1 < sizeof in && !strstr(in, "PONG\n")) { /* until PONG, or the deadline */
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int left = (int)(deadline - now_ms());
        ssize_t got;
        if (left <= 0 || poll(&pf, 1, left) <= 0 || (got = read(fd, in + n, 1)) <= 0)
            break;
        in[++n] = '\0';
    }
    in[n] = '\0';
    close(fd);
    char first[256] = "";
    sscanf(in, "%255[^\n]", first);
    printf("raw BATCH with a bad key at 2: '%s'\n", first);
    CHECK(strncmp(first, "ERR BAD_REQUEST item 2", 22) == 0);
    CHECK(strstr(in, "\nOK PONG\n") == in + strlen(first)); /* the very next reply */
    if (strstr(in, "\nOK PONG\n") != in + strlen(first))
        fprintf(stderr, "replies to BATCH 3 + PING: '%s'\n", in);
    CHECK(key_absent("bq1", "raw-1") && key_absent("bq2", "raw-3"));
    deferd_client *c = client(&d[0]);
    cancel_key(c, "bq1", "raw-1", 1, NULL); /* what a failure left behind */
    cancel_key(c, "bq2", "raw-3", 1, NULL);
    deferd_close(c);
}

static void batch(void)
{
    deferd_client *p = client(&d[0]), *p2 = client(&d[1]);
    deferd_put_item items[NB];
    char payloads[NB][32], keys[NB][32];
    static char big[5000]; /* over the harness's max_payload of 4 KiB */
    memset(big, 'x', sizeof big - 1);

    batch_items(items, payloads, keys);
    items[3].queue = "nosuchqueue";
    batch_refused(&d[0], items, 4, "an unknown queue");
    batch_items(items, payloads, keys);
    items[1].payload = big;
    items[1].len = strlen(big);
    batch_refused(&d[0], items, 2, "a payload too large");
    batch_items(items, payloads, keys);
    items[4].opts.key = "-bad"; /* a key must start with a letter or a digit */
    batch_refused(&d[0], items, 5, "a bad key");
    batch_bad_option_raw();

    /* valid, across two queues, the same keys as above: all created, ids in order */
    batch_items(items, payloads, keys);
    unsigned parts = 0;
    size_t stored = 99;
    int rc = deferd_put_batch(p, items, NB, &parts, &stored);
    if (rc != DEFERD_OK)
        fprintf(stderr, "batch: %s\n", deferd_last_error(p));
    CHECK(rc == DEFERD_OK);
    CHECK(parts == 1);
    char first[NB][DEFERD_ID_SIZE];
    for (int i = 0; i < NB; i++) {
        char data[64], path[LAYOUT_PATH_MAX];
        size_t ql = strlen(items[i].queue);
        snprintf(first[i], sizeof first[i], "%s", items[i].id);
        CHECK(items[i].duplicate == 0);
        CHECK(strncmp(items[i].id, items[i].queue, ql) == 0 && items[i].id[ql] == '/');
        CHECK(id_has_key(items[i].id, keys[i]));
        CHECK(key_names(items[i].queue, keys[i], items[i].id));
        CHECK(job_path(root, items[i].id, path, sizeof path) == 0);
        CHECK(zk_get(zh, path, data, sizeof data) >= 0 && strcmp(data, payloads[i]) == 0);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(items[i].id, items[j].id) != 0);
    }
    CHECK(zk_count_jobs(zh, root, "bq1") == 3 && zk_count_jobs(zh, root, "bq2") == 3);

    /* a taken key in a batch (from another daemon): that one a duplicate, the rest created */
    deferd_put_item mix[4];
    keyed_item(&mix[0], "bq1", "m1", "bd-1", HOUR_MS);
    keyed_item(&mix[1], "bq1", "m2", "bi-1", HOUR_MS); /* taken by the batch above */
    keyed_item(&mix[2], "bq2", "m3", "bd-3", HOUR_MS);
    keyed_item(&mix[3], "bq2", "m4", NULL, HOUR_MS);
    rc = deferd_put_batch(p2, mix, 4, &parts, &stored);
    CHECK(rc == DEFERD_OK);
    CHECK(mix[1].duplicate == 1);
    CHECK_STR(mix[1].id, first[0]);
    CHECK(mix[0].duplicate == 0 && mix[2].duplicate == 0 && mix[3].duplicate == 0);
    CHECK(zk_job_exists(zh, root, mix[0].id) && zk_job_exists(zh, root, mix[2].id) &&
          zk_job_exists(zh, root, mix[3].id));
    CHECK(key_names("bq1", "bd-1", mix[0].id) && key_names("bq2", "bd-3", mix[2].id));
    CHECK(zk_count_jobs(zh, root, "bq1") == 4 && zk_count_jobs(zh, root, "bq2") == 5);

    /* every key taken: all duplicates, nothing created, not an error */
    batch_items(items, payloads, keys);
    rc = deferd_put_batch(p2, items, NB, &parts, &stored);
    CHECK(rc == DEFERD_OK);
    for (int i = 0; i < NB; i++) {
        CHECK(items[i].duplicate == 1);
        CHECK_STR(items[i].id, first[i]);
    }
    CHECK(zk_count_jobs(zh, root, "bq1") == 4 && zk_count_jobs(zh, root, "bq2") == 5);

    /* larger than one ZooKeeper packet: parts, all stored, ids in order of the items */
    enum { NBIG = 300 };
    static deferd_put_item big_items[NBIG];
    static char big_payload[4000];
    memset(big_payload, 'p', sizeof big_payload - 1);
    for (int i = 0; i < NBIG; i++)
        keyed_item(&big_items[i], "bq2", big_payload, NULL, HOUR_MS + i);
    parts = 0;
    rc = deferd_put_batch(p, big_items, NBIG, &parts, &stored);
    printf("batch of %d x %zu bytes: rc %d, parts=%u %s\n", NBIG, sizeof big_payload - 1, rc,
           parts, rc ? deferd_last_error(p) : "");
    CHECK(rc == DEFERD_OK && parts >= 2 && stored == NBIG);
    uint64_t last_due = 0;
    int ordered = 1;
    for (int i = 0; i < NBIG; i++) {
        char q[80];
        struct job_name jn;
        ordered &= layout_parse_id(big_items[i].id, q, sizeof q, &jn) == 0 && jn.due_ms > last_due;
        last_due = jn.due_ms;
    }
    CHECK(ordered); /* item i was put with delay HOUR_MS + i */
    CHECK(zk_count_jobs(zh, root, "bq2") == 5 + NBIG);

    /* one key twice in a batch: the first creates the job, the second is its duplicate */
    deferd_put_item tw[3];
    keyed_item(&tw[0], "bq1", "t1", "twice", HOUR_MS);
    keyed_item(&tw[1], "bq1", "t2", "other", HOUR_MS);
    keyed_item(&tw[2], "bq1", "t3", "twice", HOUR_MS);
    CHECK(deferd_put_batch(p2, tw, 3, &parts, &stored) == DEFERD_OK);
    CHECK(tw[0].duplicate == 0 && tw[1].duplicate == 0 && tw[2].duplicate == 1);
    CHECK_STR(tw[2].id, tw[0].id);
    CHECK(key_names("bq1", "twice", tw[0].id) && key_names("bq1", "other", tw[1].id));
    CHECK(zk_count_jobs(zh, root, "bq1") == 6 && zk_count_jobs(zh, root, "bq2") == 5 + NBIG);

    /* one 64-character key 50 times (the reply repeats the longest ids: its buffer once
     * overflowed, found by review of the fuzzing helper) */
    enum { NREP = 50 };
    static deferd_put_item rep[NREP];
    char longkey[65];
    memset(longkey, 'K', 64);
    longkey[64] = '\0';
    for (int i = 0; i < NREP; i++)
        keyed_item(&rep[i], "bq1", "rep", longkey, HOUR_MS);
    CHECK(deferd_put_batch(p2, rep, NREP, &parts, &stored) == DEFERD_OK);
    int same = rep[0].duplicate == 0;
    for (int i = 1; i < NREP; i++)
        same &= rep[i].duplicate == 1 && strcmp(rep[i].id, rep[0].id) == 0;
    CHECK(same);
    CHECK(zk_count_jobs(zh, root, "bq1") == 7);
    deferd_close(p);
    deferd_close(p2);
}

int main(void)
{
    return keys_run("keys_batch", d, root, sizeof root, &zh, batch);
}
