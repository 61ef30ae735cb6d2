/* Error codes of deferd's ZooKeeper clients (deferd, deferctl): ZooKeeper's own (ZOK,
 * ZNONODE, ... from zookeeper.h) and deferd's, in one int. */
#ifndef DEFERD_ZKERR_H
#define DEFERD_ZKERR_H

/* deferd's own outcomes, where no ZooKeeper code means the same thing. They lie outside
 * ZooKeeper's codes (0 and -1 .. -200 in zookeeper.h), so one int carries either;
 * zk_strerror names both. ZooKeeper's codes keep ZooKeeper's meanings. */
enum zk_own_error {
    ZK_ENOMEM = -1001,          /* out of memory */
    ZK_ETOOLONG = -1002,        /* a path, name or id over its limit */
    ZK_EINVAL = -1003,          /* a call of the store with invalid arguments (a bug) */
    ZK_ENOTHING = -1004,        /* nothing to send: every job of a set was a duplicate */
};
/* zerror(RC) for ZooKeeper's codes; deferd's own words for its own. */
const char *zk_strerror(int rc);

#endif
