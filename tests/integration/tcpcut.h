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
/* Arms a cut for MS milliseconds that falls right after the next bytes the client sends
 * have been passed on: the client loses the connection at once, the server gets the
 * request (its side closes 300 ms later) and its answer goes nowhere. An operation whose
 * outcome the client cannot know. Returns at once. */
void tcpcut_cut_after_request(struct tcpcut *t, int ms);
/* Connections relayed since the start (accepted while not cut). */
int tcpcut_relayed(const struct tcpcut *t);
void tcpcut_stop(struct tcpcut *t);

#endif
