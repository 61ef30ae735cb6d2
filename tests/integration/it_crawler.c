/* A web crawler on deferd, with crashes (docs/keys-and-transactions.md): a seeded random
 * link graph of URLs (cycles, self-links, URLs nothing reachable links to); queue crawl
 * keeps a URL's key for an hour after its ack (key_retention), so a URL is enqueued once.
 * Worker processes on three daemons take a URL, log the delivery, and ack it together with
 * one follow-up per outgoing link (ACK then=, key u<url>) in one transaction. The test
 * SIGKILLs workers at random moments (some kill themselves between logging a delivery and
 * acking it) and one daemon, starting replacements, until the queue has drained. Then:
 * exactly the URLs reachable from URL 0 were crawled, each as exactly one job (one id, its
 * key node "done" naming it), no link was lost, no follow-up was created twice, and every
 * job whose worker died holding it was delivered again with a higher attempt.
 *
 * A failure prints the seed; DEFERD_CRAWL_SEED=<seed> runs the same graph again (the kill
 * timing differs). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "layout.h"

#define NODES 480
#define MAXOUT 5
#define WORKERS 5
#define QUEUE "crawl"

static int nout[NODES], outs[NODES][MAXOUT];
static int reachable[NODES];

static uint64_t rng_state;

static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Nodes with id % 10 == 7 form an island: they link anywhere, but only island nodes link
 * to them, so none of them is reachable from 0. The others hang on a random tree from 0
 * (all but a few: those may be reachable only by chance), plus random links: cycles,
 * links back to 0, self-links. Links of a node are distinct. */
static int island(int u)
{
    return u % 10 == 7;
}

static void add_link(int u, int v)
{
    if (nout[u] == MAXOUT || (island(v) && !island(u)))
        return;
    for (int k = 0; k < nout[u]; k++)
        if (outs[u][k] == v)
            return;
    outs[u][nout[u]++] = v;
}

static void make_graph(uint64_t seed)
{
    rng_state = seed;
    memset(nout, 0, sizeof nout);
    for (int u = 1; u < NODES; u++) /* the tree */
        if (!island(u) && rnd() % 32 != 0)
            for (int tries = 0; tries < 10; tries++) {
                int p = (int)(rnd() % (uint64_t)u);
                if (!island(p) && nout[p] < MAXOUT - 1) {
                    add_link(p, u);
                    break;
                }
            }
    for (int u = 0; u < NODES; u++) { /* the rest */
        int extra = (int)(rnd() % 3);
        for (int k = 0; k < extra; k++) {
            int v = (int)(rnd() % NODES);
            if (rnd() % 16 == 0)
                v = rnd() % 4 == 0 ? u : 0;
            add_link(u, v);
        }
    }
    int queue[NODES], head = 0, tail = 0;
    memset(reachable, 0, sizeof reachable);
    reachable[0] = 1;
    queue[tail++] = 0;
    while (head < tail) {
        int u = queue[head++];
        for (int k = 0; k < nout[u]; k++)
            if (!reachable[outs[u][k]]) {
                reachable[outs[u][k]] = 1;
                queue[tail++] = outs[u][k];
            }
    }
}

static int links(int u, int v)
{
    for (int k = 0; k < nout[u]; k++)
        if (outs[u][k] == v)
            return 1;
    return 0;
}

/* ---- the worker process (this program run as "it_crawler --worker ...") ---- */

static void log_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void log_line(int fd, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0 && write(fd, line, (size_t)n) != n) /* one write: whole lines, O_APPEND */
        _exit(3);
}

static deferd_client *worker_connect(char **socks, int first)
{
    for (int k = 0; k < 3; k++) {
        deferd_client *c = deferd_connect(socks[(first + k) % 3], NULL, 0);
        if (!c)
            continue;
        deferd_set_timeout(c, 20000);
        if (deferd_subscribe(c, QUEUE, 2) == DEFERD_OK)
            return c;
        deferd_close(c);
    }
    return NULL;
}

