/* libdeferd's wire format for keys, BATCH, follow-ups, CANCEL and RESCHEDULE, against a
 * scripted fake daemon (a child process on a Unix socket): each request must arrive byte
 * for byte as docs/protocol.md has it, and each reply, pushes mixed in, must be read back
 * right, also a 1000-id reply of about 250 KB. A put refused UNAVAILABLE is sent again as
 * its reply's fields say (stored=, reason=, tokens=, option=), and by its words only when
 * it has no fields (an older daemon). */
#include <deferd/client.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

struct step {
    char *req;   /* exactly what the client must send */
    char *reply; /* what the fake daemon answers */
};

#define NSTEPS 64
static struct step script[NSTEPS];
static int nsteps;

static void add(const char *req, const char *reply)
{
    if (nsteps == NSTEPS) {
        fprintf(stderr, "test_client: more than %d steps: raise NSTEPS\n", NSTEPS);
        exit(1);
    }
    script[nsteps].req = strdup(req);
    script[nsteps].reply = strdup(reply);
    nsteps++;
}

static int read_exact(int fd, char *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static void write_all(int fd, const char *s)
{
    for (size_t n = strlen(s), off = 0; off < n;) {
        ssize_t w = write(fd, s + off, n - off);
        if (w <= 0)
            _exit(3);
        off += (size_t)w;
    }
}

/* A put token the client made: NEW_TOKEN matches any, SAME_TOKEN only the last one seen. */
#define NEW_TOKEN " idem=\001\001\001\001\001\001\001\001\001\001\001\001\001\001\001" \
                  "\001\001\001\001\001\001\001\001\001\001\001\001\001\001\001"
#define SAME_TOKEN " idem=\002\002\002\002\002\002\002\002\002\002\002\002\002\002\002" \
                   "\002\002\002\002\002\002\002\002\002\002\002\002\002\002\002"
static char token_seen[31];

/* Does GOT match WANT, tokens as above? */
static int matches(const char *want, const char *got)
{
    for (size_t i = 0, t = 0; want[i]; i++) {
        if (want[i] == '\001' || want[i] == '\002') {
            int ok = want[i] == '\001' ? strchr("0123456789abcdef-", got[i]) != NULL
                                        : got[i] == token_seen[t];
            if (!ok || !got[i])
                return 0;
            token_seen[t++] = got[i];
        } else if (want[i] != got[i]) {
            return 0;
        }
    }
    return 1;
}

/* A step whose request is "": the client closes; the next connection goes on. */
static int next_connection(int lfd, int fd)
{
    char c;
    while (fd >= 0 && read(fd, &c, 1) > 0)
        ;
    if (fd >= 0)
        close(fd);
    fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        _exit(2);
    return fd;
}

/* The fake daemon: a request that differs from the script is answered with an ERR that
 * shows what came, and ends the script. */
static void serve(int lfd)
{
    int fd = next_connection(lfd, -1);
    for (int i = 0; i < nsteps; i++) {
        size_t n = strlen(script[i].req);
        if (n == 0) {
            fd = next_connection(lfd, fd);
            continue;
        }
        char *got = calloc(1, n + 1);
        if (!got || read_exact(fd, got, n) != 0)
            _exit(4);
        if (!matches(script[i].req, got)) {
            char msg[512];
            snprintf(msg, sizeof msg, "ERR MISMATCH step %d got '%.200s'\n", i + 1, got);
            write_all(fd, msg);
            _exit(5);
        }
        write_all(fd, script[i].reply);
        free(got);
    }
    char c;
    while (read(fd, &c, 1) > 0) /* until the client closes */
        ;
    _exit(0);
}

static void item(deferd_put_item *it, const char *queue, const char *payload, const char *key)
{
    memset(it, 0, sizeof *it);
    it->queue = queue;
    it->payload = payload;
    it->len = strlen(payload);
    it->opts.key = key;
}

/* 1000 jobs of one byte; the reply's ids are about 240 bytes each. */
static char *big_ids;
static void script_big_batch(void)
{
    size_t cap = 1000 * 32 + 64, rcap = 1000 * 256 + 64;
    char *req = malloc(cap), *reply = malloc(rcap);
    size_t n = (size_t)snprintf(req, cap, "BATCH 1000\n");
    size_t r = (size_t)snprintf(reply, rcap, "OK n=1000 parts=2 ids=");
    big_ids = reply + r;
    for (int i = 0; i < 1000; i++) {
        n += (size_t)snprintf(req + n, cap - n, "PUT big 1\nx\n");
        r += (size_t)snprintf(reply + r, rcap - r, "%sbig/%0220d-1-%x", i ? "," : "", i, i);
    }
    snprintf(reply + r, rcap - r, " dup=1000\n");
    add(req, reply);
    free(req);
    free(reply);
}

#define MAYBE_TEXT "the job may have been stored: the connection to ZooKeeper broke (x)"
#define NOT_STORED_TEXT "not stored (ZooKeeper did not come back within [daemon] hold_writes)"

/* Fields decide, also against the words of the text: each reply's text would decide the
 * other way. */
static void script_fields(void)
{
    add("PUT q 1" NEW_TOKEN "\nx\n", "ERR UNAVAILABLE stored=no reason=zookeeper ZooKeeper said no\n");
    add("PUT q 1" SAME_TOKEN "\nx\n", "ERR UNAVAILABLE stored=maybe reason=connection_lost gone\n");
    add("PUT q 1" SAME_TOKEN "\nx\n", "OK q/2\n");
    add("PUT q 1" NEW_TOKEN "\nx\n", "ERR UNAVAILABLE stored=no reason=permission not stored\n");
    add("PUT q 1" NEW_TOKEN "\nx\n",
        "ERR UNAVAILABLE stored=maybe reason=connection_lost tokens=no " MAYBE_TEXT "\n");
    add("PUT q 1 key=k1\nx\n", "ERR UNAVAILABLE stored=maybe reason=connection_lost gone\n");
    add("PUT q 1 key=k1\nx\n", "OK q/1-5-ab-kk1 duplicate\n");
    add("PUT q 1" NEW_TOKEN "\nx\n", "ERR UNAVAILABLE stored=no reason=draining not stored\n");
    add("PUT q 1" NEW_TOKEN "\nx\n", "ERR BAD_REQUEST option=prio unknown option 'idem'\n");
    add("PUT q 1" NEW_TOKEN "\nx\n", "ERR BAD_REQUEST option=idem unknown option\n");
    add("PUT q 1\nx\n", "OK q/3\n");
}

/* A daemon older than the fields: the words of its text decide. */
static void script_old_text(void)
{
    add("", "");
    add("PUT q 1" NEW_TOKEN "\nx\n", "ERR UNAVAILABLE " MAYBE_TEXT "\n");
    add("PUT q 1" SAME_TOKEN "\nx\n", "ERR UNAVAILABLE " NOT_STORED_TEXT "\n");
    add("PUT q 1" SAME_TOKEN "\nx\n", "OK q/4\n");
    add("PUT q 1" NEW_TOKEN "\nx\n", "ERR UNAVAILABLE not stored: permission denied by ZooKeeper\n");
    add("PUT q 1" NEW_TOKEN "\nx\n", "ERR UNAVAILABLE " MAYBE_TEXT "; a Curator format queue "
        "keeps no put tokens\n");
    add("PUT q 1" NEW_TOKEN "\nx\n", "ERR UNAVAILABLE deferd is stopping; not stored\n");
    add("PUT q 1" NEW_TOKEN "\nx\n", "ERR BAD_REQUEST unknown or repeated option 'idem'\n");
    add("PUT q 1\nx\n", "OK q/5\n");
    add("PUT q 1\nx\n", "ERR UNAVAILABLE " MAYBE_TEXT "\n"); /* no token now: not again */
}

static void check_put_fails(deferd_client *c, int stored, const char *reason)
{
    CHECK(deferd_put(c, "q", "x", 1, NULL, NULL, 0) == DEFERD_ESERVER);
    CHECK(deferd_last_error_stored(c) == stored);
    CHECK_STR(deferd_last_error_reason(c), reason);
}

static void run_fields(deferd_client *c)
{
    char id[DEFERD_ID_SIZE];
    deferd_put_opts keyed = {.key = "k1"};
    CHECK(deferd_put(c, "q", "x", 1, NULL, id, sizeof id) == DEFERD_OK);
    CHECK_STR(id, "q/2");
    check_put_fails(c, DEFERD_STORED_NO, "permission");
    check_put_fails(c, DEFERD_STORED_MAYBE, "connection_lost");
    CHECK(deferd_put(c, "q", "x", 1, &keyed, id, sizeof id) == DEFERD_OK);
    CHECK_STR(id, "q/1-5-ab-kk1");
    check_put_fails(c, DEFERD_STORED_NO, "draining");
    CHECK_STR(deferd_last_error(c), "UNAVAILABLE stored=no reason=draining not stored");
    check_put_fails(c, DEFERD_STORED_UNSAID, "");
    CHECK(deferd_put(c, "q", "x", 1, NULL, id, sizeof id) == DEFERD_OK);
    CHECK_STR(id, "q/3");
}

static deferd_client *run_old_text(deferd_client *c, const char *path)
{
    char id[DEFERD_ID_SIZE], err[256];
    deferd_close(c);
    if (!(c = deferd_connect(path, err, sizeof err)))
        return NULL;
    deferd_set_timeout(c, 10000);
    CHECK(deferd_put(c, "q", "x", 1, NULL, id, sizeof id) == DEFERD_OK);
    CHECK_STR(id, "q/4");
    for (int i = 0; i < 3; i++)
        check_put_fails(c, DEFERD_STORED_UNSAID, "");
    CHECK(deferd_put(c, "q", "x", 1, NULL, id, sizeof id) == DEFERD_OK);
    CHECK_STR(id, "q/5");
    check_put_fails(c, DEFERD_STORED_UNSAID, "");
    return c;
}

static void write_script(void)
{
    add("PUT q 1 key=k1\nx\n", "OK q/1-2-abc-kk1 duplicate\n");
    add("PUT q 1 key=k1\nx\n", "OK q/1-2-abc-kk1 duplicate done\n");
    add("PUT q 1 delay=5 key=a:b@c-d\nx\n", "OK q/9-2-abc-ka:b@c-d\n");
    add("SUB q\n", "OK\n");
    add("BATCH 3\nPUT q 1\na\nPUT q 1 key=k2\nb\nPUT r 0 prio=3\n\n",
        "STATE SUSPENDED\nOK n=3 parts=1 ids=q/1-1-a,q/1-1-b-kk2,r/1-1-c dup=2\n");
    script_big_batch();
    add("BATCH 3\nPUT q 1\na\nPUT q 1 key=k2\nb\nPUT r 0 prio=3\n\n",
        "ERR PARTIAL stored=2 ids=q/1-1-a,q/1-1-b-kk2 ZooKeeper went away\n");
    add("ACK q/1-1-a then=1\nPUT q 1\nz\n", "OK n=1 ids=q/2-1-z dup=-\n");
    add("NACK q/1-1-a delay=5 then=1\nPUT q 1\nz\n",
        "EXPIRED q/1-1-b\nOK q/9-1-a-a1 n=1 ids=q/2-1-z-kz dup=1\n");
    add("NACK q/1-1-a then=1\nPUT q 1\nz\n", "OK n=1 ids=q/2-1-z dup=-\n");
    add("CANCEL q key=k1 force=1\n", "OK q/1-2-abc-kk1\n");
    add("CANCEL q/1-2-abc\n", "ERR IN_FLIGHT held by host:1\n");
    add("RESCHEDULE q/1-2-abc delay=100\n", "OK q/5-2-abc\n");
    add("RESCHEDULE q key=k1 at=77\n", "OK q/77-2-abc-kk1\n");
    add("PUT q 1 key=k1\nx\n", "OK q/1-2-abc-kk1 duplicate\n");
    add("UNSUB\n", "OK\n");
    add("UNSUB q,r\n", "OK\n");
    add("NACK q/1-1-a unrun=1\n", "CANCELLED q/1-1-c\nNEWPUSH of a later daemon\nOK\n");
    add("NACK q/1-1-b-a1 unrun=1\n", "OK q/1-1-b\n");
    script_fields();
    script_old_text();
}

static void run_puts(deferd_client *c)
{
    deferd_put_item it;
    char id[DEFERD_ID_SIZE];
    item(&it, "q", "x", "k1");
    CHECK(deferd_put_one(c, &it) == DEFERD_OK && it.duplicate == 1);
    CHECK_STR(it.id, "q/1-2-abc-kk1");
    CHECK(deferd_put(c, "q", "x", 1, &it.opts, id, sizeof id) == DEFERD_OK);
    CHECK_STR(id, "q/1-2-abc-kk1");
    item(&it, "q", "x", "a:b@c-d");
    it.opts.has_delay = 1;
    it.opts.delay_ms = 5;
    CHECK(deferd_put_one(c, &it) == DEFERD_OK && it.duplicate == 0);
    static const char *const bad[] = {"", "-a", ".a", "a/b", "a b", "_a",
        "12345678901234567890123456789012345678901234567890123456789012345"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        item(&it, "q", "x", bad[i]);
        CHECK(deferd_put_one(c, &it) == DEFERD_EARG);
        CHECK(deferd_put_send(c, "q", "x", 1, &it.opts) == DEFERD_EARG);
    }
    CHECK(deferd_subscribe(c, "q", 0) == DEFERD_OK);
}

static void run_batches(deferd_client *c)
{
    deferd_put_item its[3];
    unsigned parts = 0;
    size_t stored = 99;
    item(&its[0], "q", "a", NULL);
    item(&its[1], "q", "b", "k2");
    item(&its[2], "r", "", NULL);
    its[2].opts.has_priority = 1;
    its[2].opts.priority = 3;
    CHECK(deferd_put_batch(c, its, 3, &parts, &stored) == DEFERD_OK);
    CHECK(parts == 1 && stored == 3);
    CHECK_STR(its[0].id, "q/1-1-a");
    CHECK_STR(its[1].id, "q/1-1-b-kk2");
    CHECK_STR(its[2].id, "r/1-1-c");
    CHECK(!its[0].duplicate && its[1].duplicate && !its[2].duplicate);

    deferd_put_item *many = calloc(1000, sizeof *many);
    for (int i = 0; i < 1000; i++)
        item(&many[i], "big", "x", NULL);
    CHECK(deferd_put_batch(c, many, 1000, &parts, &stored) == DEFERD_OK);
    CHECK(parts == 2 && stored == 1000 && many[999].duplicate && !many[998].duplicate);
    CHECK(strncmp(many[999].id, "big/", 4) == 0 && strlen(many[999].id) == 4 + 220 + 3 + 3);
    free(many);

    CHECK(deferd_put_batch(c, its, 3, &parts, &stored) == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(c), "PARTIAL");
    CHECK_CONTAINS(deferd_last_error(c), "ZooKeeper went away");
    CHECK(stored == 2 && its[2].id[0] == '\0');
    CHECK_STR(its[1].id, "q/1-1-b-kk2");
    CHECK(deferd_put_batch(c, its, 0, NULL, NULL) == DEFERD_EARG);
    its[1].opts.key = "no way";
    CHECK(deferd_put_batch(c, its, 3, NULL, &stored) == DEFERD_EARG && stored == 0);
    CHECK_CONTAINS(deferd_last_error(c), "item 2: ");
}

static void run_followups(deferd_client *c)
{
    deferd_put_item z;
    char moved[DEFERD_ID_SIZE];
    item(&z, "q", "z", NULL);
    CHECK(deferd_ack_then(c, "q/1-1-a", &z, 1) == DEFERD_OK && !z.duplicate);
    CHECK_STR(z.id, "q/2-1-z");
    CHECK(deferd_nack_then(c, "q/1-1-a", 5, &z, 1, moved, sizeof moved) == DEFERD_OK);
    CHECK_STR(moved, "q/9-1-a-a1");
    CHECK_STR(z.id, "q/2-1-z-kz");
    CHECK(z.duplicate);
    CHECK(deferd_nack_then(c, "q/1-1-a", -1, &z, 1, moved, sizeof moved) == DEFERD_OK);
    CHECK_STR(moved, "");
}

static void run_cancel(deferd_client *c)
{
    char id[DEFERD_ID_SIZE];
    CHECK(deferd_cancel(c, NULL, "q", "k1", 1, id, sizeof id) == DEFERD_OK);
    CHECK_STR(id, "q/1-2-abc-kk1");
    CHECK(deferd_cancel(c, "q/1-2-abc", NULL, NULL, 0, NULL, 0) == DEFERD_ESERVER);
    CHECK_STR(deferd_last_error_code(c), "IN_FLIGHT");
    CHECK(deferd_cancel(c, "q/1-2-abc", "q", "k1", 0, NULL, 0) == DEFERD_EARG);
    CHECK(deferd_cancel(c, NULL, "q", NULL, 0, NULL, 0) == DEFERD_EARG);
    CHECK(deferd_reschedule(c, "q/1-2-abc", NULL, NULL, 0, 0, 100, id, sizeof id) == DEFERD_OK);
    CHECK_STR(id, "q/5-2-abc");
    CHECK(deferd_reschedule(c, NULL, "q", "k1", 1, 77, 0, id, sizeof id) == DEFERD_OK);
    CHECK_STR(id, "q/77-2-abc-kk1");
}

/* A pipelined put with a key: a duplicate is an OK with the existing id. */
static void run_pipelined(deferd_client *c)
{
    deferd_put_opts o = {.key = "k1"};
    char id[DEFERD_ID_SIZE];
    CHECK(deferd_put_send(c, "q", "x", 1, &o) == DEFERD_OK);
    CHECK(deferd_put_recv(c, id, sizeof id, 5000) == DEFERD_OK);
    CHECK_STR(id, "q/1-2-abc-kk1");
}

/* UNSUB, and jobs given back unrun: the same id, or the new one the reply names. */
static void run_leaving(deferd_client *c)
{
    char next[DEFERD_ID_SIZE], version[32];
    CHECK(deferd_unsubscribe(c, NULL) == DEFERD_OK);
    CHECK(deferd_unsubscribe(c, "q,r") == DEFERD_OK);
    CHECK(deferd_unsubscribe(c, "bad queue") == DEFERD_EARG);
    CHECK(deferd_nack_unrun(c, "q/1-1-a", next, sizeof next) == DEFERD_OK);
    CHECK_STR(next, "q/1-1-a");
    CHECK(deferd_nack_unrun(c, "q/1-1-b-a1", next, sizeof next) == DEFERD_OK);
    CHECK_STR(next, "q/1-1-b");
    CHECK(deferd_nack_unrun(c, "q/1-1-a", next, 10) == DEFERD_EARG);
    snprintf(version, sizeof version, "%d.%d.%d", DEFERD_VERSION_MAJOR, DEFERD_VERSION_MINOR,
             DEFERD_VERSION_PATCH);
    CHECK_STR(deferd_version(), version);
}

static void run_events(deferd_client *c)
{
    deferd_event ev;
    memset(&ev, 0, sizeof ev);
    CHECK(deferd_next_event(c, &ev, 0) == DEFERD_OK && ev.kind == DEFERD_EV_STATE);
    CHECK_STR(ev.state, "SUSPENDED");
    CHECK(deferd_next_event(c, &ev, 0) == DEFERD_OK && ev.kind == DEFERD_EV_EXPIRED);
    CHECK_STR(ev.job.id, "q/1-1-b");
    CHECK(deferd_next_event(c, &ev, 0) == DEFERD_OK && ev.kind == DEFERD_EV_CANCELLED);
    CHECK_STR(ev.job.id, "q/1-1-c");
    CHECK(deferd_next_event(c, &ev, 0) == DEFERD_ETIMEDOUT); /* NEWPUSH was skipped */
}

/* The uid comes from the id alone (no request): the same on every delivery of a job. */
static void job_uids(void)
{
    char uid[DEFERD_UID_SIZE];
    CHECK(deferd_job_uid("q/1763769605123-10-5f1e0c2a9b3d4e01-a2", uid, sizeof uid) == 0);
    CHECK(strcmp(uid, "5f1e0c2a9b3d4e01") == 0);
    CHECK(deferd_job_uid("q/s1-0/1763769605999-10-5f1e0c2a9b3d4e01-kK", uid, sizeof uid) == 0);
    CHECK(strcmp(uid, "5f1e0c2a9b3d4e01") == 0);
    CHECK(deferd_job_uid("r/queue-|1A2016B292A|0000001999#2", uid, sizeof uid) == DEFERD_EARG);
    CHECK(deferd_job_uid("q/1-2-abc", uid, 3) == DEFERD_EARG);
    CHECK(deferd_job_uid(NULL, uid, sizeof uid) == DEFERD_EARG);
}

int main(void)
{
    job_uids();
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "/tmp/deferd-test-client-%d.sock", (int)getpid());
    unlink(sa.sun_path);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 1) != 0) {
        perror("fake daemon socket");
        return 1;
    }
    write_script();
    pid_t pid = fork();
    if (pid == 0)
        serve(lfd);
    close(lfd);
    char err[256];
    deferd_client *c = deferd_connect(sa.sun_path, err, sizeof err);
    CHECK(c != NULL);
    if (c) {
        deferd_set_timeout(c, 10000);
        run_puts(c);
        run_batches(c);
        run_followups(c);
        run_cancel(c);
        run_pipelined(c);
        run_leaving(c);
        run_events(c);
        run_fields(c);
        c = run_old_text(c, sa.sun_path);
        CHECK(c != NULL);
    }
    if (c) {
        if (check_failures)
            fprintf(stderr, "last error: %s\n", deferd_last_error(c));
        deferd_close(c);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    unlink(sa.sun_path);
    for (int i = 0; i < nsteps; i++) {
        free(script[i].req);
        free(script[i].reply);
    }
    return check_report("client");
}
