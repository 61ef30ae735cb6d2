/* The loader's state and helpers, shared by config.c and the files that parse one kind of
 * section (config_schedule.c). Not for the config's users: they see config.h. */
#ifndef DEFERD_CONFIG_INT_H
#define DEFERD_CONFIG_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

/* Parser state: inih reports no line numbers, so the line reader counts them. */
struct load {
    struct config *cfg;
    FILE *fp;
    const char *file;
    int line;
    int zk_line;
    int web_line;      /* [web] token_file's, for errors found once the file is read */
    char section[128]; /* the current section's whole name: inih cuts names at 49 bytes */
    char **seen;
    size_t nseen;
    int overriding; /* -o may replace a key the file set */
    char *err;
    size_t errlen;
    int failed;
    int hold_writes_set; /* else its default follows session_timeout */
};

/* Section kinds, for the hint at an unknown key. */
enum section_kind { SEC_DAEMON, SEC_ZOOKEEPER, SEC_METRICS, SEC_WEB, SEC_QUEUE, SEC_SCHEDULE,
                    SEC_COUNT };

/* An error at the line being read; 0, inih's "stop". */
int cfg_fail(struct load *ld, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An error found after reading, at LINE (0: none means anything); -1. */
int cfg_fail_at(struct load *ld, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An unknown key in section [SHOWN]: what it may have been meant to be; 0. */
int cfg_unknown_key(struct load *ld, enum section_kind kind, const char *shown, const char *key);
/* A duration as durations are written: "7d", "250ms". */
void cfg_format_ms(uint64_t ms, char *buf, size_t len);
/* Each sets *DST from VALUE: 1, or 0 with the error (its range) reported. */
int cfg_set_duration(struct load *ld, uint64_t *dst, const char *key, const char *value,
                     uint64_t min, uint64_t max);
int cfg_set_u32(struct load *ld, uint32_t *dst, const char *key, const char *value,
                uint64_t min, uint64_t max);

/* Reads a file of secrets (auth_file, token_file) into BUF after checking that only its
 * owner, deferd's user, can read it; 0, or -1 with the error at LINE. WHOLE: a file longer
 * than BUF is an error (else its first SIZE - 1 bytes are read). */
int cfg_read_secret_file(struct load *ld, int line, const char *what, const char *path,
                         char *buf, size_t size, int whole);

/* config_web.c: [web]. */
int cfg_web_key(struct load *ld, const char *key, const char *value);
int cfg_validate_web(struct load *ld);
void cfg_free_web(struct config *cfg);

/* config_schedule.c: [schedule NAME] sections. */
void cfg_schedule_section(struct load *ld, const char *name);
int cfg_schedule_key(struct load *ld, const char *name, const char *key, const char *value);
int cfg_validate_schedules(struct load *ld);
void cfg_free_schedules(struct config *cfg);

#endif
