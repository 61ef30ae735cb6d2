#include "zkacl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

/* config_acl_entry's bits (read 1, write 2, create 4, delete 8, admin 16) as the client's
 * constants, which are variables, not macros */
static int32_t perms(unsigned bits)
{
    const int32_t zoo[] = {ZOO_PERM_READ, ZOO_PERM_WRITE, ZOO_PERM_CREATE, ZOO_PERM_DELETE,
                           ZOO_PERM_ADMIN};
    int32_t p = 0;
    for (unsigned i = 0; i < sizeof zoo / sizeof zoo[0]; i++)
        if (bits & (1u << i))
            p |= zoo[i];
    return p;
}

int zkacl_build(const struct config *cfg, struct ACL_vector *out)
{
    memset(out, 0, sizeof *out);
    if (cfg->zk_acl_mode == ZK_ACL_OPEN) {
        *out = ZOO_OPEN_ACL_UNSAFE;
        return 0;
    }
    if (cfg->zk_acl_mode == ZK_ACL_CREATOR) {
        *out = ZOO_CREATOR_ALL_ACL;
        return 0;
    }
    out->data = calloc(cfg->nzk_acl, sizeof *out->data);
    if (!out->data)
        return -1;
    /* copies: a reload may free the config the entries come from */
    for (size_t i = 0; i < cfg->nzk_acl; i++) {
        const struct config_acl_entry *e = &cfg->zk_acl[i];
        struct ACL *a = &out->data[out->count++];
        a->perms = perms(e->perms);
        a->id.scheme = strdup(e->scheme);
        a->id.id = strdup(e->id);
        if (!a->id.scheme || !a->id.id) {
            zkacl_free(out);
            return -1;
        }
    }
    return 0;
}

void zkacl_free(struct ACL_vector *acl)
{
    /* the constant vectors are ZooKeeper's; only a list's array is ours */
    if (acl->data != ZOO_OPEN_ACL_UNSAFE.data && acl->data != ZOO_CREATOR_ALL_ACL.data) {
        for (int32_t i = 0; i < acl->count; i++) {
            free(acl->data[i].id.scheme);
            free(acl->data[i].id.id);
        }
        free(acl->data);
    }
    memset(acl, 0, sizeof *acl);
}

void zkacl_identity(const struct config *cfg, char *buf, size_t len)
{
    char scheme[64];
    const char *cred = config_auth(cfg, scheme, sizeof scheme), *colon;
    if (!cred)
        snprintf(buf, len, "an unauthenticated client (no [zookeeper] auth)");
    else if (strcmp(scheme, "digest") == 0 && (colon = strchr(cred, ':')))
        snprintf(buf, len, "digest:%.*s", (int)(colon - cred), cred);
    else
        snprintf(buf, len, "%s credentials", scheme);
}
