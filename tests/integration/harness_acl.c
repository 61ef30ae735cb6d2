#include "harness_acl.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

zhandle_t *zk_identity(const char *user_pass)
{
    zhandle_t *zh = zk_connect();
    /* answered before the calls that follow: one session, in order */
    if (zh && user_pass &&
        zoo_add_auth(zh, "digest", user_pass, (int)strlen(user_pass), NULL, NULL) != ZOK) {
        zookeeper_close(zh);
        return NULL;
    }
    return zh;
}

int is_creator_acl(zhandle_t *zh, const char *path, const char *user)
{
    struct ACL_vector acl;
    struct Stat st;
    size_t n = strlen(user);
    int rc = zoo_get_acl(zh, path, &acl, &st);
    if (rc != ZOK) {
        fprintf(stderr, "get_acl %s: %s\n", path, zerror(rc));
        return 0;
    }
    int ok = acl.count == 1 && strcmp(acl.data[0].id.scheme, "digest") == 0 &&
             strncmp(acl.data[0].id.id, user, n) == 0 && acl.data[0].id.id[n] == ':' &&
             acl.data[0].perms == ZOO_PERM_ALL;
    for (int32_t i = 0; !ok && i < acl.count; i++)
        fprintf(stderr, "acl of %s: %s:%s:%d\n", path, acl.data[i].id.scheme,
                acl.data[i].id.id, (int)acl.data[i].perms);
    deallocate_ACL_vector(&acl);
    return ok;
}

int set_perms(zhandle_t *zh, const char *path, int32_t perms)
{
    struct ACL_vector acl;
    struct Stat st;
    int rc = zoo_get_acl(zh, path, &acl, &st);
    if (rc == ZOK) {
        for (int32_t i = 0; i < acl.count; i++)
            acl.data[i].perms = perms;
        rc = zoo_set_acl(zh, path, -1, &acl);
        deallocate_ACL_vector(&acl);
    }
    if (rc != ZOK)
        fprintf(stderr, "set_perms %s: %s\n", path, zerror(rc));
    return rc;
}

int write_auth_file(const char *path, const char *cred)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    size_t n = strlen(cred);
    int ok = write(fd, cred, n) == (ssize_t)n && write(fd, "\n", 1) == 1 &&
             fchmod(fd, 0600) == 0; /* an existing file keeps its mode through O_CREAT */
    return close(fd) == 0 && ok ? 0 : -1;
}
