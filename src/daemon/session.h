/* deferd's view of its ZooKeeper session: CONNECTED, SUSPENDED, RECONNECTED, LOST, with
 * its own LOST timer (a partitioned client learns of expiry only when it reconnects), the
 * reactions to each state, and counters for stats. Loop thread only. */
#ifndef DEFERD_SESSION_H
#define DEFERD_SESSION_H

#include <stddef.h>
#include <stdint.h>

struct deferd;

enum conn_state { CS_CONNECTING, CS_CONNECTED, CS_SUSPENDED, CS_RECONNECTED, CS_LOST, CS_COUNT };

struct session;

struct session *session_new(struct deferd *d);
void session_free(struct session *s);
/* From the ZooKeeper client: ZOO_CONNECTED_STATE, ZOO_CONNECTING_STATE, ... */
void session_on_zk_state(struct session *s, int zk_state);
enum conn_state session_state(const struct session *s);
const char *session_state_name(enum conn_state st);
/* How often the session entered ST since start. */
unsigned session_transitions(const struct session *s, enum conn_state st);
/* "key=value ..." for STATS. */
void session_format(const struct session *s, char *buf, size_t len);

#endif
