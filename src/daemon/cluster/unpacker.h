/* Unpacking (layout version 2, docs/zookeeper-layout.md "Packs"): as a pack's window comes
 * within its queue's pack_after, any daemon of the queue turns the pack into ordinary job
 * znodes in one transaction: delete(pack, the version it read) and create every job. Two
 * daemons that race both read the pack; ZooKeeper lets one transaction through, and the
 * other fails whole on the version: no leader, no job twice, none lost. What is near is
 * then exactly layout version 1, delivered as ever.
 *
 * A pack that cannot be read (foreign data, a damaged checksum, a window that is not its
 * name's) is logged once, never unpacked and never deleted. Loop thread only. */
#ifndef DEFERD_UNPACKER_H
#define DEFERD_UNPACKER_H

struct deferd;
struct unpacker;

struct unpacker *unpacker_new(struct deferd *d);
void unpacker_free(struct unpacker *u);
/* A (new) session: every listing is made again, with watches. */
void unpacker_session_up(struct unpacker *u);
/* A watch event: 1 if PATH was one of its directories, else 0. */
int unpacker_on_watch(struct unpacker *u, const char *path);

struct unpacker_counts {
    unsigned long long packs, jobs;  /* unpacked by this daemon */
    unsigned long long lost_races;   /* packs another daemon unpacked or changed first */
    unsigned long long unreadable;   /* packs skipped: foreign or damaged */
};
void unpacker_counts(const struct unpacker *u, struct unpacker_counts *out);

#endif
