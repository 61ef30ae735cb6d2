/* Error codes of deferd's ZooKeeper clients (deferd, deferctl): ZooKeeper's own (ZOK,
 * ZNONODE, ... from zookeeper.h) and deferd's, in one int.
 *
 * The one convention for what a call into ZooKeeper returns, deferd's and deferctl's alike:
 *   0 (ZOK)          success
 *   -1 .. -200       ZooKeeper's errors (ZOO_ERRORS in zookeeper.h), with their meanings
 *   -1001 .. -1099   deferd's own errors, where no ZooKeeper code means the same (below)
 *   -1101 .. -1199   deferd's own outcomes that are no error (e.g. zkstore.h's ZK_PARENTS_*)
 * never positive. Session states are another space (ZooKeeper's ZOO_*_STATE, some of them
 * positive): deferd's own session states lie in -2001 .. -2099 (zkstore.h), apart from
 * both ZooKeeper's states and every code above, so that no value means two things. */
#ifndef DEFERD_ZKERR_H
#define DEFERD_ZKERR_H

#define ZK_OWN_STATUS_FIRST (-1101)
#define ZK_OWN_STATE_FIRST (-2001)

/* deferd's own errors; zk_strerror names them and ZooKeeper's. */
enum zk_own_error {
    ZK_ENOMEM = -1001,          /* out of memory */
    ZK_ETOOLONG = -1002,        /* a path, name or id over its limit */
    ZK_EINVAL = -1003,          /* a call of the store with invalid arguments (a bug) */
    ZK_ENOTHING = -1004,        /* nothing to send: every job of a set was a duplicate */
};
/* zerror(RC) for ZooKeeper's codes; deferd's own words for its own. */
const char *zk_strerror(int rc);

#endif
