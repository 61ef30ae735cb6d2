/* Who may use a queue: the credentials of the process at the other end of a socket
 * connection (SO_PEERCRED, SO_PEERGROUPS) against the queue's `producers` and `consumers`
 * rules from the config (deferd.ini(5)). */
#ifndef DEFERD_ACCESS_H
#define DEFERD_ACCESS_H

#include <stddef.h>
#include <sys/types.h>

#define ACCESS_GROUPS_MAX 64

struct access_rule {
    int is_group;
    unsigned id;                /* uid or gid */
};

/* No rules: anyone who can connect to the socket. */
struct access_list {
    struct access_rule *rules;
    size_t n;
};

struct peer {
    int known;                  /* 0: the kernel did not say; only rule-free queues */
    uid_t uid;
    gid_t gid;
    pid_t pid;
    gid_t groups[ACCESS_GROUPS_MAX]; /* supplementary groups */
    int ngroups;
};

/* "user:NAME uid:N group:NAME gid:N", separated by blanks or commas. Names are resolved
 * now (getpwnam, getgrnam). -1 with a message in ERR on a bad entry. */
int access_parse(const char *value, struct access_list *out, char *err, size_t len);
void access_free(struct access_list *l);
/* "user:alice(1000) group:web(33)", for messages; "anyone" when empty. */
void access_format(const struct access_list *l, char *buf, size_t len);

int access_peer_read(int fd, struct peer *p);
/* Root, and any peer when the list is empty, may; else a rule must name its uid, its
 * primary group or one of its supplementary groups. */
int access_allows(const struct access_list *l, const struct peer *p);

/* A user or group name, or a decimal id: the id, or -1. */
long access_user_id(const char *name);
long access_group_id(const char *name);

#endif
