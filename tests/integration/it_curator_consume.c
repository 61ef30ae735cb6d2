/* deferd as a consumer of Apache Curator queues (Curator 5.4.0 from Debian, javac-built
 * tools in tests/java):
 *  - a Curator producer puts 2000 delayed items, some by putMulti: deferd's consumers get
 *    every item once, none before its epoch, and the queue and lock directories end empty;
 *  - foreign names and undecodable frames are logged and left alone (or deleted, with
 *    curator_corrupt = delete); an empty frame is consumed as nothing;
 *  - one part of a 3-item frame nacked: only that part comes back, tagged with its attempts;
 *  - a priority queue is taken in Curator's order (negative priorities first);
 *  - the last allowed attempt nacked: the item goes to the dead letters, and deferctl puts
 *    it back as a Curator item;
 *  - a queue too big for one ZooKeeper reply is refused with a clear error, and the
 *    daemon's session and other queues are unharmed;
 *  - 2 Curator consumers with lockPath and 2 deferd daemons on one queue: every item is
 *    processed exactly once;
 *  - a daemon killed while its consumer holds an item: the other daemon delivers it again,
 *    marked as attempt 2. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

enum { N = 2000 };

static struct daemon_proc d1, d2;
static char root[128];
static char jd[200], jd_locks[200], jdel[200], jdel_locks[200], mx[200], mx_locks[200];
static char jp[200], jp_locks[200], big[200], big_locks[200];
static zhandle_t *zh;

/* ---- helpers ---- */

/* Creates an item as a Curator producer does; its name in NAME. */
static int put_item(const char *dir, int64_t due, const void *data, size_t len, char *name)
{
    char path[300], made[300];
    snprintf(path, sizeof path, "%s/queue-|%08llX|", dir, (unsigned long long)due);
    int rc = zoo_create(zh, path, data, (int)len, &ZOO_OPEN_ACL_UNSAFE, ZOO_SEQUENCE, made,
                        sizeof made);
    if (rc == ZOK && name)
        snprintf(name, 200, "%s", strrchr(made, '/') + 1);
    return rc;
}

static int children(const char *dir)
{
    struct String_vector sv;
    if (zoo_get_children(zh, dir, 0, &sv) != ZOK)
        return -1;
    int n = sv.count;
    deallocate_String_vector(&sv);
    return n;
}

static int log_has(const struct daemon_proc *d, const char *text)
{
    FILE *f = fopen(d->log, "r");
    char line[2048];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        found = strstr(line, text) != NULL;
    if (f)
        fclose(f);
    return found;
}

/* Waits up to 10 s for STATS of D to contain TEXT. */
static int stats_reach(const struct daemon_proc *d, const char *text)
{
    deferd_client *c = client(d);
    char buf[4096] = "";
    int64_t deadline = now_ms() + 10000;
    while (now_ms() < deadline && deferd_stats(c, buf, sizeof buf) == DEFERD_OK &&
           !strstr(buf, text))
        usleep(20000);
    deferd_close(c);
    if (!strstr(buf, text))
        printf("STATS of %s lacks '%s': %s\n", d->dir, text, buf);
    return strstr(buf, text) != NULL;
}

/* Payload "<i> <due ms>": records it, checks it came once and not early. */
struct tally {
    unsigned char seen[N];
    int got, dups, early, bad;
};

static void count(struct tally *t, const char *payload, int64_t at)
{
    int i;
    long long due;
    if (sscanf(payload, "%d %lld", &i, &due) != 2 || i < 0 || i >= N) {
        t->bad++;
        return;
    }
    if (t->seen[i]++) {
        t->dups++;
        return;
    }
    t->got++;
    t->early += at < due;
}

/* ---- a Curator producer, deferd consumers ---- */

