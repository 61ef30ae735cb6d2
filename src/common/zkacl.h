/* The configured ZooKeeper ACL: [zookeeper] acl as the ACL_vector that every create of
 * deferd and deferctl passes. */
#ifndef DEFERD_ZKACL_H
#define DEFERD_ZKACL_H

#include <stddef.h>
#include <zookeeper/zookeeper.h>

struct config;

/* Builds the ACL of CFG into OUT (ZooKeeper's own constant vectors for open and creator);
 * 0, or -1 when out of memory. */
int zkacl_build(const struct config *cfg, struct ACL_vector *out);
void zkacl_free(struct ACL_vector *acl);
/* Who deferd is to ZooKeeper, for messages about a refusal: "digest:USER" (never the
 * password), another scheme's name, or that no [zookeeper] auth is set. */
void zkacl_identity(const struct config *cfg, char *buf, size_t len);

#endif
