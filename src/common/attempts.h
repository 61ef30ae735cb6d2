/* How deferd counts a job's deliveries, durably and with no write of its own
 * (docs/zookeeper-layout.md): the attempts made under earlier names travel in the name
 * (a<N>, struct job_name's prior_attempts), those under the current name are counted by
 * ZooKeeper, because every delivery creates two children of the job (lock, then owner). */
#ifndef DEFERD_ATTEMPTS_H
#define DEFERD_ATTEMPTS_H

#include <stdint.h>

/* The deliveries so far of a job whose znode has the child version CVERSION: 4n - 2
 * while its n-th delivery holds it, 4n once that is over. */
uint32_t attempts_from_cversion(uint32_t prior_attempts, int32_t cversion);

/* The number of the delivery whose owner node got the sequence SEQ: the n-th delivery's
 * owner is the job's child number 2(n - 1) + 1. */
uint32_t attempts_from_owner_seq(uint32_t prior_attempts, uint32_t seq);

/* The prior attempts of a job given back unrun by delivery ATTEMPT: that delivery is not
 * counted, so the next one has the same number. */
uint32_t attempts_given_back(uint32_t attempt);

/* A job given back unrun keeps its name (and so its id) when the deliveries counted under
 * it are made again as children created and deleted in the same transaction that creates
 * it again: up to this many, 2 creates and 2 deletes each (docs/zookeeper-layout.md). */
#define ATTEMPTS_REPLAY_MAX 8
#define ATTEMPTS_REPLAY_OPS 4 /* operations a replayed delivery adds */

/* How many deliveries under the current name a give-back by delivery ATTEMPT must replay
 * to keep the name: 0 when none, more than ATTEMPTS_REPLAY_MAX when too many (the job
 * then takes its attempts into a new name, a<N>). */
uint32_t attempts_to_replay(uint32_t prior_attempts, uint32_t attempt);

#endif
