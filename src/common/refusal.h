/* The fields of an ERR reply (docs/protocol.md, Errors): `ERR <CODE> [<key>=<value> ...]
 * <text>`. Programs decide from the fields; the text is for people and may be reworded.
 * The daemon writes fields only with refusal_format() and libdeferd reads them only with
 * refusal_parse(), so this file is their one spelling. Pure functions, libc only. */
#ifndef DEFERD_REFUSAL_H
#define DEFERD_REFUSAL_H

#include <stddef.h>

/* What became of the job(s) of the refused request: "no", "maybe" (the answer was lost),
 * "yes", or for PARTIAL the number of jobs stored. Said by refusals of PUT and BATCH. */
enum refusal_stored { RS_UNSAID = 0, RS_NO, RS_MAYBE, RS_YES, RS_COUNT };

/* Why (reason=<token>). Append only: the tokens are part of the protocol. */
enum refusal_reason {
    RR_NONE = 0,
    RR_DRAINING,        /* the daemon is shutting down */
    RR_MAX_CONNECTIONS, /* over [daemon] max_connections; the connection is closed */
    RR_NOT_CONNECTED,   /* not connected to ZooKeeper */
    RR_CLOCK_UNREAD,    /* connected, ZooKeeper's clock not read yet */
    RR_NO_SESSION,      /* the ZooKeeper session was lost */
    RR_HOLD_EXPIRED,    /* ZooKeeper did not come back within [daemon] hold_writes */
    RR_OUT_OF_MEMORY,   /* the daemon ran out of memory */
    RR_PERMISSION,      /* ZooKeeper's ACL denies the daemon */
    RR_CONNECTION_LOST, /* the connection to ZooKeeper broke before its answer */
    RR_ZOOKEEPER,       /* ZooKeeper refused the operation for another reason */
    RR_OTHER,           /* parsed only: a reason this version does not know */
};

struct refusal {
    enum refusal_stored stored;
    size_t count;               /* RS_COUNT: how many */
    enum refusal_reason reason;
    int no_tokens;              /* tokens=no: the queue keeps no put tokens (Curator) */
    char option[24];            /* option=<name>: the option refused; "" for none */
    /* Set by refusal_parse() only: */
    char reason_word[32];       /* the reason as sent ("" for none) */
    int fields;                 /* how many fields came: 0 from a daemon older than them */
};

/* The fields of F, each followed by a space ("stored=no reason=draining "), NUL-ended;
 * an option that is not a valid value is left out. Its length, or -1 if LEN is short. */
int refusal_format(char *buf, size_t len, const struct refusal *f);

/* Reads the fields at the front of TEXT (what follows the code) into *F, known keys only;
 * returns where the text for people starts. */
const char *refusal_parse(const char *text, struct refusal *f);

/* The token of REASON ("draining"), "" for RR_NONE. */
const char *refusal_reason_name(enum refusal_reason reason);

/* Whether a put refused with F may be sent again: nothing was stored, or the outcome is
 * unknown and a stored first try would answer the retry with its job (KEYED: it has a key;
 * TOKENED: a put token, in a queue that keeps them); and not when sending again cannot
 * help soon (draining, max_connections, permission). F must have fields. */
int refusal_put_retry_safe(const struct refusal *f, int keyed, int tokened);

#endif
