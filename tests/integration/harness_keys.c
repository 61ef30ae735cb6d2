/* Harness helpers for keyed puts (docs/protocol.md, PUT key=). An object of its own in the
 * harness library, so that only the tests that use them link the client's key calls. */
#include <unistd.h>

#include "harness.h"

void keyed_item(deferd_put_item *it, const char *queue, const char *payload, const char *key,
                   int64_t delay_ms)
{
    memset(it, 0, sizeof *it);
    it->queue = queue;
    it->payload = payload;
    it->len = strlen(payload);
    it->opts.key = key;
    if (delay_ms >= 0) {
        it->opts.has_delay = 1;
        it->opts.delay_ms = (uint64_t)delay_ms;
    }
}

int put_keyed(deferd_client *c, deferd_put_item *it)
{
    int64_t deadline = now_ms() + 20000;
    for (;;) {
        int rc = deferd_put_one(c, it);
        if (rc == DEFERD_OK)
            return 0;
        if (rc != DEFERD_ESERVER || strcmp(deferd_last_error_code(c), "UNAVAILABLE") != 0 ||
            now_ms() > deadline) {
            fprintf(stderr, "put of key %s failed: %s\n", it->opts.key ? it->opts.key : "-",
                    deferd_last_error(c));
            return -1;
        }
        usleep(50000);
    }
}
