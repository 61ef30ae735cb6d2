/* An index of items by their path: each path's hash beside its item in one array (linear
 * probing, at most half full). A miss reads a run of adjacent slots and touches no item; a
 * hit touches the one item whose hash matches. The daemon's job table and payload stash
 * look up a path for every put, mostly a miss, and a chain of items (uthash) cost a cache
 * miss each (performance.md, sessions 32 and 34). The items keep their own paths. */
#ifndef DEFERD_PATHINDEX_H
#define DEFERD_PATHINDEX_H

#include <stddef.h>

struct pathindex_slot {
    unsigned hash;
    void *item;                   /* NULL: free */
};

struct pathindex {
    struct pathindex_slot *slots;
    size_t cap, count;            /* cap: 0 or a power of two */
    const char *(*path_of)(const void *item);
};

void pathindex_init(struct pathindex *ix, const char *(*path_of)(const void *item));
/* Frees the slots, not the items. */
void pathindex_free(struct pathindex *ix);
unsigned pathindex_hash(const char *path, size_t len);
/* The item whose path is PATH (hash HASH), or NULL. */
void *pathindex_find(const struct pathindex *ix, const char *path, unsigned hash);
/* ITEM, whose path (hash HASH) is in no other item of the index: 0, or -1 when out of
 * memory (not added). An add right after a remove never fails: the slots kept (or halved)
 * leave room for one more without growing. */
int pathindex_add(struct pathindex *ix, void *item, unsigned hash);
/* Takes ITEM (added with HASH) out; nothing if it is not in. */
void pathindex_remove(struct pathindex *ix, const void *item, unsigned hash);

#endif
