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
    if (zh && user_pass) /* answered before the calls that follow: one session, in order */
        CHECK(zoo_add_auth(zh, "digest", user_pass, (int)strlen(user_pass), NULL, NULL) == ZOK);
    return zh;
}

void check_creator_acl(zhandle_t *zh, const char *path, const char *user)
{
    struct ACL_vector acl;
    struct Stat st;
    char prefix[80];
    int rc = zoo_get_acl(zh, path, &acl, &st);
    CHECK(rc == ZOK);
    if (rc != ZOK) {
        fprintf(stderr, "get_acl %s: %s\n", path, zerror(rc));
        return;
    }
    snprintf(prefix, sizeof prefix, "%s:", user);
    CHECK(acl.count == 1);
    if (acl.count == 1) {
        CHECK_STR(acl.data[0].id.scheme, "digest");
        CHECK(strncmp(acl.data[0].id.id, prefix, strlen(prefix)) == 0);
        CHECK(acl.data[0].perms == ZOO_PERM_ALL);
    }
    deallocate_ACL_vector(&acl);
}

void set_perms(zhandle_t *zh, const char *path, int32_t perms)
{
    struct ACL_vector acl;
    struct Stat st;
    int rc = zoo_get_acl(zh, path, &acl, &st);
    CHECK(rc == ZOK);
    if (rc != ZOK)
        return;
    for (int32_t i = 0; i < acl.count; i++)
        acl.data[i].perms = perms;
    rc = zoo_set_acl(zh, path, -1, &acl);
    if (rc != ZOK)
        fprintf(stderr, "set_acl %s: %s\n", path, zerror(rc));
    CHECK(rc == ZOK);
    deallocate_ACL_vector(&acl);
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
