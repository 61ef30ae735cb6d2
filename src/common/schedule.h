/* A schedule's occurrences (docs/schedules.md): when they fall, their keys, and the state
 * node every daemon with the schedule shares in ZooKeeper. Pure: the daemon (scheduler.c)
 * and deferctl compute the same instants from the same section. */
#ifndef DEFERD_SCHEDULE_H
#define DEFERD_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define SCHEDULE_FP_LEN 16
#define SCHEDULE_STATE_MAX 160

/* The first occurrence strictly after AFTER_MS (epoch ms) into *NEXT_MS: 0, or -1 when
 * there is none (a cron expression that fires no more within 50 years). */
int schedule_next(const struct schedule_config *s, int64_t after_ms, int64_t *next_ms);
/* An occurrence's delay, 0 .. jitter: a hash of the name and the instant, so that every
 * daemon puts the occurrence for the same due time. */
uint64_t schedule_jitter(const struct schedule_config *s, int64_t occ_ms);
/* What decides the occurrences and their keys (name, queue, cron or every and anchor,
 * timezone, jitter), as 16 hex digits: daemons whose sections differ tell so by it. */
void schedule_fingerprint(const struct schedule_config *s, char out[SCHEDULE_FP_LEN + 1]);

/* When it fires, for people: "cron \"0 3 * * *\" in Europe/Berlin" or "every 5m from
 * 1970-01-01T00:00:00.000Z" (every and anchor as deferd.ini takes them); an occurrence at
 * MS as "<local time with zone and offset>  <UTC ISO time>". */
void schedule_describe(const struct schedule_config *s, char *buf, size_t len);
void schedule_format_instant(const struct schedule_config *s, int64_t ms, char *buf,
                             size_t len);

/* Keys: "<name>:<ms>" an occurrence; "<name>:<ms>:m<count>" the catch-up of COUNT missed
 * ones, the latest at MS; "<name>:<ms>:run" one put by hand. */
void schedule_key(const struct schedule_config *s, int64_t occ_ms, char *buf, size_t len);
void schedule_catchup_key(const struct schedule_config *s, int64_t occ_ms, uint64_t count,
                          char *buf, size_t len);
void schedule_run_key(const struct schedule_config *s, int64_t now_ms, char *buf, size_t len);

/* The state node <root>/schedules/<name>: "v1 last=<ms> fp=<hex> key=<key>|-". LAST is the
 * latest occurrence put or passed over: no daemon puts one at or before it again. KEY is
 * the key of the latest job put (for overlap = skip and deferctl schedules). */
struct schedule_state {
    int64_t last_ms;
    char fp[SCHEDULE_FP_LEN + 1];
    char key[NAMES_KEY_MAX + 1];
};
int schedule_state_format(const struct schedule_state *st, char *buf, size_t len);
/* 0, or -1 when DATA is not a state node's (a foreign node: left alone). */
int schedule_state_parse(const char *data, size_t len, struct schedule_state *st);

#endif
