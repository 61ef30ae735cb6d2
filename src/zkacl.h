/* The configured ZooKeeper ACL: [zookeeper] acl as the ACL_vector that every create of
 * deferd and deferctl passes. */
#ifndef DEFERD_ZKACL_H
#define DEFERD_ZKACL_H

#include <zookeeper/zookeeper.h>

struct config;

/* Builds the ACL of CFG into OUT (ZooKeeper's own constant vectors for open and creator);
 * 0, or -1 when out of memory. */
int zkacl_build(const struct config *cfg, struct ACL_vector *out);
void zkacl_free(struct ACL_vector *acl);

#endif