/* argv: --worker SEED INDEX LOG SOCK1 SOCK2 SOCK3 */
static int worker_main(char **argv)
{
    uint64_t seed = strtoull(argv[2], NULL, 10);
    int index = atoi(argv[3]);
    make_graph(seed);
    rng_state = seed ^ ((uint64_t)(index + 1) * 0x2545f4914f6cdd1dULL) ^ (uint64_t)getpid();
    int fd = open(argv[4], O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        return 2;
    char **socks = argv + 5;
    deferd_client *c = NULL;
    for (;;) {
        if (!c && !(c = worker_connect(socks, index % 3))) {
            usleep(100000);
            continue;
        }
        deferd_job job;
        int rc = deferd_next_job(c, &job, 1000);
        if (rc == DEFERD_ETIMEDOUT)
            continue;
        if (rc != DEFERD_OK) { /* the daemon went away: another one, or it again */
            deferd_close(c);
            c = NULL;
            continue;
        }
        int url = -1;
        char parent[DEFERD_ID_SIZE] = "";
        if (sscanf((const char *)job.payload, "%d %255s", &url, parent) != 2 || url < 0 ||
            url >= NODES) {
            log_line(fd, "B %s bad payload '%s'\n", job.id, (const char *)job.payload);
            url = -1;
        }
        log_line(fd, "D %d %u %s %s\n", url, job.attempt, job.id, parent);
        uint64_t r = rnd() % 100;
        if (r < 3) { /* crash between the delivery and the ack */
            log_line(fd, "X %d %u %s\n", url, job.attempt, job.id);
            raise(SIGKILL);
        }
        if (r < 40)
            usleep((useconds_t)(rnd() % 15000)); /* work */
        deferd_put_item items[MAXOUT];
        char payloads[MAXOUT][DEFERD_ID_SIZE + 16], keys[MAXOUT][16];
        int n = url < 0 ? 0 : nout[url];
        for (int k = 0; k < n; k++) {
            snprintf(payloads[k], sizeof payloads[k], "%d %s", outs[url][k], job.id);
            snprintf(keys[k], sizeof keys[k], "u%d", outs[url][k]);
            keyed_item(&items[k], QUEUE, payloads[k], keys[k], -1);
        }
        rc = n ? deferd_ack_then(c, job.id, items, (size_t)n) : deferd_ack(c, job.id);
        if (rc == DEFERD_OK) {
            int dups = 0;
            for (int k = 0; k < n; k++)
                dups += items[k].duplicate;
            log_line(fd, "A %d %s %d %d\n", url, job.id, n, dups);
        } else {
            log_line(fd, "F %d %s %d %s\n", url, job.id, rc, deferd_last_error(c));
            if (rc != DEFERD_ESERVER) {
                deferd_close(c);
                c = NULL;
            }
        }
        deferd_job_clear(&job);
    }
}

/* ---- the test ---- */

static struct daemon_proc d[3];
static char root[128], dir[300];
static zhandle_t *zh;
static uint64_t seed;
static pid_t workers[WORKERS];
static int spawned; /* workers started so far; each has its own log w<n>.log */

static void spawn_worker(int slot)
{
    char s[32], idx[16], log[400];
    snprintf(s, sizeof s, "%" PRIu64, seed);
    snprintf(idx, sizeof idx, "%d", slot);
    snprintf(log, sizeof log, "%s/w%d.log", dir, spawned++);
    char *argv[] = {"it_crawler", "--worker", s, idx, log, d[0].sock, d[1].sock, d[2].sock, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    workers[slot] = pid;
}

static void kill_worker(int slot)
{
    if (workers[slot] <= 0)
        return;
    kill(workers[slot], SIGKILL);
    waitpid(workers[slot], NULL, 0);
    workers[slot] = 0;
}

/* Lines of all worker logs that start with C. */
static int count_lines(char c)
{
    int n = 0;
    for (int w = 0; w < spawned; w++) {
        char path[400], line[1024];
        snprintf(path, sizeof path, "%s/w%d.log", dir, w);
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f))
            n += line[0] == c;
        if (f)
            fclose(f);
    }
    return n;
}

