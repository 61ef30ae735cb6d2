/* A loopback TCP relay in front of a server whose connections a test can cut for a while:
 * a network partition, with the server (and a ZooKeeper session on it) still alive. Tests
 * of a short ZooKeeper outage use it instead of restarting the server, whose start-up
 * window can swallow a connection attempt (ZooKeeper 3.8 leaves a connection that arrives
 * before its database is loaded open and unanswered: the client waits two thirds of its
 * session timeout before it tries again). A cut closes connections, so the client notices at
 * once (not a silent partition). */
#ifndef DEFERD_TEST_TCPCUT_H
#define DEFERD_TEST_TCPCUT_H

#include <stddef.h>

struct tcpcut;

/* Relays 127.0.0.1:<a free port> to TARGET ("127.0.0.1:PORT"); writes "127.0.0.1:<port>"
 * into HOSTS. NULL if it cannot listen. */
struct tcpcut *tcpcut_start(const char *target, char *hosts, size_t len);
/* Closes every relayed connection now and, for MS milliseconds, closes each new one as soon
 * as it is accepted; then relays again. Returns at once. */
void tcpcut_cut(struct tcpcut *t, int ms);
/* ZooKeeper's request types (its OpCode), for tcpcut_lose_reply(). */
enum { TCPCUT_OP_CREATE = 1, TCPCUT_OP_DELETE = 2, TCPCUT_OP_SETDATA = 5, TCPCUT_OP_MULTI = 14 };
/* Arms the fault "applied, answer lost" on demand: the next request of type OP is passed on
 * to the server; its answer (whatever it says) is swallowed and every connection is cut at
 * that moment, then none relayed for MS milliseconds. The server has decided the request by
 * then: the client cannot know how. Returns at once. */
void tcpcut_lose_reply(struct tcpcut *t, int op, int ms);
/* 1 once the armed answer was swallowed (ZooKeeper's error code of it in *ERR, 0 = the
 * request was applied), else 0. */
int tcpcut_lost_reply(const struct tcpcut *t, int *err);
/* Connections relayed since the start (accepted while not cut). */
int tcpcut_relayed(const struct tcpcut *t);
void tcpcut_stop(struct tcpcut *t);

#endif
