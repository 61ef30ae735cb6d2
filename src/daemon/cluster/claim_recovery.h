/* Claims of dead sessions (layout version 3, docs/zookeeper-layout.md "Claims"): a claim
 * node is persistent, because its payloads must outlive its daemon. Each daemon marks its
 * live session with the ephemeral <root>/sessions/<session hex> before its first claim
 * (the engine claims only once this says the node is there), and watches sessions/. When
 * the set of sessions changes, after each new session and once a minute, it lists every
 * native queue's claims/, then sessions/; a claim whose session's node is not there is
 * recovered: its jobs made again in their buckets under their names, each delivery counted
 * in its znode's child version as a lock's would be (past ATTEMPTS_REPLAY_MAX in a<N>),
 * and the claim deleted at the version read, in one transaction. Daemons that race read
 * the same version; ZooKeeper lets one through. Loop thread only. */
#ifndef DEFERD_CLAIM_RECOVERY_H
#define DEFERD_CLAIM_RECOVERY_H

struct deferd;
struct claim_recovery;

struct claim_recovery *claim_recovery_new(struct deferd *d);
void claim_recovery_free(struct claim_recovery *cr);
/* A (new) session: its node is made, then every claim looked at. */
void claim_recovery_session_up(struct claim_recovery *cr);
/* A watch event: 1 if PATH was sessions/, else 0. */
int claim_recovery_on_watch(struct claim_recovery *cr, const char *path);

struct claim_recovery_counts {
    unsigned long long claims, jobs;  /* recovered by this daemon */
    unsigned long long lost_races;    /* claims another daemon recovered or changed first */
    unsigned long long unreadable;    /* claims left alone: foreign or damaged data */
};
void claim_recovery_counts(const struct claim_recovery *cr, struct claim_recovery_counts *out);

#endif
