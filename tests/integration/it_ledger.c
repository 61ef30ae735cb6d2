/* The ledger test: 3 daemons and 6 consumer processes share a queue of 5000 jobs due over
 * 20 s, while two consumers and one daemon are SIGKILLed (and restarted). Every job must be
 * acked, none left in ZooKeeper, and every repeated delivery must follow a delivery whose
 * holder died or lost its connection, with a higher attempt number. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uthash.h>

#include "harness.h"

enum { NDAEMONS = 3, NCONS = 6, NJOBS = 5000, WINDOW_MS = 20000 };

static struct daemon_proc dm[NDAEMONS];
static char root[128], ledger_dir[256];
static pid_t cons_pid[NCONS];
static int incarnation[NCONS];

/* One ledger line per write(2), so that lines stay whole when the writer is killed. */
static void note(int fd, char kind, const char *id, unsigned attempt, const char *tag)
{
    char line[400];
    int n = id ? snprintf(line, sizeof line, "%c %s %u %s\n", kind, id, attempt, tag)
               : snprintf(line, sizeof line, "%c %s\n", kind, tag);
    if (write(fd, line, (size_t)n) != n)
        _exit(3);
}

/* One consumer process: takes jobs from its daemon, writes D(elivered) and A(cked) lines;
 * when the connection breaks it writes X and reconnects under a new tag. */
static void consumer_main(int k, int inc)
{
    char path[300], tag[32];
    snprintf(path, sizeof path, "%s/c%d-%d.log", ledger_dir, k, inc);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    for (int round = 0;; round++) {
        snprintf(tag, sizeof tag, "c%d-%d-%d", k, inc, round);
        deferd_client *c = NULL;
        while (!(c = deferd_connect(dm[k % NDAEMONS].sock, NULL, 0)))
            usleep(50000);
        deferd_set_timeout(c, 20000);
        if (deferd_subscribe(c, "a", 2) != DEFERD_OK) {
            deferd_close(c);
            usleep(50000);
            continue;
        }
        for (;;) {
            deferd_job job;
            int rc = deferd_next_job(c, &job, 500);
            if (rc == DEFERD_ETIMEDOUT)
                continue;
            if (rc != DEFERD_OK)
                break;
            note(fd, 'D', job.id, job.attempt, tag);
            usleep(10000);                           /* the "work": 10 ms per job */
            note(fd, 'a', job.id, job.attempt, tag); /* about to ack */
            rc = deferd_ack(c, job.id);
            if (rc == DEFERD_OK)
                note(fd, 'A', job.id, job.attempt, tag);
            deferd_job_clear(&job);
            if (rc == DEFERD_EIO)
                break;
        }
        note(fd, 'X', NULL, 0, tag); /* this tag's unacked jobs may come back */
        deferd_close(c);
    }
}

static void start_consumer(int k)
{
    int inc = ++incarnation[k];
    pid_t pid = fork();
    if (pid == 0) {
        consumer_main(k, inc);
        _exit(0);
    }
    cons_pid[k] = pid;
}

/* Whether consumer K's ledger ends with a D line: it holds a job it has not begun to ack. */
static int ledger_holding(int k)
{
    char path[300], buf[512];
    snprintf(path, sizeof path, "%s/c%d-%d.log", ledger_dir, k, incarnation[k]);
    int fd = open(path, O_RDONLY);
    off_t end = fd >= 0 ? lseek(fd, 0, SEEK_END) : 0;
    ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, end > 500 ? end - 500 : 0) : 0;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    if (buf[n - 1] == '\n')
        buf[n - 1] = '\0'; /* whole lines only: each is one write(2) */
    char *line = strrchr(buf, '\n');
    return (line ? line + 1 : buf)[0] == 'D';
}

/* Stops consumer K (SIGSTOP) at a moment it holds a job, so that the kill that follows
 * surely hits a held job however slowly this machine runs: stopped, its ledger is still.
 * Up to 5 s; the consumer is left stopped (SIGCONT or SIGKILL it). */
static void freeze_holding(int k)
{
    int64_t deadline = now_ms() + 5000;
    while (now_ms() < deadline) {
        int st;
        kill(cons_pid[k], SIGSTOP);
        if (waitpid(cons_pid[k], &st, WUNTRACED) == cons_pid[k] && WIFSTOPPED(st) &&
            ledger_holding(k))
            return;
        kill(cons_pid[k], SIGCONT);
        usleep(2000);
    }
    printf("consumer %d never seen holding a job\n", k);
}

