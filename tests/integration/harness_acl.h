/* Harness helpers for ZooKeeper identities and ACLs ([zookeeper] auth, auth_file, acl):
 * sessions with digest credentials, ACL checks and changes made behind deferd's back. */
#ifndef DEFERD_TEST_HARNESS_ACL_H
#define DEFERD_TEST_HARNESS_ACL_H

#include <stdint.h>
#include <zookeeper/zookeeper.h>

/* A session of the test's with digest credentials USER_PASS ("user:password"), or none. */
zhandle_t *zk_identity(const char *user_pass);
/* CHECKs that PATH's ACL is [zookeeper] acl = creator for digest user USER: one entry, all
 * permissions. */
void check_creator_acl(zhandle_t *zh, const char *path, const char *user);
/* Sets the permissions of every entry of PATH's ACL to PERMS (a creator ACL: what deferd's
 * identity may still do; a session of that identity keeps ADMIN to give them back). */
void set_perms(zhandle_t *zh, const char *path, int32_t perms);
/* Writes "SCHEME:CREDENTIALS" to PATH, mode 0600, as [zookeeper] auth_file wants it. */
int write_auth_file(const char *path, const char *cred);

#endif
