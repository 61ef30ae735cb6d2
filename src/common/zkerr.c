#include "zkerr.h"

#include <zookeeper/zookeeper.h>

const char *zk_strerror(int rc)
{
    switch (rc) {
    case ZK_ENOMEM:
        return "out of memory";
    case ZK_ETOOLONG:
        return "a path, name or id over its limit";
    case ZK_EINVAL:
        return "invalid arguments (a bug in deferd)";
    case ZK_ENOTHING:
        return "nothing to send";
    default:
        return zerror(rc);
    }
}