static void kill_consumer(int k)
{
    kill(cons_pid[k], SIGKILL);
    waitpid(cons_pid[k], NULL, 0);
    char path[300];
    snprintf(path, sizeof path, "%s/killed", ledger_dir);
    FILE *f = fopen(path, "a");
    fprintf(f, "c%d-%d-\n", k, incarnation[k]); /* every tag of that incarnation */
    fclose(f);
}

struct entry {
    UT_hash_handle hh;
    char id[DEFERD_ID_SIZE];
    int ndeliv, acked, ack_sent;
    char ack_sent_tag[32];
    unsigned attempts[16];
    char tags[16][32];
    unsigned ack_attempt;
};

static struct entry *ledger;
static char dead_tags[4096];   /* "\n"-separated tags or tag prefixes of dead holders */

static struct entry *entry_for(const char *id)
{
    struct entry *e;
    HASH_FIND_STR(ledger, id, e);
    if (!e) {
        e = calloc(1, sizeof *e);
        snprintf(e->id, sizeof e->id, "%s", id);
        HASH_ADD_STR(ledger, id, e);
    }
    return e;
}

static void read_ledger_file(const char *path)
{
    FILE *f = fopen(path, "r");
    char kind[4], id[DEFERD_ID_SIZE], tag[32];
    unsigned attempt;
    while (f && fscanf(f, "%3s", kind) == 1) {
        if (kind[0] == 'X') {
            if (fscanf(f, "%31s", tag) == 1)
                snprintf(dead_tags + strlen(dead_tags), sizeof dead_tags - strlen(dead_tags),
                         "%s\n", tag);
            continue;
        }
        if (fscanf(f, "%255s %u %31s", id, &attempt, tag) != 3)
            break;
        struct entry *e = entry_for(id);
        if (kind[0] == 'D' && e->ndeliv < 16) {
            e->attempts[e->ndeliv] = attempt;
            snprintf(e->tags[e->ndeliv++], sizeof e->tags[0], "%s", tag);
        } else if (kind[0] == 'a') {
            e->ack_sent++;
            snprintf(e->ack_sent_tag, sizeof e->ack_sent_tag, "%s", tag);
        } else if (kind[0] == 'A') {
            e->acked++;
            e->ack_attempt = attempt;
        }
    }
    if (f)
        fclose(f);
}

static int tag_dead(const char *tag)
{
    char *line = dead_tags;
    while (*line) {
        char *end = strchr(line, '\n');
        size_t n = (size_t)(end - line);
        if (strncmp(tag, line, n) == 0 && (tag[n] == '\0' || line[n - 1] == '-'))
            return 1;
        line = end + 1;
    }
    return 0;
}

static void read_ledgers(void)
{
    char path[400];
    for (int k = 0; k < NCONS; k++)
        for (int inc = 1; inc <= incarnation[k]; inc++) {
            snprintf(path, sizeof path, "%s/c%d-%d.log", ledger_dir, k, inc);
            read_ledger_file(path);
        }
    snprintf(path, sizeof path, "%s/killed", ledger_dir);
    FILE *f = fopen(path, "r");
    char line[64];
    while (f && fgets(line, sizeof line, f))
        snprintf(dead_tags + strlen(dead_tags), sizeof dead_tags - strlen(dead_tags), "%s", line);
    if (f)
        fclose(f);
}