static void from_java(void)
{
    deferd_client *a = client(&d1), *b = client(&d1);
    CHECK(deferd_subscribe(a, "jd", 8) == DEFERD_OK);
    CHECK(deferd_subscribe(b, "jd", 8) == DEFERD_OK);
    char cmd[2048];
    int64_t base = now_ms() + 3000;
    snprintf(cmd, sizeof cmd, "'%s' -cp '%s' CuratorProduce %s '%s' %d %lld 4000 5 2>/dev/null",
             getenv("DEFERD_JAVA"), getenv("DEFERD_JAVA_CP"), harness_zk_hosts, jd, N,
             (long long)base);
    FILE *p = popen(cmd, "r");
    char out[128] = "";
    CHECK(p && fgets(out, sizeof out, p) != NULL);
    CHECK(p && pclose(p) == 0);
    printf("Curator producer: %s", out);
    static struct tally t;
    int parts = 0;
    int64_t deadline = now_ms() + 60000;
    while (t.got + t.dups < N && now_ms() < deadline) {
        deferd_client *cs[2] = {a, b};
        for (int k = 0; k < 2; k++) {
            deferd_job job;
            if (deferd_next_job(cs[k], &job, 10) != DEFERD_OK)
                continue;
            count(&t, (const char *)job.payload, now_ms());
            parts += strchr(job.id, '#') != NULL;
            CHECK(job.attempt == 1);
            CHECK(deferd_ack(cs[k], job.id) == DEFERD_OK);
            deferd_job_clear(&job);
        }
    }
    printf("deferd consumers: %d items (%d parts of putMulti frames), %d duplicates, %d early, "
           "%d unreadable\n", t.got, parts, t.dups, t.early, t.bad);
    CHECK(t.got == N && t.dups == 0 && t.early == 0 && t.bad == 0);
    CHECK(parts > 0 && parts % 3 == 0);
    CHECK(children(jd) == 0); /* every item deleted, */
    CHECK(stats_reach(&d1, " curator_items.jd=0"));
    CHECK(children(jd_locks) == 0); /* and every lock */
    deferd_close(a);
    deferd_close(b);
}

/* ---- what deferd does not understand ---- */