/* Calls FN for each key node of the queue with its name and data; the number of them. */
static int each_key(void (*fn)(const char *key, const char *data, void *ctx), void *ctx)
{
    char keys[LAYOUT_PATH_MAX];
    struct String_vector hashes;
    int n = 0;
    snprintf(keys, sizeof keys, "%s/queues/%s/keys", root, QUEUE);
    if (zoo_get_children(zh, keys, 0, &hashes) != ZOK)
        return 0;
    for (int i = 0; i < hashes.count; i++) {
        char hdir[LAYOUT_PATH_MAX + 8];
        struct String_vector names;
        snprintf(hdir, sizeof hdir, "%s/%s", keys, hashes.data[i]);
        if (zoo_get_children(zh, hdir, 0, &names) != ZOK)
            continue;
        for (int k = 0; k < names.count; k++) {
            char path[LAYOUT_PATH_MAX + 80], data[512];
            snprintf(path, sizeof path, "%s/%s", hdir, names.data[k]);
            if (zk_get(zh, path, data, sizeof data) < 0)
                continue;
            n++;
            if (fn)
                fn(names.data[k], data, ctx);
        }
        deallocate_String_vector(&names);
    }
    deallocate_String_vector(&hashes);
    return n;
}

static void count_pending_key(const char *key, const char *data, void *ctx)
{
    (void)key;
    *(int *)ctx += strncmp(data, "done ", 5) != 0;
}

/* Drained: no job in ZooKeeper and every key node kept ("done"), twice in a row around the
 * key scan, so that a job created while the tree was walked is not missed. */
static int drained(void)
{
    if (zk_count_jobs(zh, root, QUEUE) != 0)
        return 0;
    int pending = 0;
    each_key(count_pending_key, &pending);
    return pending == 0 && zk_count_jobs(zh, root, QUEUE) == 0;
}

/* ---- what the logs and ZooKeeper say ---- */

#define MAXDEL 20000

struct delivery {
    int url;
    unsigned attempt;
    char id[DEFERD_ID_SIZE];
    char parent[DEFERD_ID_SIZE];
};

static struct delivery *dl, *crashed; /* crashed: deliveries whose worker died holding them */
static int ndl, ncrashed;
static char job_of[NODES][DEFERD_ID_SIZE]; /* the one job id of each URL, from its deliveries */
static char kept[NODES][DEFERD_ID_SIZE];   /* the job named by its "done" key node */

static void read_logs(int *killed, int *acked, int *failed)
{
    *killed = *acked = *failed = 0;
    for (int w = 0; w < spawned; w++) {
        char path[400], line[1024];
        snprintf(path, sizeof path, "%s/w%d.log", dir, w);
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f)) {
            struct delivery x = {0};
            switch (line[0]) {
            case 'D':
                if (ndl < MAXDEL &&
                    sscanf(line, "D %d %u %255s %255s", &x.url, &x.attempt, x.id, x.parent) == 4)
                    dl[ndl++] = x;
                else
                    CHECK(!"unreadable delivery line");
                break;
            case 'X':
                ++*killed;
                if (ncrashed < MAXDEL &&
                    sscanf(line, "X %d %u %255s", &x.url, &x.attempt, x.id) == 3)
                    crashed[ncrashed++] = x;
                else
                    CHECK(!"unreadable crash line");
                break;
            case 'A':
                ++*acked;
                break;
            case 'F':
                ++*failed;
                printf("ack failed: %s", line);
                break;
            default:
                fprintf(stderr, "worker log %s: %s", path, line);
                CHECK(!"unexpected worker log line");
            }
        }
        if (f)
            fclose(f);
    }
}

static void note_kept(const char *key, const char *data, void *ctx)
{
    (void)ctx;
    int url = -1;
    long long ms;
    char name[200];
    if (sscanf(key, "u%d", &url) != 1 || url < 0 || url >= NODES) {
        fprintf(stderr, "key node %s: not a URL key\n", key);
        CHECK(!"stray key node");
        return;
    }
    if (sscanf(data, "done %lld %199s", &ms, name) != 2) {
        fprintf(stderr, "key node %s: '%s', not kept\n", key, data);
        CHECK(!"key node not done after the drain");
        return;
    }
    snprintf(kept[url], sizeof kept[url], "%s/%s", QUEUE, name);
}

static int job_url(const char *id)
{
    char q[80];
    struct job_name jn;
    int url = -1;
    if (layout_parse_id(id, q, sizeof q, &jn) != 0 || sscanf(jn.key, "u%d", &url) != 1)
        return -1;
    return url;
}

