/* The dashboard's state, shared by its router, its pages and its sign-in: the daemon it
 * shows, its reader thread, the browsers signed in. */
#ifndef DEFERD_WEB_STATE_H
#define DEFERD_WEB_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct deferd;
struct web_worker;

/* A browser's sign-in (web_auth.c): the cookie holds ID, never the token. */
#define WEB_SESSIONS_MAX 256
struct web_session {
    char id[33], csrf[33];      /* random hex */
    char name[WEB_TOKEN_NAME_MAX + 1];
    int64_t expires_ms;         /* monotonic */
};

struct web {
    struct deferd *d;
    struct web_worker *worker;
    struct config *zookeeper;   /* the daemon's [zookeeper] at start, for the worker */
    struct web_session sessions[WEB_SESSIONS_MAX];
    size_t nsessions;
};

#endif