static void strange_nodes(void)
{
    deferd_client *c = client(&d1);
    CHECK(deferd_subscribe(c, "jd,jdel", 4) == DEFERD_OK);
    unsigned char good[64], empty[8];
    const char *g1[] = {"good-1"}, *g2[] = {"good-2"};
    char foreign[300], bad[200], bad_del[200], empty_name[200];
    int64_t now = now_ms();
    zoo_create(zh, jdel, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0); /* may exist already */
    snprintf(foreign, sizeof foreign, "%s/job-0000000001", jd);
    CHECK(zoo_create(zh, foreign, "x", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK);
    CHECK(put_item(jd, now, "plain text", 10, bad) == ZOK);
    CHECK(put_item(jdel, now, "plain text", 10, bad_del) == ZOK);
    CHECK(put_item(jd, now, empty, curator_frame(empty, NULL, 0), empty_name) == ZOK);
    CHECK(put_item(jd, now, good, curator_frame(good, g1, 1), NULL) == ZOK);
    CHECK(put_item(jdel, now, good, curator_frame(good, g2, 1), NULL) == ZOK);
    int got = 0;
    deferd_job job;
    while (got < 2 && deferd_next_job(c, &job, 10000) == DEFERD_OK) {
        CHECK(strncmp((const char *)job.payload, "good-", 5) == 0);
        CHECK(deferd_ack(c, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
        got++;
    }
    CHECK(got == 2);
    char path[400];
    snprintf(path, sizeof path, "%s/%s", jdel, bad_del);
    int64_t deadline = now_ms() + 10000;
    while (zk_exists(zh, path) && now_ms() < deadline)
        usleep(20000);
    CHECK(!zk_exists(zh, path)); /* curator_corrupt = delete */
    snprintf(path, sizeof path, "%s/%s", jd, empty_name);
    while (zk_exists(zh, path) && now_ms() < deadline)
        usleep(20000);
    CHECK(!zk_exists(zh, path)); /* an empty frame is consumed as nothing */
    CHECK(zk_exists(zh, foreign)); /* left in place */
    snprintf(path, sizeof path, "%s/%s", jd, bad);
    CHECK(zk_exists(zh, path)); /* curator_corrupt = skip (the default) */
    CHECK(log_has(&d1, "foreign node"));
    CHECK(log_has(&d1, "not a valid Curator frame"));
    CHECK(deferd_ping(c) == DEFERD_OK);
    CHECK(zoo_delete(zh, foreign, -1) == ZOK && zoo_delete(zh, path, -1) == ZOK);
    deferd_close(c);
}

/* ---- a nacked part, a dropped part ---- */

static void nack_one_part(void)
{
    deferd_client *c = client(&d1);
    CHECK(deferd_subscribe(c, "jd", 3) == DEFERD_OK);
    unsigned char buf[64];
    const char *three[] = {"p1", "p2", "p3"};
    char name[200];
    CHECK(put_item(jd, now_ms(), buf, curator_frame(buf, three, 3), name) == ZOK);
    deferd_job jobs[3];
    int n = 0;
    while (n < 3 && deferd_next_job(c, &jobs[n], 10000) == DEFERD_OK)
        n++;
    CHECK(n == 3);
    char p2[DEFERD_ID_SIZE + 1] = "";
    for (int i = 0; i < n; i++) {
        CHECK(jobs[i].attempt == 1 && strstr(jobs[i].id, name) && strchr(jobs[i].id, '#'));
        if (strcmp((const char *)jobs[i].payload, "p2") == 0)
            memcpy(p2, jobs[i].id, sizeof jobs[i].id);
    }
    int64_t nacked = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(jobs[i].id, p2) == 0) {
            nacked = now_ms(); /* before it is sent: its delay counts from its arrival */
            CHECK(deferd_nack(c, jobs[i].id, 300) == DEFERD_OK);
        } else {
            CHECK(deferd_ack(c, jobs[i].id) == DEFERD_OK);
        }
        deferd_job_clear(&jobs[i]);
    }
    deferd_job again;
    CHECK(deferd_next_job(c, &again, 10000) == DEFERD_OK);
    int64_t at = now_ms();
    printf("nacked part: back as %s, attempt %u, after %lld ms\n", again.id, again.attempt,
           (long long)(at - nacked));
    CHECK(strcmp((const char *)again.payload, "p2") == 0 && again.len == 2);
    CHECK(again.attempt == 2 && strstr(again.id, "/queue-a1|") != NULL);
    CHECK(at - nacked >= 290); /* its epoch is the nack's delay */
    /* the consumer goes away holding it: delivered again (the item stays locked) */
    deferd_client *d = client(&d1);
    CHECK(deferd_subscribe(d, "jd", 1) == DEFERD_OK);
    deferd_close(c);
    deferd_job third;
    CHECK(deferd_next_job(d, &third, 10000) == DEFERD_OK);
    CHECK_STR(third.id, again.id);
    CHECK(third.attempt == 3);
    CHECK(deferd_ack(d, third.id) == DEFERD_OK);
    CHECK(children(jd) == 0 && children(jd_locks) == 0);
    deferd_job_clear(&again);
    deferd_job_clear(&third);
    deferd_close(d);
}

/* ---- a priority queue: Curator's order, negative priorities first ---- */

static void priority_order(void)
{
    static const int prios[] = {10, -5, 0, 2147483647, -2147483647 - 1, 7, -5, 3};
    enum { P = sizeof prios / sizeof prios[0] };
    zoo_create(zh, jp, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    for (int i = 0; i < P; i++) {
        char path[300], payload[32];
        unsigned char buf[64];
        const char *one[] = {payload};
        snprintf(payload, sizeof payload, "%d", prios[i]);
        snprintf(path, sizeof path, "%s/queue-%c%08X", jp, prios[i] < 0 ? '0' : '1',
                 (unsigned)prios[i]);
        CHECK(zoo_create(zh, path, (const char *)buf, (int)curator_frame(buf, one, 1),
                         &ZOO_OPEN_ACL_UNSAFE, ZOO_SEQUENCE, NULL, 0) == ZOK);
    }
    deferd_client *c = client(&d1);
    CHECK(deferd_subscribe(c, "jp", 1) == DEFERD_OK); /* one at a time: order shows */
    int last = -2147483647 - 1, n = 0, disorder = 0;
    deferd_job job;
    while (n < P && deferd_next_job(c, &job, 10000) == DEFERD_OK) {
        int p = atoi((const char *)job.payload);
        disorder += p < last;
        CHECK(job.priority == (uint32_t)(p < 0 ? 0 : p)); /* shown clamped to deferd's range */
        last = p;
        n++;
        CHECK(deferd_ack(c, job.id) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    printf("priority queue: %d items, %d out of Curator's order\n", n, disorder);
    CHECK(n == P && disorder == 0);
    deferd_close(c);
}

/* ---- dead letters ---- */

/* Runs deferctl with d1's config plus the priority queue's section (deferctl has no -o). */
static int deferctl(const char *args, char *out, size_t len)
{
    char ini[400], cmd[2048];
    snprintf(ini, sizeof ini, "%s/deferctl.ini", d1.dir);
    snprintf(cmd, sizeof cmd, "cp %s/deferd.ini %s && printf '[queue jp]\\nformat = "
             "curator-priority\\ncurator_path = %s\\ncurator_lock_path = %s\\n' >> %s && "
             "%s -c %s %s", d1.dir, ini, jp, jp_locks, ini, getenv("DEFERCTL_BIN"), ini, args);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, len - 1, p) : 0;
    out[n] = '\0';
    int status = p ? pclose(p) : -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* jp has max_attempts = 2: the second nack buries the item; deferctl puts it back as a
 * Curator item of the same priority. */
static void dead_letter(void)
{
    deferd_client *c = client(&d1);
    char id[DEFERD_ID_SIZE], out[4096], args[600];
    CHECK(put_job(c, "jp", "doomed", -1, -1, 5, id) == 0);
    CHECK(deferd_subscribe(c, "jp", 1) == DEFERD_OK);
    deferd_job job;
    for (uint32_t attempt = 1; attempt <= 2; attempt++) {
        CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
        CHECK(job.attempt == attempt && job.priority == 5);
        CHECK(deferd_nack(c, job.id, -1) == DEFERD_OK);
        deferd_job_clear(&job);
    }
    CHECK(children(jp) == 0);
    CHECK(deferctl("dead list jp", out, sizeof out) == 0);
    char dead[DEFERD_ID_SIZE] = "";
    CHECK(strchr(out, '\n') && sscanf(strchr(out, '\n') + 1, "%255s", dead) == 1);
    CHECK(strncmp(dead, "jp/", 3) == 0 && strstr(dead, "-a2") != NULL);
    snprintf(args, sizeof args, "dead kick %s", dead);
    CHECK(deferctl(args, out, sizeof out) == 0);
    sscanf(out, "%255s", id);
    CHECK(strncmp(id, "jp/queue-100000005", 18) == 0); /* a Curator item, priority 5 */
    CHECK(deferd_next_job(c, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, id);
    CHECK(job.attempt == 1 && job.len == 6 && memcmp(job.payload, "doomed", 6) == 0);
    CHECK(deferd_ack(c, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(children(jp) == 0 && children(jp_locks) == 0);
    deferd_close(c);
}

/* ---- a queue past what one ZooKeeper reply can list ---- */

/* Creates (or deletes) item I of the big queue, BIG_PER per transaction. */
enum { BIG = 30001, BIG_PER = 1000 };

static void big_items(int create, long long epoch)
{
    static char paths[BIG_PER][256];
    static zoo_op_t ops[BIG_PER];
    static zoo_op_result_t res[BIG_PER];
    for (int done = 0; done < BIG; done += BIG_PER) {
        int n = BIG - done < BIG_PER ? BIG - done : BIG_PER;
        for (int i = 0; i < n; i++) {
            snprintf(paths[i], sizeof paths[i], "%s/queue-|%llX|%010d", big, epoch, done + i);
            if (create)
                zoo_create_op_init(&ops[i], paths[i], NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL,
                                   0);
            else
                zoo_delete_op_init(&ops[i], paths[i], -1);
        }
        CHECK(zoo_multi(zh, n, ops, res) == ZOK);
    }
}

static void too_big_to_list(void)
{
    long long epoch = now_ms() + 3600000; /* not due: nothing may be delivered anyway */
    zoo_create(zh, big, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    big_items(1, epoch);
    deferd_client *c = client(&d2), *other = client(&d2);
    CHECK(deferd_subscribe(c, "big", 1) == DEFERD_OK);
    int64_t deadline = now_ms() + 10000;
    while (!log_has(&d2, "more than one ZooKeeper reply can carry") && now_ms() < deadline)
        usleep(50000);
    CHECK(log_has(&d2, "more than one ZooKeeper reply can carry"));
    /* the daemon's session and its other queues are unharmed */
    char id[DEFERD_ID_SIZE];
    CHECK(deferd_subscribe(other, "a", 1) == DEFERD_OK);
    CHECK(put_job(other, "a", "still fine", 0, -1, -1, id) == 0);
    deferd_job job;
    CHECK(deferd_next_job(other, &job, 10000) == DEFERD_OK);
    CHECK_STR(job.id, id);
    CHECK(deferd_ack(other, job.id) == DEFERD_OK);
    deferd_job_clear(&job);
    CHECK(!log_has(&d2, "SUSPENDED"));
    deferd_close(other);
    deferd_close(c);
    big_items(0, epoch);
}

/* ---- Curator consumers and deferd daemons on one queue ---- */

static pid_t spawn_java(const char *out, const char *stop)
{
    const char *java = getenv("DEFERD_JAVA"), *cp = getenv("DEFERD_JAVA_CP");
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), dn = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(dn, 2);
        execl(java, java, "-cp", cp, "CuratorConsume", harness_zk_hosts, "delay", mx, mx_locks,
              "0", "120", "2", stop, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Lines "<received ms> <i> <due>" written so far by a Java consumer. */
static void read_java(const char *out, struct tally *t)
{
    FILE *f = fopen(out, "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        long long at;
        int off = 0;
        if (strchr(line, '\n') && sscanf(line, "%lld %n", &at, &off) == 1)
            count(t, line + off, at);
    }
    if (f)
        fclose(f);
}

static void mixed(void)
{
    char out[2][300], stop[300];
    snprintf(stop, sizeof stop, "%s/java-stop", d1.dir);
    unlink(stop);
    pid_t java[2];
    for (int k = 0; k < 2; k++) {
        snprintf(out[k], sizeof out[k], "%s/java-%d.out", d1.dir, k);
        java[k] = spawn_java(out[k], stop);
    }
    /* Curator's start() makes the lock directory: the JVMs are up (deferd has not been
     * asked to follow this queue yet, so it is not deferd's doing). */
    int64_t up = now_ms() + 30000;
    while (!zk_exists(zh, mx_locks) && now_ms() < up)
        usleep(20000);
    CHECK(zk_exists(zh, mx_locks));
    deferd_client *p = client(&d1), *a = client(&d1), *b = client(&d2);
    CHECK(deferd_subscribe(a, "mx", 2) == DEFERD_OK);
    CHECK(deferd_subscribe(b, "mx", 2) == DEFERD_OK);
    int64_t base = now_ms() + 1000;
    char id[DEFERD_ID_SIZE];
    for (int i = 0; i < N; i++) {
        char payload[64];
        deferd_put_opts o = {.has_at = 1, .at_ms = (uint64_t)(base + (i * 7919) % 1000)};
        snprintf(payload, sizeof payload, "%d %llu", i, (unsigned long long)o.at_ms);
        CHECK(deferd_put_send(p, "mx", payload, strlen(payload), &o) == DEFERD_OK);
        while (deferd_puts_outstanding(p) > (i + 1 < N ? 64 : 0))
            CHECK(deferd_put_recv(p, id, sizeof id, 10000) == DEFERD_OK);
    }
    static struct tally ours, total;
    int by[2] = {0, 0};
    int64_t deadline = now_ms() + 90000;
    for (;;) {
        deferd_client *cs[2] = {a, b};
        for (int k = 0; k < 2; k++) {
            deferd_job job;
            if (deferd_next_job(cs[k], &job, 5) == DEFERD_OK) { /* one each: turns */
                count(&ours, (const char *)job.payload, now_ms());
                by[k]++;
                /* Work: more than the Curator consumers' 2 ms, so that JVMs still warming up
                 * (on a loaded machine deferd took all 2000 in about 3 s, before they
                 * took one) get their share while deferd's consumers stay busy. */
                usleep(10000);
                CHECK(deferd_ack(cs[k], job.id) == DEFERD_OK);
                deferd_job_clear(&job);
            }
        }
        static struct tally java_now;
        memset(&java_now, 0, sizeof java_now);
        read_java(out[0], &java_now);
        read_java(out[1], &java_now);
        if (ours.got + ours.dups + java_now.got + java_now.dups >= N || now_ms() > deadline)
            break;
    }
    int fd = open(stop, O_WRONLY | O_CREAT, 0644); /* the Java consumers finish and exit */
    close(fd);
    int java_ok = 0;
    for (int k = 0; k < 2; k++) {
        int status = -1;
        int64_t end = now_ms() + 30000;
        while (waitpid(java[k], &status, WNOHANG) == 0 && now_ms() < end)
            usleep(20000);
        if (now_ms() >= end) {
            kill(java[k], SIGKILL);
            waitpid(java[k], &status, 0);
        }
        java_ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    CHECK(java_ok == 2);
    int from_java[2] = {0, 0};
    memcpy(&total, &ours, sizeof total);
    for (int k = 0; k < 2; k++) {
        int before = total.got + total.dups;
        read_java(out[k], &total);
        from_java[k] = total.got + total.dups - before;
    }
    printf("mixed: %d items: deferd daemon 1 %d, daemon 2 %d, Curator consumers %d and %d; "
           "%d processed twice, %d early\n", total.got, by[0], by[1], from_java[0],
           from_java[1], total.dups, total.early);
    CHECK(total.got == N && total.dups == 0 && total.early == 0 && total.bad == 0);
    CHECK(by[0] + by[1] > 0 && from_java[0] + from_java[1] > 0); /* both kinds took part */
    CHECK(children(mx) == 0 && children(mx_locks) == 0);
    /* nothing of the queue is kept in memory once it is empty (no item leaked) */
    CHECK(stats_reach(&d1, " curator_items.mx=0"));
    CHECK(stats_reach(&d2, " curator_items.mx=0"));
    deferd_close(p);
    deferd_close(a);
    deferd_close(b);
}

/* ---- a daemon dies holding an item ---- */

static void daemon_dies(void)
{
    deferd_client *a = client(&d1);
    CHECK(deferd_subscribe(a, "jd", 1) == DEFERD_OK);
    unsigned char buf[64];
    const char *one[] = {"held"};
    char name[200];
    CHECK(put_item(jd, now_ms(), buf, curator_frame(buf, one, 1), name) == ZOK);
    deferd_job job;
    CHECK(deferd_next_job(a, &job, 10000) == DEFERD_OK);
    CHECK(job.attempt == 1);
    deferd_client *b = client(&d2);
    CHECK(deferd_subscribe(b, "jd", 1) == DEFERD_OK);
    deferd_job other;
    CHECK(deferd_next_job(b, &other, 300) == DEFERD_ETIMEDOUT); /* locked: not offered */
    daemon_kill(&d1, SIGKILL);
    deferd_close(a);
    CHECK(deferd_next_job(b, &other, 20000) == DEFERD_OK);
    CHECK_STR(other.id, job.id);
    CHECK(other.attempt == 2); /* the lock's write counted the first delivery */
    CHECK(deferd_ack(b, other.id) == DEFERD_OK);
    CHECK(children(jd) == 0);
    deferd_job_clear(&job);
    deferd_job_clear(&other);
    deferd_close(b);
}

static void set(char *buf, const char *name)
{
    snprintf(buf, 200, "%s/java/%s", root, name);
}

int main(void)
{
    harness_init("curator-consume", root, sizeof root);
    const char *java = getenv("DEFERD_JAVA");
    if (!java || !*java) {
        printf("it_curator_consume: skipped: no JDK and Curator jars (tests/run installs them)\n");
        return 77;
    }
    set(jd, "jd");
    set(jd_locks, "jd-locks");
    set(jdel, "jdel");
    set(jdel_locks, "jdel-locks");
    set(mx, "mx");
    set(mx_locks, "mx-locks");
    set(jp, "jp");
    set(jp_locks, "jp-locks");
    set(big, "big");
    set(big_locks, "big-locks");
    char o[20][300];
    int n = 0;
    const char *names[] = {"jd", "jdel", "mx", "jp", "big"};
    const char *paths[][2] = {{jd, jd_locks}, {jdel, jdel_locks}, {mx, mx_locks},
                              {jp, jp_locks}, {big, big_locks}};
    for (int i = 0; i < 5; i++) {
        snprintf(o[n++], 300, "queue %s.format=curator-%s", names[i], i == 3 ? "priority"
                                                                               : "delay");
        snprintf(o[n++], 300, "queue %s.curator_path=%s", names[i], paths[i][0]);
        snprintf(o[n++], 300, "queue %s.curator_lock_path=%s", names[i], paths[i][1]);
    }
    snprintf(o[n++], 300, "queue jdel.curator_corrupt=delete");
    snprintf(o[n++], 300, "queue jp.max_attempts=2");
    const char *overrides[22];
    for (int i = 0; i < n; i++)
        overrides[i] = o[i];
    overrides[n] = NULL;
    CHECK(daemon_start(&d1, root, "c1", overrides) == 0);
    CHECK(daemon_start(&d2, root, "c2", overrides) == 0);
    zh = zk_connect();
    from_java();
    strange_nodes();
    nack_one_part();
    priority_order();
    dead_letter();
    too_big_to_list();
    mixed();
    daemon_dies();
    daemon_kill(&d2, SIGTERM);
    zookeeper_close(zh);
    return check_report("it_curator_consume");
}