static void verify(void)
{
    int killed, acked, failed;
    dl = calloc(MAXDEL, sizeof *dl);
    crashed = calloc(MAXDEL, sizeof *crashed);
    read_logs(&killed, &acked, &failed);
    CHECK(zk_count_jobs(zh, root, QUEUE) == 0);
    int nkeys = each_key(note_kept, NULL);

    int nreach = 0, delivered_urls = 0, redelivered = 0, errors = 0;
    for (int u = 0; u < NODES; u++)
        nreach += reachable[u];
    /* one job per URL: every delivery of a URL carries the same id, named by its key */
    for (int i = 0; i < ndl; i++) {
        struct delivery *x = &dl[i];
        if (x->url < 0 || x->url >= NODES || job_url(x->id) != x->url) {
            fprintf(stderr, "delivery of %s names URL %d\n", x->id, x->url);
            errors++;
            continue;
        }
        redelivered += x->attempt > 1;
        if (!job_of[x->url][0])
            snprintf(job_of[x->url], sizeof job_of[x->url], "%s", x->id);
        else if (strcmp(job_of[x->url], x->id) != 0) {
            fprintf(stderr, "URL %d came as two jobs: %s and %s\n", x->url, job_of[x->url], x->id);
            errors++;
        }
        /* the same attempt twice would be two concurrent holders */
        for (int j = 0; j < i; j++)
            if (strcmp(dl[j].id, x->id) == 0 && dl[j].attempt == x->attempt) {
                fprintf(stderr, "%s delivered twice as attempt %u\n", x->id, x->attempt);
                errors++;
            }
    }
    /* crawled = reachable; unreachable URLs never appear, not even as keys */
    for (int u = 0; u < NODES; u++) {
        int got = job_of[u][0] != 0;
        delivered_urls += got;
        if (got != reachable[u]) {
            fprintf(stderr, "URL %d: %s but %s\n", u, got ? "crawled" : "never crawled",
                    reachable[u] ? "reachable" : "unreachable");
            errors++;
        }
        if (reachable[u] && strcmp(kept[u], job_of[u]) != 0) {
            fprintf(stderr, "URL %d: key node names '%s', deliveries '%s'\n", u, kept[u],
                    job_of[u]);
            errors++;
        }
        if (!reachable[u] && kept[u][0]) {
            fprintf(stderr, "URL %d is unreachable but its key exists: %s\n", u, kept[u]);
            errors++;
        }
    }
    CHECK(nkeys == nreach);
    /* no link lost: every link of a crawled URL leads to a crawled URL */
    for (int u = 0; u < NODES; u++)
        for (int k = 0; reachable[u] && k < nout[u]; k++)
            if (!job_of[outs[u][k]][0]) {
                fprintf(stderr, "link %d -> %d lost\n", u, outs[u][k]);
                errors++;
            }
    /* each follow-up came from its parent's one job, along a link of the parent; so each
     * (parent job, link) pair has at most one child job */
    for (int i = 0; i < ndl; i++) {
        struct delivery *x = &dl[i];
        if (x->url < 0 || x->url >= NODES)
            continue;
        if (x->url == 0 && strcmp(x->parent, "-") == 0)
            continue;
        int pu = job_url(x->parent);
        if (pu < 0 || strcmp(job_of[pu], x->parent) != 0 || !links(pu, x->url)) {
            fprintf(stderr, "%s (URL %d) names parent %s (URL %d, its job %s)\n", x->id, x->url,
                    x->parent, pu, pu >= 0 ? job_of[pu] : "-");
            errors++;
        }
        for (int j = 0; j < i; j++)
            if (dl[j].url == x->url && strcmp(dl[j].parent, x->parent) == 0 &&
                strcmp(dl[j].id, x->id) != 0) {
                fprintf(stderr, "parent %s created URL %d twice: %s and %s\n", x->parent,
                        x->url, dl[j].id, x->id);
                errors++;
            }
    }
    /* a job whose worker died holding it came back with a higher attempt */
    int came_back = 0;
    for (int i = 0; i < ncrashed; i++) {
        int back = 0;
        for (int j = 0; j < ndl && !back; j++)
            back = strcmp(crashed[i].id, dl[j].id) == 0 && dl[j].attempt > crashed[i].attempt;
        came_back += back;
        if (!back) {
            fprintf(stderr, "%s (URL %d): its worker died holding attempt %u, not delivered "
                            "again\n", crashed[i].id, crashed[i].url, crashed[i].attempt);
            errors++;
        }
    }
    printf("crawl seed %" PRIu64 ": %d URLs, %d reachable, %d crawled; %d deliveries "
           "(%d redeliveries), %d acks logged, %d failed acks, %d workers started, "
           "%d crashed between delivery and ack, %d of them delivered again\n",
           seed, NODES, nreach, delivered_urls, ndl, redelivered, acked, failed, spawned, killed,
           came_back);
    CHECK(errors == 0);
    CHECK(delivered_urls == nreach);
    CHECK(killed >= 1);              /* the chaos really happened */
    CHECK(came_back == killed); /* each crash's job was delivered again */
    if (check_failures)
        fprintf(stderr, "it_crawler: failed with seed %" PRIu64
                        " (DEFERD_CRAWL_SEED=%" PRIu64 " to repeat the graph); logs in %s\n",
                seed, seed, dir);
    free(dl);
    free(crashed);
}

