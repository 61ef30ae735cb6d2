#include "access.h"

#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static long decimal(const char *s)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    unsigned long v = strtoul(s, &end, 10);
    return *end || v > 0x7fffffffUL ? -1 : (long)v;
}

long access_user_id(const char *name)
{
    long id = decimal(name);
    struct passwd *pw;
    if (id >= 0)
        return id;
    return (pw = getpwnam(name)) ? (long)pw->pw_uid : -1;
}

long access_group_id(const char *name)
{
    long id = decimal(name);
    struct group *gr;
    if (id >= 0)
        return id;
    return (gr = getgrnam(name)) ? (long)gr->gr_gid : -1;
}

/* One "kind:name" entry. */
static int parse_rule(const char *tok, struct access_rule *r, char *err, size_t len)
{
    const char *colon = strchr(tok, ':'), *name = colon ? colon + 1 : "";
    size_t kind = colon ? (size_t)(colon - tok) : 0;
    long id = -1;
    if (kind == 4 && strncmp(tok, "user", 4) == 0)
        id = access_user_id(name);
    else if (kind == 3 && strncmp(tok, "uid", 3) == 0)
        id = decimal(name);
    else if (kind == 5 && strncmp(tok, "group", 5) == 0)
        id = access_group_id(name), r->is_group = 1;
    else if (kind == 3 && strncmp(tok, "gid", 3) == 0)
        id = decimal(name), r->is_group = 1;
    else {
        snprintf(err, len, "'%.60s' is not user:NAME, uid:N, group:NAME or gid:N", tok);
        return -1;
    }
    if (id < 0) {
        snprintf(err, len, "'%.60s': no such %s", tok, r->is_group ? "group" : "user");
        return -1;
    }
    r->id = (unsigned)id;
    return 0;
}

int access_parse(const char *value, struct access_list *out, char *err, size_t len)
{
    char *copy = strdup(value), *save = NULL;
    size_t cap = strlen(value) / 2 + 1;
    struct access_list l = {.rules = calloc(cap, sizeof *l.rules)};
    if (!copy || !l.rules) {
        free(copy);
        free(l.rules);
        snprintf(err, len, "out of memory");
        return -1;
    }
    for (char *tok = strtok_r(copy, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save)) {
        if (l.n == cap || parse_rule(tok, &l.rules[l.n], err, len) != 0) {
            free(copy);
            free(l.rules);
            return -1;
        }
        l.n++;
    }
    free(copy);
    access_free(out);
    *out = l;
    return 0;
}

void access_free(struct access_list *l)
{
    free(l->rules);
    l->rules = NULL;
    l->n = 0;
}

void access_format(const struct access_list *l, char *buf, size_t len)
{
    size_t used = 0;
    snprintf(buf, len, "anyone");
    for (size_t i = 0; i < l->n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s:%u", i ? " " : "",
                                 l->rules[i].is_group ? "gid" : "uid", l->rules[i].id);
}

int access_peer_read(int fd, struct peer *p)
{
    struct ucred cred;
    socklen_t n = sizeof cred;
    memset(p, 0, sizeof *p);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) != 0)
        return -1;
    p->uid = cred.uid;
    p->gid = cred.gid;
    p->pid = cred.pid;
    p->known = 1;
    n = sizeof p->groups;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, p->groups, &n) == 0)
        p->ngroups = (int)(n / sizeof p->groups[0]);
    return 0; /* without SO_PEERGROUPS (or over 64 groups) only the primary group counts */
}

static int in_group(const struct peer *p, unsigned gid)
{
    if (p->gid == gid)
        return 1;
    for (int i = 0; i < p->ngroups; i++)
        if (p->groups[i] == gid)
            return 1;
    return 0;
}

int access_allows(const struct access_list *l, const struct peer *p)
{
    if (l->n == 0)
        return 1;
    if (!p->known)
        return 0;
    if (p->uid == 0)
        return 1;
    for (size_t i = 0; i < l->n; i++)
        if (l->rules[i].is_group ? in_group(p, l->rules[i].id) : p->uid == l->rules[i].id)
            return 1;
    return 0;
}
