/* The engine (src/daemon/engine: dispatcher, jobs, lock, lease, settle, consumers) run by a
 * unit test: over the scripted store of fake_zkstore.h, with a test clock, fake consumers
 * and a struct deferd holding only what the engine touches. The mirror and the put sets
 * are stand-ins: jobs enter as the mirror reports them (harness_listed), and settles never
 * carry follow-up jobs. Nothing waits: a test moves the clock and answers ZooKeeper.
 *
 * Every harness call that can make the engine send something ends with a loop turn
 * (harness_turn), so that batched multis are on the fake store when it returns. */
#ifndef DEFERD_TEST_ENGINE_HARNESS_H
#define DEFERD_TEST_ENGINE_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "dispatcher_int.h"
#include "fake_zkstore.h"
#include "reply.h"

#define HARNESS_SESSION 0x1234 /* the first session's id */
#define HARNESS_PUSHES_MAX 32

/* A fake consumer's connection: what the engine pushed to it (struct consumer_ops). */
struct conn {
    struct consumer *c;
    struct {
        char id[LAYOUT_ID_MAX + 1];
        uint32_t attempt, ttr_ms;
    } jobs[HARNESS_PUSHES_MAX];
    int njobs;
    char deadline[LAYOUT_ID_MAX + 1]; /* the latest DEADLINE's job */
    int64_t deadline_left;            /* ... and its ms left */
    int ndeadlines;
    char expired[LAYOUT_ID_MAX + 1], cancelled[LAYOUT_ID_MAX + 1]; /* the latest */
    int nexpired, ncancelled;
};

/* A reply the engine completes (reply.h): DONE once it did, LINE what it said. */
struct harness_reply {
    struct reply r;
    int done;
    char line[600];
};

/* Queues are INI sections ("[queue a]\nttr = 10s\n"), added to a minimal [daemon] and
 * [zookeeper]. Starts the test clock at a fixed instant; the session is connected. */
void harness_start(const char *queues_ini);
/* Runs BODY (a test from harness_start to harness_stop) in a child process whose
 * DEFERD_FAILPOINT is FAILPOINT (read once a process: a failpoint armed here stays in the
 * child); 0 when every check of the child passed. */
int harness_in_child(const char *failpoint, void (*body)(void));
/* Consumers leave, the store closes (pending calls fail with ZCLOSING), all is freed. */
void harness_stop(void);
struct dispatcher *harness_ds(void);
struct zkstore *harness_zs(void);

/* ---- time and the loop ---- */

int64_t harness_now(void); /* the test clock, wall ms */
/* Moves the test clock by MS, then runs what the dispatcher's timer runs and a loop turn. */
void harness_advance(int64_t ms);
/* One loop turn: kicks and batch flushes (libevent's active events). */
void harness_turn(void);
/* Moves the test clock by MS, nothing else: a libevent timer that fires later finds it so. */
void harness_clock(int64_t ms);
/* Runs the loop for MS of real time: libevent's own timers (on the system's monotonic
 * clock, not the test clock) fire as they fall due. */
void harness_run_real(int ms);

/* ---- the mirror ---- */

/* Reports a job of QUEUE due DUE_IN ms from now with priority PRIO, its payload in memory
 * as for our own put (WITH_PAYLOAD) or to be read at delivery; returns its id (valid until
 * harness_stop). */
const char *harness_listed(const char *queue, int64_t due_in, uint32_t prio, int with_payload);
/* A job of QUEUE due now, with its payload, locked (the newest multi answered ZOK, first
 * delivery) and pushed to whichever consumer dispatch picks: its id. */
const char *harness_delivered(const char *queue);
/* The same, put with GROUP (PUT group=). */
const char *harness_listed_group(const char *queue, int64_t due_in, uint32_t prio,
                                 int with_payload, const char *group);
/* The next job harness_listed* makes is a child of the flow FLOW_UID (-f in its name). */
void harness_next_in_flow(const char *flow_uid);
/* The mirror lists job ID (one of harness_listed's) again, as after a new session. */
void harness_listed_again(const char *id);
/* The mirror no longer lists job ID. */
void harness_unlisted(const char *id);

/* ---- jobs ---- */

struct job *harness_job(const char *id);   /* NULL once freed */
int harness_state(const char *id);         /* enum job_state, or -1 once freed */
/* How often job ID took event EV from state FROM since harness_start. */
int harness_saw(const char *id, enum job_state from, enum job_event ev);

/* QUEUE paused or resumed, as cluster/pause.c tells the engine. */
void harness_pause(const char *queue, int paused);

/* ---- consumers, as socket/commands.c calls the engine ---- */

struct conn *harness_consumer(const char *queue, uint32_t inflight);
void harness_consumer_gone(struct conn *conn);
struct harness_reply *harness_ack(struct conn *conn, const char *id);
/* NACK; DELAY_MS < 0: none given (the queue's back-off). */
struct harness_reply *harness_nack(struct conn *conn, const char *id, int64_t delay_ms);
struct harness_reply *harness_nack_unrun(struct conn *conn, const char *id);
struct harness_reply *harness_touch(struct conn *conn, const char *id);
/* A producer's CANCEL of job ID (FORCE: force=1), or its RESCHEDULE (delay 1 s). */
struct harness_reply *harness_cancel(const char *id, int force);
struct harness_reply *harness_reschedule(const char *id);

/* ---- the session, as session.c calls the engine ---- */

void harness_suspended(void);   /* the connection broke */
void harness_reconnected(void); /* the same session is back */
void harness_lost(void);        /* the session expired */
void harness_new_session(void); /* a new session is up (id + 1) */

/* ---- ZooKeeper's side ---- */

int harness_multis(void);
/* Multi I's operations by role, e.g. "create lock, create-seq owner" ("dead"
 * for a dead letter, "job2" for a new name of the job, "key" for its key node). */
const char *harness_multi_ops(int i);
/* Answers multi I (then a loop turn): ZOK (sequential creates numbered for delivery
 * ATTEMPT of the current name), operation OP failing with ERR, or the connection's RC. */
void harness_multi_ok(int i, uint32_t attempt);
void harness_multi_fails(int i, int op, int err);
void harness_multi_lost(int i, int rc);

int harness_calls(void);
/* Call I as "exists lock", "exists+watch lock", "get job", "children job", ... */
const char *harness_call_what(int i);
/* Call I's path ("(none)" when there is no such call). */
const char *harness_call_path(int i);
/* Answers call I (then a loop turn) with RC; exists with ZOK gives OWNER as the node's
 * ephemeral owner; get with ZOK gives a payload. */
void harness_call_rc(int i, int rc);
void harness_exists_ok(int i, int64_t owner);
void harness_get_ok(int i);

/* Layout version 3: the root's marker says 3 and this session's node exists: due jobs are
 * claimed (claim.h) instead of locked. Multis then read e.g. "delete job, create claim". */
void harness_claims_on(void);
/* Answers get I with a payload and a stat: data VERSION, CVERSION, CHILDREN. */
void harness_get_stat_ok(int i, int32_t version, int32_t cversion, int32_t children);
/* Answers exists I with ZOK and data VERSION. */
void harness_exists_version(int i, int32_t version);
/* Answers get I of a claim with data VERSION holding the records of the N jobs IDS. */
void harness_get_claim(int i, int32_t version, const char *const *ids, int n);
/* Answers get I of a claim with the data the last claim write set, at VERSION. */
void harness_get_written(int i, int32_t version);
/* This session's node was touched (a forced cancel through another daemon). */
void harness_claims_poked(void);

/* The id of the current session (the one the engine's locks name). */
int64_t harness_session(void);

#endif
