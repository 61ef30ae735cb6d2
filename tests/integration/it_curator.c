/* deferd as a producer for Java services: jobs put through deferd into queues declared
 * `format = curator-delay` and `format = curator-priority` are consumed by a real Apache
 * Curator 5.4.0 consumer with lockPath (tests/java/CuratorConsume.java): every item arrives,
 * none before its due time, priorities in Curator's order. Also what deferd refuses.
 * deferd consuming Curator queues: it_curator_consume.c. */
#include <stdlib.h>

#include "harness.h"

enum { N = 2000 };

static struct daemon_proc d;
static char root[128];
static char delay_path[200], delay_locks[200], prio_path[200], prio_locks[200];

static int64_t due_of(int i, int64_t base) { return base + (i * 7919) % 3000; }
static uint32_t prio_of(int i) { return (uint32_t)((i * 7919) % 100003); }

static void put_all(deferd_client *c, const char *queue, int delay, int64_t base)
{
    char id[DEFERD_ID_SIZE];
    int ok = 0;
    for (int i = 0; i < N; i++) {
        char payload[64];
        deferd_put_opts o = {0};
        if (delay) {
            o.has_at = 1;
            o.at_ms = (uint64_t)due_of(i, base);
            snprintf(payload, sizeof payload, "%d %lld", i, (long long)o.at_ms);
        } else {
            o.has_priority = 1;
            o.priority = prio_of(i);
            snprintf(payload, sizeof payload, "%d %u", i, o.priority);
        }
        CHECK(deferd_put_send(c, queue, payload, strlen(payload), &o) == DEFERD_OK);
        while (deferd_puts_outstanding(c) > (i + 1 < N ? 64 : 0)) {
            int rc = deferd_put_recv(c, id, sizeof id, 10000);
            CHECK(rc == DEFERD_OK);
            ok += rc == DEFERD_OK;
        }
    }
    printf("%s: put %d, last id %s\n", queue, ok, id);
    CHECK(ok == N);
    CHECK(strncmp(id, queue, strlen(queue)) == 0 && strstr(id, "/queue-") != NULL);
}

/* Runs the Java consumer; checks each line "<received ms> <index> <due ms or priority>". */
static void consume(const char *mode, const char *path, const char *locks, int delay)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' -cp '%s' CuratorConsume %s %s '%s' '%s' %d 60 2>/dev/null",
             getenv("DEFERD_JAVA"), getenv("DEFERD_JAVA_CP"), harness_zk_hosts, mode, path,
             locks, N);
    FILE *f = popen(cmd, "r");
    CHECK(f != NULL);
    if (!f)
        return;
    static unsigned char seen[N];
    memset(seen, 0, sizeof seen);
    long long at, value, last = -1;
    int i, got = 0, dups = 0, early = 0, disorder = 0;
    while (fscanf(f, "%lld %d %lld", &at, &i, &value) == 3) {
        if (i < 0 || i >= N || seen[i]++) {
            dups++;
            continue;
        }
        got++;
        if (delay)
            early += at < value;
        else
            disorder += value < last;
        last = value;
    }
    int status = pclose(f);
    printf("Curator %s consumer: %d items, %d duplicates, %d early, %d out of priority order\n",
           mode, got, dups, early, disorder);
    CHECK(status == 0);
    CHECK(got == N && dups == 0 && early == 0 && disorder == 0);
}

static void refusals(deferd_client *c)
{
    char id[DEFERD_ID_SIZE];
    deferd_put_opts ttr = {.has_ttr = 1, .ttr_ms = 5000};
    CHECK(deferd_put(c, "cdelay", "x", 1, &ttr, id, sizeof id) == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(c), "BAD_REQUEST");
    deferd_put_opts big = {.has_priority = 1, .priority = 2147483648u};
    CHECK(deferd_put(c, "cprio", "x", 1, &big, id, sizeof id) == DEFERD_ESERVER);
    CHECK_CONTAINS(deferd_last_error(c), "signed 32-bit");
    deferd_client *s = client(&d);
    CHECK(deferd_subscribe(s, "cnolock", 1) == DEFERD_ESERVER); /* consuming needs locks */
    CHECK_CONTAINS(deferd_last_error(s), "curator_lock_path");
    deferd_close(s);
}

int main(void)
{
    harness_init("curator", root, sizeof root);
    const char *java = getenv("DEFERD_JAVA");
    if (!java || !*java) {
        printf("it_curator: skipped: no JDK and Curator jars (tests/run installs them)\n");
        return 77;
    }
    snprintf(delay_path, sizeof delay_path, "%s/java/delay", root);
    snprintf(delay_locks, sizeof delay_locks, "%s/java/delay-locks", root);
    snprintf(prio_path, sizeof prio_path, "%s/java/prio", root);
    snprintf(prio_locks, sizeof prio_locks, "%s/java/prio-locks", root);
    char o[8][300];
    snprintf(o[0], sizeof o[0], "queue cdelay.format=curator-delay");
    snprintf(o[1], sizeof o[1], "queue cdelay.curator_path=%s", delay_path);
    snprintf(o[2], sizeof o[2], "queue cdelay.curator_lock_path=%s", delay_locks);
    snprintf(o[3], sizeof o[3], "queue cprio.format=curator-priority");
    snprintf(o[4], sizeof o[4], "queue cprio.curator_path=%s", prio_path);
    snprintf(o[5], sizeof o[5], "queue cprio.curator_lock_path=%s", prio_locks);
    snprintf(o[6], sizeof o[6], "queue cnolock.format=curator-delay");
    snprintf(o[7], sizeof o[7], "queue cnolock.curator_path=%s/java/nolock", root);
    const char *const overrides[] = {o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], NULL};
    CHECK(daemon_start(&d, root, "c", overrides) == 0);
    deferd_client *c = client(&d);
    char id[DEFERD_ID_SIZE];
    CHECK(put_job(c, "a", "session up?", 0, -1, -1, id) == 0); /* waits for ZooKeeper */
    refusals(c);
    int64_t base = now_ms() + 3000;
    put_all(c, "cdelay", 1, base);
    put_all(c, "cprio", 0, 0);
    consume("delay", delay_path, delay_locks, 1);
    consume("priority", prio_path, prio_locks, 0);
    deferd_close(c);
    daemon_kill(&d, SIGTERM);
    return check_report("it_curator");
}
