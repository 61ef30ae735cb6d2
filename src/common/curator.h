/* The Curator queue codec: item names and item frames exactly as Apache Curator 5.4.0's
 * queue recipes write and read them (docs/curator-format.md), for queues shared with Java
 * services. Pure byte work, no ZooKeeper calls. */
#ifndef DEFERD_CURATOR_H
#define DEFERD_CURATOR_H

#include <stddef.h>
#include <stdint.h>

enum curator_kind {
    CURATOR_PLAIN,    /* DistributedQueue: queue-<seq> */
    CURATOR_PRIORITY, /* DistributedPriorityQueue: queue-<sign digit><8 hex><seq> */
    CURATOR_DELAY,    /* DistributedDelayQueue: queue-|<epoch ms hex>|<seq> */
};

#define CURATOR_PREFIX "queue-"
#define CURATOR_FRAME_VERSION 0x00010001u
#define CURATOR_PREFIX_MAX 40

/* The name to create (PERSISTENT_SEQUENTIAL: ZooKeeper appends 10 digits) for an item with
 * PRIORITY (priority queues) or due at EPOCH_MS (delay queues, > 0); VALUE is ignored for
 * plain queues. 0, or -1 when it does not fit or the epoch is not positive. */
int curator_name_prefix(enum curator_kind kind, int64_t value, char *buf, size_t len);
/* The same with ATTEMPTS (> 0) made so far, for an item deferd puts back after a nack, in
 * a place Curator's readers ignore: delay "queue-a<N>|<hex>|" (Curator reads the epoch
 * between the last two '|'), priority "queue-<sign><hex8>a<N>-" (Curator only sorts names:
 * this sorts after every untagged item of the same priority, before the next priority). */
int curator_name_prefix_tagged(enum curator_kind kind, int64_t value, uint32_t attempts,
                               char *buf, size_t len);

struct curator_name {
    int64_t epoch_ms;  /* delay: when due; 0 (due at once) when the name holds no epoch,
                        * as Curator reads it */
    int32_t priority;  /* priority: the value written in the name; 0 when not readable */
    int has_priority;  /* the name carries a well-formed sign digit and 8 hex digits */
    uint32_t attempts; /* made before, from a deferd requeue tag; 0 when untagged */
};

/* Reads a child name of a KIND queue. -1 for a foreign name (not "queue-..."), which
 * Curator skips and leaves in place; otherwise 0 (a malformed epoch or priority reads the
 * way Curator reads it). */
int curator_parse_name(enum curator_kind kind, const char *name, struct curator_name *out);

/* Is NAME what a job id of a Curator queue holds after "<queue>/": an item name
 * ("queue-...", printable, no '/'), optionally followed by "#<part>" (1-based) for one
 * item of a frame holding several? */
int curator_valid_id_name(const char *name);

/* Curator's consumer order: plain and priority queues sort the whole names as bytes;
 * delay queues sort by epoch (ties: by name, which Curator leaves undefined). */
int curator_name_cmp(enum curator_kind kind, const char *a, const struct curator_name *na,
                     const char *b, const struct curator_name *nb);

/* Frames: version 0x00010001, then per item 0x01, a 4-byte big-endian length and the
 * bytes, then 0x02. One node holds one frame of one or more items (putMulti). */
size_t curator_frame_size(const size_t *lens, size_t n);
/* Writes the frame of N items into BUF; returns its size, or 0 if LEN is too small or an
 * item is longer than INT32_MAX. */
size_t curator_frame_encode(const unsigned char *const *items, const size_t *lens, size_t n,
                            unsigned char *buf, size_t len);

struct curator_item {
    size_t offset, len; /* within the frame */
};
/* Decodes a frame: the number of items (0 is a valid, empty frame), with up to MAX of them
 * stored in ITEMS; -1 when it is corrupt (wrong version, unknown marker, negative length,
 * truncated), which Curator answers by deleting the node. Bytes after the end marker are
 * ignored, as Curator ignores them. */
long curator_frame_decode(const unsigned char *data, size_t len, struct curator_item *items,
                          size_t max);

#endif
