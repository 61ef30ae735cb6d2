/* libFuzzer harness: the ZooKeeper layout codec (src/common/layout.c) and the Curator codec
 * (src/common/curator.c) on hostile names, ids, key node data and frames. What parses must format
 * back to the very same bytes; what is formatted must parse back to the same values. Any
 * difference is a bug: abort(). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "curator.h"
#include "layout.h"
#include "names.h"
#include "fuzz.h"

static int same_name(const struct job_name *a, const struct job_name *b)
{
    return a->due_ms == b->due_ms && a->priority == b->priority &&
           a->prior_attempts == b->prior_attempts && a->ttr_ms == b->ttr_ms &&
           strcmp(a->uid, b->uid) == 0 && strcmp(a->key, b->key) == 0 &&
           strcmp(a->shard, b->shard) == 0;
}

static void job_names(const char *s, size_t len)
{
    struct job_name jn, back;
    char buf[LAYOUT_PATH_MAX], queue[QUEUE_NAME_MAX + 1];

    if (layout_parse_name(s, &jn) == 0) {
        CHECK(layout_valid_uid(jn.uid) && (!jn.key[0] || names_valid_key(jn.key)));
        CHECK(!jn.shard[0] && jn.due_ms <= LAYOUT_DUE_MAX);
        CHECK(layout_format_name(&jn, buf, LAYOUT_NAME_MAX + 1) == 0);
        CHECK(strcmp(buf, s) == 0);
        CHECK(layout_job_path(buf, sizeof buf, "/deferd", "q", &jn) == 0);
        CHECK(layout_dead_path(buf, sizeof buf, "/deferd", "q", &jn) == 0);
        uint64_t leaf = layout_bucket_of(jn.due_ms, LAYOUT_DEPTH);
        CHECK(layout_job_in_bucket(&jn, leaf, LAYOUT_FORM_EITHER));
        CHECK(layout_job_in_bucket(&jn, leaf, jn.short_buckets ? LAYOUT_FORM_SHORT
                                                               : LAYOUT_FORM_FULL));
        CHECK(layout_key_data(buf, sizeof buf, &jn) == 0 && strcmp(buf, s) == 0);
        if (jn.key[0])
            CHECK(layout_key_path(buf, sizeof buf, "/deferd", "q", jn.key) == 0);
        /* Too small a buffer fails cleanly, never truncates into a valid-looking name. */
        for (size_t n = 0; n <= strlen(s); n++)
            CHECK(layout_format_name(&jn, buf, n) == -1);
    }

    if (layout_parse_id(s, queue, sizeof queue, &jn) == 0) {
        CHECK(names_valid_queue(queue));
        CHECK(!jn.shard[0] || layout_valid_shard(jn.shard));
        CHECK(layout_job_id(buf, LAYOUT_ID_MAX + 1, queue, &jn) == 0 && strcmp(buf, s) == 0);
        CHECK(layout_key_data(buf, sizeof buf, &jn) == 0);
        CHECK(layout_parse_key_data(buf, strlen(buf), &back) == 0 && same_name(&jn, &back));
        CHECK(layout_job_path(buf, sizeof buf, "/deferd", queue, &jn) == 0);
    }

    /* Key node data: read from ZooKeeper as bytes (may hold NULs). */
    if (layout_parse_key_data(s, len, &jn) == 0) {
        CHECK(strlen(s) == len);
        CHECK(layout_key_data(buf, sizeof buf, &jn) == 0 && strcmp(buf, s) == 0);
    }

    /* A kept key's data: what parses formats to data that parses to the same. */
    int64_t acked, again;
    if (layout_parse_kept_key(s, len, &acked, &jn) == 0) {
        CHECK(acked >= 0 && strlen(s) == len);
        CHECK(layout_kept_key_data(buf, sizeof buf, acked, &jn) == 0);
        CHECK(layout_parse_kept_key(buf, strlen(buf), &again, &back) == 0);
        CHECK(again == acked && same_name(&jn, &back));
    }

    size_t slen = strlen(s); /* the input may hold NULs */
    CHECK(!layout_valid_shard(s) || (s[0] == 's' && slen <= LAYOUT_SHARD_MAX));
    CHECK(!layout_valid_uid(s) || (slen >= 1 && slen <= LAYOUT_UID_MAX));
    if (names_valid_key(s))
        CHECK(slen <= LAYOUT_KEY_MAX && layout_key_path(buf, sizeof buf, "/r", "q", s) == 0);
    else
        CHECK(layout_key_path(buf, sizeof buf, "/r", "q", s) == -1);

    for (int level = 0; level <= LAYOUT_DEPTH + 1; level++) {
        uint64_t parent = len ? (uint64_t)(unsigned char)s[0] * 1000 : 0, v;
        for (int k = 0; k < 2; k++, parent = 0) {
            int form = layout_parse_bucket(s, level, parent, &v);
            if (form < 0)
                continue;
            CHECK(level >= 1 && level <= LAYOUT_DEPTH);
            CHECK(form == LAYOUT_FORM_EITHER || form == LAYOUT_FORM_FULL ||
                  form == LAYOUT_FORM_SHORT);
            CHECK((form == LAYOUT_FORM_EITHER) == (level == 1 || parent == 0));
            uint64_t per = level > 1 ? layout_bucket_width[level - 1] / layout_bucket_width[level]
                                     : 1;
            snprintf(buf, sizeof buf, "%llu",
                     (unsigned long long)(form == LAYOUT_FORM_SHORT ? v % per : v));
            CHECK(strcmp(buf, s) == 0);
            uint64_t due = v * layout_bucket_width[level];
            CHECK(due <= LAYOUT_DUE_MAX && layout_bucket_of(due, level) == v);
            if (level > 1)
                CHECK(layout_bucket_of(due, level - 1) == parent);
        }
    }
}

