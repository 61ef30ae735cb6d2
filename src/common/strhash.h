/* The hash of deferd's in-memory tables: uthash's (through HASH_FUNCTION) and pathindex's.
 * xxHash's XXH3, inlined: a put hashes its job's path (~90 bytes) and its bucket's several
 * times, and uthash's default (Jenkins) takes ~8 instructions a byte, XXH3 under one.
 * Nothing hashed here is stored: the hash may change between versions. Include this
 * instead of <uthash.h>, so that every table of the daemon uses the same function. */
#ifndef DEFERD_STRHASH_H
#define DEFERD_STRHASH_H

#ifdef UTHASH_H
#error "strhash.h must come before <uthash.h>: a table hashed two ways finds nothing"
#endif

#include <stddef.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static inline unsigned strhash(const void *key, size_t len)
{
    return (unsigned)XXH3_64bits(key, len);
}

#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = strhash((keyptr), (size_t)(keylen)))
#include <uthash.h>

#endif
