/* Harness helpers for ZooKeeper identities and ACLs ([zookeeper] auth, auth_file, acl):
 * sessions with digest credentials, ACL checks and changes made behind deferd's back. */
#ifndef DEFERD_TEST_HARNESS_ACL_H
#define DEFERD_TEST_HARNESS_ACL_H

#include <stdint.h>
#include <zookeeper/zookeeper.h>

/* They return what they found instead of CHECKing it: check.h's counters are per file, and
 * only the test's own count. */

/* A session of the test's with digest credentials USER_PASS ("user:password"), or none;
 * NULL when the credentials could not be sent. */
zhandle_t *zk_identity(const char *user_pass);
/* 1 when PATH's ACL is [zookeeper] acl = creator for digest user USER (one entry, all
 * permissions), else 0 with what it is on stderr. */
int is_creator_acl(zhandle_t *zh, const char *path, const char *user);
/* Sets the permissions of every entry of PATH's ACL to PERMS (a creator ACL: what deferd's
 * identity may still do; a session of that identity keeps ADMIN to give them back). ZOK
 * or the error, also on stderr. */
int set_perms(zhandle_t *zh, const char *path, int32_t perms);
/* Writes "SCHEME:CREDENTIALS" to PATH, mode 0600, as [zookeeper] auth_file wants it; 0/-1. */
int write_auth_file(const char *path, const char *cred);

#endif
