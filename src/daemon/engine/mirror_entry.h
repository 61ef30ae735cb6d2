/* A job's place in the mirror (mirror.h), apart so that the job record can embed it
 * without depending on the mirror. */
#ifndef DEFERD_MIRROR_ENTRY_H
#define DEFERD_MIRROR_ENTRY_H

struct dir;

/* A job's place in the mirror: the bucket it was listed in. Embedded in the owner's job
 * record; the mirror links and unlinks it, the owner only starts it zeroed. */
struct mirror_entry {
    struct dir *leaf;
    struct mirror_entry *next, *prev;
    unsigned gen;               /* last listing that showed it */
};

#endif
