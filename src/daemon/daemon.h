/* The daemon's parts, owned by the one libevent loop thread. */
#ifndef DEFERD_DAEMON_H
#define DEFERD_DAEMON_H

#include <stdint.h>

struct event_base;
struct config;
struct zkstore;
struct server;
struct dispatcher;
struct mirror;
struct session;
struct pending;
struct keysweep;
struct tokensweep;
struct depth;
struct unpacker;
struct packer;
struct scheduler;
struct drain;
struct notify;
struct metrics;
struct metrics_http;
struct web;
struct clock_sync;

struct deferd {
    struct event_base *base;
    const struct config *cfg;
    struct zkstore *zs;
    struct server *server;
    struct dispatcher *dispatcher;
    struct mirror *mirror;
    struct session *session;
    struct pending *pending;
    struct keysweep *keysweep; /* deletes kept keys past key_retention */
    struct tokensweep *tokensweep; /* deletes put tokens past their use */
    struct depth *depth;       /* queue depth read from ZooKeeper */
    struct unpacker *unpacker; /* turns ripe packs into job znodes */
    struct packer *packer;     /* far-future puts into packs */
    struct scheduler *scheduler; /* [schedule NAME]: recurring occurrences */
    struct drain *drain;       /* set once SIGTERM/SIGINT started the drain */
    struct notify *notify;     /* sd_notify to the service manager */
    struct metrics *metrics;   /* metrics.h */
    struct metrics_http *metrics_http; /* NULL when [metrics] listen is off */
    struct web *web;           /* the dashboard, on metrics_http when [web] dashboard = on */
    struct clock_sync *clock;  /* ZooKeeper's clock, the one due times are judged by */
    struct claim_recovery *claim_recovery; /* layout 3: this session's node, dead ones' claims */
    int64_t session_id;        /* current ZooKeeper session, 0 when none */
    int layout_version;        /* of the root's marker (layout_marker.h): 2 = pack */
    int exit_status;
};

#endif
