/* A scripted stand-in for the ZooKeeper store (zkstore.h) in unit tests: zkstore_multi and
 * the single calls the engine makes (exists, get, children, parents_missing) only record
 * the call, and the test answers each when and how it wants, so that the order of
 * completions is the test's to choose. Answers are delivered at once, on the calling
 * thread, as the real store delivers them on the loop thread. */
#ifndef DEFERD_TEST_FAKE_ZKSTORE_H
#define DEFERD_TEST_FAKE_ZKSTORE_H

#include "zkstore.h"

/* One multi sent and not answered yet: copies of its operations' kinds and paths. */
struct fake_multi {
    int nops;
    int *kinds;
    char **paths;
    size_t *lens;
    char **datas;               /* each operation's data as a string (cut at 255 bytes) */
    int *versions;
    int *sequential;
    zk_done_fn done;
    void *ctx;
};

struct zkstore *fake_zk_new(int64_t session);
/* Answers what is still pending with ZCLOSING (as the real store's close does). */
void fake_zk_free(struct zkstore *zs);
void fake_zk_set_session(struct zkstore *zs, int64_t session);
/* zkstore_multi returns RC (not ZOK: the call fails and DONE is not kept) from now on. */
void fake_zk_refuse(struct zkstore *zs, int rc);
/* Multis sent and not answered yet, oldest first; I from 0. */
int fake_zk_pending(const struct zkstore *zs);
const struct fake_multi *fake_zk_multi(const struct zkstore *zs, int i);
/* zkstore_heard_age_ms answers MS from now on (0 at first: just heard from). */
void fake_zk_set_heard_age(struct zkstore *zs, int64_t ms);
/* The data of the last setData a multi carried (whole), and its length. */
const unsigned char *fake_zk_last_set(const struct zkstore *zs, size_t *len);
/* Multis zkstore_multi accepted so far. */
int fake_zk_sent(const struct zkstore *zs);

/* Answers pending multi I: ZOK, each operation ZOK; a sequential create is named PATH and
 * the ten digits of the sequence set by fake_zk_set_seq (1 unless set), any other create
 * PATH+"-seq". */
void fake_zk_ok(struct zkstore *zs, int i);
/* Answers pending multi I as ZooKeeper does when operation BAD failed with ERR: rc ERR,
 * ZOK before it, ZRUNTIMEINCONSISTENCY after it. */
void fake_zk_op_fails(struct zkstore *zs, int i, int bad, int err);
/* Answers pending multi I with an error of the connection, as the ZooKeeper client does:
 * every operation's result carries that error too. */
void fake_zk_lost(struct zkstore *zs, int i, int rc);

/* The sequence number the next sequential creates get (ZooKeeper: the parent's cversion). */
void fake_zk_set_seq(struct zkstore *zs, unsigned seq);
/* zkstore_connected's answer (1 from fake_zk_new). */
void fake_zk_set_connected(struct zkstore *zs, int connected);

/* One single call sent and not answered yet. */
enum fake_call_kind { FAKE_EXISTS, FAKE_GET, FAKE_CHILDREN, FAKE_PARENTS, FAKE_CREATE, FAKE_DELETE,
                      FAKE_SET };
struct fake_call {
    enum fake_call_kind kind;
    char *path;
    int watch;
    int version; /* a delete's */
    zk_done_fn done;
    void *ctx;
};

/* Single calls sent and not answered yet, oldest first; I from 0. */
int fake_zk_calls(const struct zkstore *zs);
const struct fake_call *fake_zk_call(const struct zkstore *zs, int i);
/* Answers pending call I with RES (its rc, stat, data, children). */
void fake_zk_answer(struct zkstore *zs, int i, const struct zk_result *res);
/* Answers pending call I with RC alone. */
void fake_zk_answer_rc(struct zkstore *zs, int i, int rc);

#endif
