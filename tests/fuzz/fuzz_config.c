/* libFuzzer harness: the config loader (src/common/config.c) on hostile files and -o overrides.
 * The input is a deferd.ini, optionally followed by a line "--" and one override
 * ("section.key=value") per line. The file is written to a memfd (or a temp file) and
 * loaded; a loaded config must be consistent, a failed load must say why and leave the
 * config empty. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "names.h"
#include "fuzz.h"

#define OVERRIDES_MAX 16

/* A path that reads DATA: a memfd's /proc path, else a file made by mkstemp (*TMP: unlink
 * it after). */
static int write_file(const uint8_t *data, size_t size, char *path, size_t len, int *tmp)
{
    int fd = memfd_create("fuzz_config", 0);
    *tmp = fd < 0;
    if (fd < 0) {
        snprintf(path, len, "/tmp/fuzz_config.XXXXXX");
        if ((fd = mkstemp(path)) < 0)
            return -1;
    } else {
        snprintf(path, len, "/proc/self/fd/%d", fd);
    }
    for (size_t off = 0; off < size;) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0) {
            close(fd);
            if (*tmp)
                unlink(path);
            return -1;
        }
        off += (size_t)n;
    }
    return fd;
}

static void check_config(const struct config *c)
{
    CHECK(c->path && c->socket_path && c->zk_hosts && c->zk_root && c->nqueues > 0);
    CHECK(strlen(c->socket_path) < 108 && c->socket_mode <= 0777);
    CHECK(c->max_payload >= 1 && c->max_payload <= CONFIG_MAX_PAYLOAD_LIMIT);
    CHECK(!c->metrics_host || (c->metrics_host[0] && c->metrics_port <= 65535));
    char scheme[64];
    const char *cred = config_auth(c, scheme, sizeof scheme);
    CHECK(!c->zk_auth == !cred);
    CHECK(!cred || (cred[0] && scheme[0]));
    for (size_t i = 0; i < c->nqueues; i++) {
        const struct queue_config *q = c->queues[i];
        CHECK(q && q->index == i && names_valid_queue(q->name));
        CHECK(config_queue(c, q->name) == q); /* names are unique */
        CHECK(q->max_attempts >= 1 && q->backoff_jitter <= 100 && q->ttr_ms >= 1000);
        CHECK((q->format == QF_NATIVE) == !q->curator_path[0]);
        CHECK(!q->curator_lock_path[0] || q->format != QF_NATIVE);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The file, then after "\n--\n" the overrides. */
    size_t flen = size;
    const char *ov = NULL;
    for (size_t i = 0; i + 4 <= size; i++) {
        if (memcmp(data + i, "\n--\n", 4) == 0) {
            flen = i + 1;
            ov = (const char *)data + i + 4;
            break;
        }
    }
    char *overrides[OVERRIDES_MAX];
    size_t nov = 0;
    char *ovcopy = NULL;
    if (ov) {
        size_t olen = size - (size_t)((const uint8_t *)ov - data);
        ovcopy = malloc(olen + 1);
        if (!ovcopy)
            return 0;
        memcpy(ovcopy, ov, olen);
        ovcopy[olen] = '\0';
        for (char *p = ovcopy, *save = NULL, *tok; nov < OVERRIDES_MAX &&
             (tok = strtok_r(p, "\n", &save)); p = NULL)
            overrides[nov++] = tok;
    }

    char path[64];
    int tmp;
    int fd = write_file(data, flen, path, sizeof path, &tmp);
    if (fd < 0) {
        free(ovcopy);
        return 0;
    }
    struct config cfg;
    char err[1024];
    err[0] = '\0';
    memset(&cfg, 0xa5, sizeof cfg); /* config_load may not rely on it being zeroed */
    int rc = config_load(path, (const char *const *)overrides, nov, &cfg, err, sizeof err);
    CHECK(rc == 0 || rc == -1);
    if (rc == 0) {
        check_config(&cfg);
        config_free(&cfg);
    } else {
        CHECK(err[0] && memchr(err, '\0', sizeof err));
        CHECK(!cfg.path && !cfg.queues && cfg.nqueues == 0);
    }
    close(fd);
    if (tmp)
        unlink(path);
    free(ovcopy);
    return 0;
}