int main(int argc, char **argv)
{
    if (argc >= 8 && strcmp(argv[1], "--worker") == 0)
        return worker_main(argv);
    harness_init("crawler", root, sizeof root);
    const char *env = getenv("DEFERD_CRAWL_SEED");
    seed = env && *env ? strtoull(env, NULL, 10) : (uint64_t)now_ms() ^ ((uint64_t)getpid() << 32);
    make_graph(seed);
    int nreach = 0;
    for (int u = 0; u < NODES; u++)
        nreach += reachable[u];
    printf("crawl seed %" PRIu64 ": %d URLs, %d reachable from URL 0\n", seed, NODES, nreach);
    fflush(stdout);
    CHECK(nreach >= NODES / 2 && nreach < NODES); /* a graph worth crawling */

    static const char *const overrides[] = {"queue " QUEUE ".key_retention=1h", NULL};
    static const char *const tags[] = {"c1", "c2", "c3"};
    for (int i = 0; i < 3; i++)
        if (daemon_start(&d[i], root, tags[i], overrides) != 0)
            return 1;
    snprintf(dir, sizeof dir, "%s", d[0].dir);
    zh = zk_connect();
    deferd_client *p = client(&d[0]);
    deferd_put_item start;
    keyed_item(&start, QUEUE, "0 -", "u0", -1);
    CHECK(put_keyed(p, &start) == 0);
    deferd_close(p);
    for (int w = 0; w < WORKERS; w++)
        spawn_worker(w);

    /* chaos until drained: a worker SIGKILLed every 30..250 ms, and one daemon SIGKILLed
     * and restarted once a third of the URLs were delivered */
    uint64_t chaos_seed = seed ^ 0x5deece66dULL;
    rng_state = chaos_seed;
    int64_t start_ms = now_ms(), deadline = start_ms + 90000;
    int daemon_killed = 0, kills = 0, stable = 0;
    while (now_ms() < deadline) {
        usleep((useconds_t)(30000 + rnd() % 220000)); /* the next kill's moment */
        if (drained()) {
            if (++stable >= 3)
                break;
            continue;
        }
        stable = 0;
        int slot = (int)(rnd() % WORKERS);
        kill_worker(slot);
        spawn_worker(slot);
        kills++;
        if (!daemon_killed && count_lines('D') * 3 >= nreach) {
            printf("SIGKILL daemon 2 after %lld ms\n", (long long)(now_ms() - start_ms));
            daemon_kill(&d[1], SIGKILL);
            CHECK(daemon_restart(&d[1], NULL) == 0);
            daemon_killed = 1;
        }
    }
    int64_t took = now_ms() - start_ms;
    for (int w = 0; w < WORKERS; w++)
        kill_worker(w);
    printf("drained in %lld ms, %d workers killed by the test\n", (long long)took, kills);
    CHECK(stable >= 3); /* drained within the deadline */
    CHECK(daemon_killed);
    verify();
    for (int i = 0; i < 3; i++)
        daemon_kill(&d[i], SIGTERM);
    zookeeper_close(zh);
    return check_report("it_crawler");
}
