#include "session.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <zookeeper/zookeeper.h>

#include "clock_sync.h"
#include "daemon.h"
#include "dispatcher.h"
#include "lease.h"
#include "lock.h"
#include "log.h"
#include "mirror.h"
#include "claim_recovery.h"
#include "layout_marker.h"
#include "pause.h"
#include "unpacker.h"
#include "pending.h"
#include "scheduler.h"
#include "server.h"
#include "units.h"
#include "zkstore.h"

struct session {
    struct deferd *d;
    enum conn_state state;
    int64_t since_ms;            /* wall ms of the last state change */
    unsigned transitions[CS_COUNT];
    struct event *lost_timer;    /* armed while SUSPENDED */
    struct event *renew_timer;   /* retries a failed handle creation, backing off */
    int renew_delay_ms;
    struct event *beat_timer;    /* a cheap read every third of the session timeout */
    int64_t last_contact_ms;     /* wall ms we last sent a read that ZooKeeper answered */
    int64_t suspended_at_ms;
};

static const char *const names[CS_COUNT] = {
    "CONNECTING", "CONNECTED", "SUSPENDED", "RECONNECTED", "LOST",
};

const char *session_state_name(enum conn_state st) { return names[st]; }
enum conn_state session_state(const struct session *s) { return s->state; }
unsigned session_transitions(const struct session *s, enum conn_state st)
{
    return s->transitions[st];
}

static void renew(struct session *s);

static void enter(struct session *s, enum conn_state st, const char *why)
{
    int64_t now = units_mono_ms();
    log_info("zookeeper: %s -> %s after %lld ms (%s)", names[s->state], names[st],
             (long long)(now - s->since_ms), why);
    s->state = st;
    s->since_ms = now;
    s->transitions[st]++;
    if (st != CS_CONNECTING)
        server_broadcast_state(s->d->server, names[st]);
}

/* The session is gone: revoke every lock we held (consumers are told), forget the mirror,
 * and build a new session. Jobs are read again from ZooKeeper once it is up. */
static void lose(struct session *s, const char *why)
{
    struct deferd *d = s->d;
    evtimer_del(s->lost_timer);
    enter(s, CS_LOST, why);
    dispatcher_revoke_all(d->dispatcher);
    mirror_reset(d->mirror);
    d->session_id = 0;
    renew(s);
}

/* A new handle could not be made (no memory, host names that do not resolve): try again
 * later, doubling the wait up to 30 s, and say so once. */
static void renew_later(struct session *s)
{
    if (s->renew_delay_ms == 0)
        log_error("zookeeper: cannot create a new handle; retrying with back-off");
    s->renew_delay_ms = s->renew_delay_ms ? s->renew_delay_ms * 2 : 500;
    if (s->renew_delay_ms > 30000)
        s->renew_delay_ms = 30000;
    struct timeval tv = units_ms_timeval(s->renew_delay_ms);
    evtimer_add(s->renew_timer, &tv);
}

static void renew(struct session *s)
{
    if (zkstore_renew(s->d->zs) != 0)
        renew_later(s);
}

static void on_renew_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    renew(arg);
}

static void on_lost_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct session *s = arg;
    if (s->state == CS_SUSPENDED)
        lose(s, "a session timeout passed since ZooKeeper last answered");
}

/* ZooKeeper expires a session a session timeout after it last heard from the client; the
 * client notices a silent partition only after two thirds of it. So LOST is declared a
 * session timeout after the last answered read, never later than the server expires us. */
struct beat {
    struct session *s;
    int64_t sent_at;
};

static void on_beat_answer(const struct zk_result *res, void *ctx)
{
    struct beat *b = ctx;
    if ((res->rc == ZOK || res->rc == ZNONODE) && b->sent_at > b->s->last_contact_ms)
        b->s->last_contact_ms = b->sent_at;
    free(b);
}

static void beat(struct session *s)
{
    struct timeval tv = units_ms_timeval(zkstore_negotiated_timeout(s->d->zs) / 3);
    evtimer_add(s->beat_timer, &tv);
    if (s->state != CS_CONNECTED)
        return;
    struct beat *b = malloc(sizeof *b);
    if (!b)
        return;
    b->s = s;
    b->sent_at = units_mono_ms();
    if (zkstore_exists(s->d->zs, s->d->cfg->zk_root, 0, on_beat_answer, b) != ZOK)
        free(b);
}

static void on_beat_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    beat(arg);
}