/* Every job acked; every extra delivery explained by a dead holder; attempts rising. */
static void check_ledger(char ids[][DEFERD_ID_SIZE])
{
    read_ledgers();
    int unacked = 0, unexplained = 0, dups = 0, bad_attempts = 0, unconfirmed = 0;
    for (int i = 0; i < NJOBS; i++) {
        struct entry *e;
        HASH_FIND_STR(ledger, ids[i], e);
        if (e && !e->acked && e->ack_sent && tag_dead(e->ack_sent_tag)) {
            unconfirmed++; /* acked, then its consumer or daemon died before the answer */
            printf("  ack unconfirmed: %s by %s (holder died; the job is gone)\n", e->id,
                   e->ack_sent_tag);
        } else if (!e || !e->acked) {
            unacked++;
            continue;
        }
        if (e->ndeliv < 2)
            continue;
        dups++;
        printf("  repeated: %s attempts", e->id);
        for (int k = 0; k < e->ndeliv; k++) {
            printf(" %u(%s)", e->attempts[k], e->tags[k]);
            if (e->attempts[k] != e->ack_attempt && !tag_dead(e->tags[k]))
                unexplained++;
            for (int m = 0; m < k; m++)
                bad_attempts += e->attempts[m] == e->attempts[k];
        }
        printf(", acked as attempt %u\n", e->ack_attempt);
    }
    printf("ledger: %d jobs, %d lost, %d acked without confirmation, %d delivered more than "
           "once, %d unexplained, %d repeated attempt numbers\n", NJOBS, unacked, unconfirmed,
           dups, unexplained, bad_attempts);
    CHECK(unacked == 0);
    CHECK(unexplained == 0);
    CHECK(bad_attempts == 0);
    CHECK(HASH_COUNT(ledger) == NJOBS);
    CHECK(dups + unconfirmed >= 3); /* each of the three kills hit a held job (frozen) */
}

static void chaos(int64_t base)
{
    struct { int64_t at; int what; } plan[] = {{4000, 1}, {8000, 4}, {11000, -1}, {13000, -2}};
    for (size_t i = 0; i < sizeof plan / sizeof plan[0]; i++) {
        while (now_ms() < base + plan[i].at)
            usleep(10000);
        if (plan[i].what >= 0) {
            freeze_holding(plan[i].what);
            kill_consumer(plan[i].what);
            start_consumer(plan[i].what);
            printf("t+%llds: SIGKILL consumer %d, restarted\n", (long long)plan[i].at / 1000,
                   plan[i].what);
        } else if (plan[i].what == -1) {
            freeze_holding(2); /* consumer 2 uses daemon 2 */
            daemon_kill(&dm[2], SIGKILL);
            kill(cons_pid[2], SIGCONT); /* its ack fails: the job went back with the session */
            printf("t+%llds: SIGKILL daemon 2\n", (long long)plan[i].at / 1000);
        } else {
            CHECK(daemon_restart(&dm[2], NULL) == 0);
            printf("t+%llds: daemon 2 restarted\n", (long long)plan[i].at / 1000);
        }
    }
}

int main(void)
{
    static char ids[NJOBS][DEFERD_ID_SIZE];
    harness_init("ledger", root, sizeof root);
    snprintf(ledger_dir, sizeof ledger_dir, "/tmp/deferd-it-%d-ledger", (int)getpid());
    mkdir(ledger_dir, 0755);
    for (int i = 0; i < NDAEMONS; i++) {
        char tag[8];
        snprintf(tag, sizeof tag, "g%d", i);
        if (daemon_start(&dm[i], root, tag, NULL) != 0)
            return 1;
    }
    zhandle_t *zh = zk_connect();
    for (int k = 0; k < NCONS; k++)
        start_consumer(k);
    deferd_client *prod[NDAEMONS];
    for (int i = 0; i < NDAEMONS; i++)
        prod[i] = client(&dm[i]);
    srand(11);
    int64_t t0 = now_ms();
    for (int i = 0; i < NJOBS; i++)
        CHECK(put_job(prod[i % NDAEMONS], "a", "ledger", -1, t0 + 3000 + rand() % WINDOW_MS, -1,
                      ids[i]) == 0);
    printf("put %d jobs in %lld ms\n", NJOBS, (long long)(now_ms() - t0));
    for (int i = 0; i < NDAEMONS; i++)
        deferd_close(prod[i]);
    chaos(t0 + 3000);
    int64_t deadline = t0 + 3000 + WINDOW_MS + 60000;
    int left;
    while ((left = zk_count_jobs(zh, root, "a")) > 0 && now_ms() < deadline)
        usleep(300000);
    printf("all jobs gone from ZooKeeper %lld ms after the last due time (%d left)\n",
           (long long)(now_ms() - (t0 + 3000 + WINDOW_MS)), left);
    CHECK(left == 0);
    for (int k = 0; k < NCONS; k++) {
        kill(cons_pid[k], SIGKILL);
        waitpid(cons_pid[k], NULL, 0);
    }
    check_ledger(ids);
    for (int i = 0; i < NDAEMONS; i++)
        daemon_kill(&dm[i], SIGTERM);
    zookeeper_close(zh);
    return check_report("it_ledger");
}