static void curator_names(const char *s)
{
    static const enum curator_kind kinds[] = {CURATOR_PLAIN, CURATOR_PRIORITY, CURATOR_DELAY};
    struct curator_name cn, cn2;
    for (size_t k = 0; k < 3; k++) {
        int rc = curator_parse_name(kinds[k], s, &cn);
        CHECK(rc == (strncmp(s, CURATOR_PREFIX, strlen(CURATOR_PREFIX)) == 0 ? 0 : -1));
        if (rc == 0) {
            CHECK(curator_name_cmp(kinds[k], s, &cn, s, &cn) == 0);
            CHECK(curator_parse_name(kinds[k], "queue-0000000001", &cn2) == 0);
            int a = curator_name_cmp(kinds[k], s, &cn, "queue-0000000001", &cn2);
            int b = curator_name_cmp(kinds[k], "queue-0000000001", &cn2, s, &cn);
            CHECK(a == -b && a >= -1 && a <= 1);
        }
    }
    if (curator_valid_id_name(s))
        CHECK(strncmp(s, CURATOR_PREFIX, strlen(CURATOR_PREFIX)) == 0 && !strchr(s, '/') &&
              strlen(s) <= 255);
}

/* Values from the input through the name prefixes and back. */
static void curator_prefixes(const uint8_t *data, size_t size)
{
    if (size < 12)
        return;
    int64_t value;
    uint32_t attempts;
    memcpy(&value, data, sizeof value);
    memcpy(&attempts, data + 8, sizeof attempts);
    static const enum curator_kind kinds[] = {CURATOR_PLAIN, CURATOR_PRIORITY, CURATOR_DELAY};
    for (size_t k = 0; k < 3; k++) {
        char buf[CURATOR_PREFIX_MAX + 16];
        struct curator_name cn;
        for (int tagged = 0; tagged < 2; tagged++) {
            int rc = tagged ? curator_name_prefix_tagged(kinds[k], value, attempts, buf,
                                                         CURATOR_PREFIX_MAX)
                            : curator_name_prefix(kinds[k], value, buf, CURATOR_PREFIX_MAX);
            int fits = kinds[k] == CURATOR_PLAIN ||
                       (kinds[k] == CURATOR_PRIORITY && value >= INT32_MIN && value <= INT32_MAX) ||
                       (kinds[k] == CURATOR_DELAY && value > 0);
            CHECK(rc == (fits ? 0 : -1));
            if (rc != 0)
                continue;
            strcat(buf, "0000000042"); /* what ZooKeeper appends */
            CHECK(curator_parse_name(kinds[k], buf, &cn) == 0 && curator_valid_id_name(buf));
            CHECK(cn.attempts == (tagged ? attempts : 0));
            if (kinds[k] == CURATOR_PRIORITY)
                CHECK(cn.has_priority && cn.priority == (int32_t)value);
            if (kinds[k] == CURATOR_DELAY)
                CHECK(cn.epoch_ms == value);
        }
    }
}

/* Frames: decoded items lie inside the frame, and encoding them again gives the frame's
 * bytes up to its end marker. */
static void curator_frames(const uint8_t *data, size_t size)
{
    struct curator_item items[16];
    long n = curator_frame_decode(data, size, items, 16);
    if (n < 0)
        return;
    CHECK(size >= 5);
    if (n > 16) {
        CHECK(curator_frame_decode(data, size, NULL, 0) == n);
        return;
    }
    const unsigned char *ptrs[16];
    size_t lens[16];
    for (long i = 0; i < n; i++) {
        CHECK(items[i].offset <= size && items[i].len <= size - items[i].offset);
        ptrs[i] = data + items[i].offset;
        lens[i] = items[i].len;
    }
    size_t fsize = curator_frame_size(lens, (size_t)n);
    CHECK(fsize <= size);
    unsigned char *buf = malloc(fsize);
    CHECK(buf);
    CHECK(curator_frame_encode(ptrs, lens, (size_t)n, buf, fsize - 1) == 0);
    CHECK(curator_frame_encode(ptrs, lens, (size_t)n, buf, fsize) == fsize);
    CHECK(memcmp(buf, data, fsize) == 0);
    struct curator_item again[16];
    CHECK(curator_frame_decode(buf, fsize, again, 16) == n);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    job_names(s, size);
    curator_names(s);
    free(s);
    curator_prefixes(data, size);
    curator_frames(data, size);
    return 0;
}
