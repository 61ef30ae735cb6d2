/* The put side of packs (layout version 2, docs/zookeeper-layout.md "Packs"): a PUT of a
 * job due beyond its queue's pack_after is stored with others of the same window in one
 * znode, not as a znode of its own.
 *
 * Group commit per window: while a window has a write on its way, its new puts wait, and
 * go together in the next write; at most PACKER_WRITES_MAX writes are on their way in all.
 * So a lone put costs one round trip, and under load the packs grow by themselves. A
 * window's last pack stays open while it is small (PACKER_JOIN_BYTES): later puts rewrite
 * it at its version instead of starting a pack each, which bounds both the znodes per job
 * of a sparse producer and the bytes each rewrite costs. Loop thread only. */
#ifndef DEFERD_PACKER_H
#define DEFERD_PACKER_H

#include <stddef.h>
#include <stdint.h>

struct put_env;
struct dqueue;
struct job_name;
struct reply;

/* A pack still joined by rewriting stays below this many bytes: a rewrite costs ZooKeeper
 * its whole data (transaction log, and the old data's garbage), about half of this on
 * average. Small, since a sparse producer's puts only need to share a few znodes. */
#define PACKER_JOIN_BYTES 1024
/* Pack writes on their way at once. Puts in flight spread over many windows, so a write
 * carries few (1.6 with 512 puts in flight): the writes must overlap, not wait. */
#define PACKER_WRITES_MAX 128
/* A waiting packed put weighs this fraction of a put against [daemon] max_open_puts: a
 * pack write stores many. */
#define PACKER_PUTS_PER_SLOT 64

struct packer;

struct packer *packer_new(const struct put_env *env);
void packer_free(struct packer *pk);
/* 1 if a job of Q due at DUE_MS with LEN bytes of payload goes into a pack now: the root's
 * layout allows packs, the queue packs, the job's window starts beyond pack_after (plus a
 * margin), and the payload fits any pack (pack_payload_max: a larger one, up to
 * max_payload, is stored as a job znode of its own). */
int packer_wants(const struct packer *pk, const struct dqueue *q, uint64_t due_ms, size_t len);
/* Stores the job in a pack (JN: its due time, priority, ttr; no key) and answers R with
 * its id, "<queue>/<pack>/<job name>", or the error. Takes PAYLOAD (malloc'd). TOKEN_PATH:
 * NULL, or the put token's node, created in the same transaction; if it is taken, R is
 * answered as tokens.h says: the job it names (a retry of a put whose first try was
 * stored), or stored=maybe when it cannot be read. */
void packer_put(struct packer *pk, struct dqueue *q, const struct job_name *jn,
                unsigned char *payload, size_t len, const char *token_path, struct reply *r);
/* Puts waiting for or in a pack write. */
size_t packer_open(const struct packer *pk);
/* Counters for STATS and /metrics. */
struct packer_counts {
    unsigned long long packed;  /* jobs stored in packs */
    unsigned long long created, rewritten; /* pack znodes created, joined by a rewrite */
    unsigned long long bytes;   /* pack data written */
};
void packer_counts(const struct packer *pk, struct packer_counts *out);
/* For packs written by others of the engine (a BATCH, a keyed put, then=: putset.c): makes
 * sure PACK_PATH's directory exists before the pack's create reaches ZooKeeper (a plain
 * create sent now goes first on the same session; once per directory per run), and counts
 * what they wrote. */
int packer_prepare_dir(struct packer *pk, const char *pack_path);
/* The start of the window of Q that a job due at DUE_MS is packed in. */
uint64_t packer_window_start(const struct dqueue *q, uint64_t due_ms);
/* A new pack's name (a fresh uid) for Q's window [START, START + WIDTH) and its path. */
int packer_name_pack(struct packer *pk, const struct dqueue *q, uint64_t start, uint64_t width,
                     char *name, size_t nlen, char *path, size_t plen);
void packer_count_written(struct packer *pk, size_t jobs, size_t bytes);

#endif