/* Test seam: with DEFERD_TEST_SESSION_FILE set, the session id and password are written
 * there, so that a test can take the session over and close it (a forced expiry). */
static void expose_session(struct session *s, int64_t id)
{
    const char *path = getenv("DEFERD_TEST_SESSION_FILE");
    char pw[16];
    if (!path || zkstore_session_password(s->d->zs, pw) != 0)
        return;
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "%llx", (unsigned long long)id);
    for (int i = 0; i < 16; i++)
        fprintf(f, " %02x", (unsigned char)pw[i]);
    fprintf(f, "\n");
    fclose(f);
}

static void connected(struct session *s)
{
    struct deferd *d = s->d;
    int64_t id = zkstore_session_id(d->zs);
    evtimer_del(s->lost_timer);
    s->last_contact_ms = units_mono_ms();
    if (s->state == CS_SUSPENDED && id == d->session_id) {
        enter(s, CS_RECONNECTED, "same session");
        lease_shift_all(d->dispatcher, units_mono_ms() - s->suspended_at_ms);
        mirror_resync(d->mirror); /* changes while away fired no watch */
        lock_verify_held(d->dispatcher);
        s->state = CS_CONNECTED;  /* RECONNECTED is an event; the state is connected */
    } else {
        d->session_id = id;
        expose_session(s, id);
        char why[96];
        snprintf(why, sizeof why, "session 0x%llx, timeout %d ms", (unsigned long long)id,
                 zkstore_negotiated_timeout(d->zs));
        enter(s, CS_CONNECTED, why);
    }
    clock_sync_session_up(d->clock); /* the first to ask: its answer may release pushes */
    pause_session_up(d); /* answered before the listings that follow: one session, in order */
    layout_marker_session_up(d);
    claim_recovery_session_up(d->claim_recovery); /* once the layout is 3 (also from there) */
    unpacker_session_up(d->unpacker);
    dispatcher_session_up(d->dispatcher);
    pending_session_up(d->pending);
    scheduler_session_up(d->scheduler);
    beat(s);
}

void session_on_zk_state(struct session *s, int zk_state)
{
    if (zk_state == ZKSTORE_HANDLE_FAILED) {
        renew_later(s);
    } else if (zk_state == ZOO_CONNECTED_STATE) {
        s->renew_delay_ms = 0;
        connected(s);
    } else if (zk_state == ZOO_CONNECTING_STATE && s->state == CS_CONNECTED) {
        enter(s, CS_SUSPENDED, "connection lost; dispatch paused");
        s->suspended_at_ms = units_mono_ms();
        struct timeval tv = units_ms_timeval(s->last_contact_ms +
                                             zkstore_negotiated_timeout(s->d->zs) -
                                             s->suspended_at_ms);
        evtimer_add(s->lost_timer, &tv);
    } else if (zk_state == ZOO_EXPIRED_SESSION_STATE && s->state != CS_LOST) {
        lose(s, "ZooKeeper expired the session");
    } else if (zk_state == ZOO_AUTH_FAILED_STATE) {
        log_error("zookeeper: authentication failed; check the credentials; exiting");
        event_base_loopbreak(s->d->base);
    }
}

void session_format(const struct session *s, char *buf, size_t len)
{
    snprintf(buf, len,
             "zk_state=%s zk_state_ms=%lld zk_session=0x%llx zk_suspended=%u zk_reconnected=%u "
             "zk_lost=%u",
             names[s->state], (long long)(units_mono_ms() - s->since_ms),
             (unsigned long long)s->d->session_id, s->transitions[CS_SUSPENDED],
             s->transitions[CS_RECONNECTED], s->transitions[CS_LOST]);
}

struct session *session_new(struct deferd *d)
{
    struct session *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->d = d;
    s->state = CS_CONNECTING;
    s->since_ms = units_mono_ms();
    s->lost_timer = evtimer_new(d->base, on_lost_timer, s);
    s->renew_timer = evtimer_new(d->base, on_renew_timer, s);
    s->beat_timer = evtimer_new(d->base, on_beat_timer, s);
    if (!s->lost_timer || !s->renew_timer || !s->beat_timer) {
        session_free(s);
        return NULL;
    }
    return s;
}

void session_free(struct session *s)
{
    if (!s)
        return;
    if (s->lost_timer)
        event_free(s->lost_timer);
    if (s->renew_timer)
        event_free(s->renew_timer);
    if (s->beat_timer)
        event_free(s->beat_timer);
    free(s);
}
