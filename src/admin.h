/* Operator commands that work on ZooKeeper directly, for deferctl: the dead letters.
 * Synchronous ZooKeeper calls are fine here: this is a command-line tool, not the loop. */
#ifndef DEFERD_ADMIN_H
#define DEFERD_ADMIN_H

#include <stddef.h>
#include <stdio.h>

struct admin;

/* Reads CONFIG_PATH (deferd.ini) for the ZooKeeper hosts and root, and connects. */
int admin_open(const char *config_path, struct admin **out, char *err, size_t errlen);
void admin_close(struct admin *a);

/* Each returns 0, or -1 with a message in err. Ids are "<queue>/<job name>". */
int admin_dead_list(struct admin *a, const char *queue, FILE *out, char *err, size_t errlen);
int admin_dead_show(struct admin *a, const char *id, FILE *out, char *err, size_t errlen);
int admin_dead_kick(struct admin *a, const char *id, char *new_id, size_t idlen, char *err,
                    size_t errlen);
int admin_dead_delete(struct admin *a, const char *id, char *err, size_t errlen);
/* Dead letters of QUEUE, counted from each bucket's numChildren (no job is read). */
int admin_dead_count(struct admin *a, const char *queue, long long *count, char *err,
                     size_t errlen);

#endif
