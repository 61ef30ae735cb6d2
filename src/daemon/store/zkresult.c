/* Reading the results of ZooKeeper calls (zkstore.h): which operation failed a multi, which
 * errors mean the session is gone, the reason a client is given. Apart from the store, so
 * that tests of its users with a scripted store (tests/unit/fake_zkstore.c) read results by
 * the same rules. */
#include "zkstore.h"

/* An error of the request as a whole: ZooKeeper never answered it (connection loss, a
 * timeout: it may have been applied) or refused the session itself. The client then gives
 * every operation of a multi that same error (cleanup_failed_multi), which must not be
 * taken for the first operation failing alone and the rest rolled back. */
static int whole_request_error(int rc)
{
    return rc > ZAPIERROR || zk_session_gone(rc) || rc == ZSESSIONMOVED || rc == ZAUTHFAILED;
}

int zk_failed_op(const struct zk_result *res)
{
    if (whole_request_error(res->rc))
        return -1;
    for (int i = 0; res->op_err && i < res->nops; i++)
        if (res->op_err[i] != ZOK && res->op_err[i] != ZRUNTIMEINCONSISTENCY)
            return i;
    return -1;
}

int zk_session_gone(int rc)
{
    return rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZINVALIDSTATE;
}

int zk_outcome_unknown(int rc)
{
    return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || zk_session_gone(rc);
}

enum refusal_reason zk_refusal_reason(int rc)
{
    if (rc == ZNOAUTH)
        return RR_PERMISSION;
    if (zk_session_gone(rc))
        return RR_NO_SESSION;
    return zk_outcome_unknown(rc) ? RR_CONNECTION_LOST : RR_ZOOKEEPER;
}

struct refusal zk_put_refusal(int rc)
{
    return (struct refusal){.stored = zk_outcome_unknown(rc) ? RS_MAYBE : RS_NO,
                            .reason = zk_refusal_reason(rc)};
}

const char *zk_reason(int rc)
{
    return rc == ZNOAUTH ? ZK_DENIED_TEXT : zk_strerror(rc);
}
