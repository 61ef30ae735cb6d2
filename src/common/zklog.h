/* The ZooKeeper C client's own log lines, through our logger at our levels. */
#ifndef DEFERD_ZKLOG_H
#define DEFERD_ZKLOG_H

#include "log.h"

/* The client's threshold from ours: its ERROR and WARN lines are ours; its INFO lines (each
 * connection and session detail) are our debug; its DEBUG (every packet) is never asked for. */
void zklog_set_level(enum log_level level);
/* While quiet (disconnected: the client logs every reconnect attempt, deferd logs the state
 * change once instead) all of its lines go to debug. */
void zklog_set_quiet(int quiet);
/* The level of one of the client's lines, its text from the function on in *TEXT: its
 * ERROR and WARN lines are ours, save the errors about a connection that broke or could not
 * be made (refused, reset, host down, timed out), which deferd handles: those are warnings.
 * Its INFO and DEBUG lines are our debug. */
enum log_level zklog_classify(const char *message, const char **text);
/* The log_callback_fn to give zookeeper_init2(); called on the client's threads. */
void zklog_line(const char *message);

#endif
