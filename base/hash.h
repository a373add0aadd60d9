/* hash.h -- the one in-memory hash of Straum's tables: 64-bit words, mixed
 * inline.
 *
 * Keys of the hot tables (a cell's bucket and keys, a value's code, a
 * group's key) are whole 64-bit words, so the hash takes words: a multiply
 * and a shift per word, then murmur3's 64-bit finalizer, which carries every
 * input bit to the low bits a table indexes by and to the high bits it
 * keeps as a tag. Inline, it costs a load's staging a few cycles a row,
 * where a library call per probe (XXH3) was a tenth of the staging's time
 * (perf of the initial load). Never stored: no byte on disk depends on it,
 * so it may change. The format's checksum is another function (XXH64,
 * format/checksum.h). */
#ifndef STRAUM_BASE_HASH_H
#define STRAUM_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* One word into a running hash, and the finalizer that ends one: the two
 * halves of hash_words, which hash_bytes shares. */
static inline uint64_t hash_step(uint64_t h, uint64_t w)
{
    h ^= w;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 31);
}
static inline uint64_t hash_end(uint64_t h)
{
    h ^= h >> 33; /* murmur3's finalizer */
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

/* The hash of n words under a seed (a caller's table number, or 0). Cannot
 * fail. Equal words under equal seeds hash equal in every process. */
static inline uint64_t hash_words(uint64_t seed, const uint64_t *w, size_t n)
{
    uint64_t h = seed * 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < n; i++)
        h = hash_step(h, w[i]);
    return hash_end(h);
}

/* The hash of len bytes (an ask's text): its whole words, then its tail
 * zero-padded to a word, seeded by the length so that texts differing only
 * in trailing NULs differ. Cannot fail. */
static inline uint64_t hash_bytes(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = (uint64_t)len * 0x9E3779B97F4A7C15ULL, w;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&w, p + i, 8);
        h = hash_step(h, w);
    }
    w = 0;
    if (len > i)
        memcpy(&w, p + i, len - i);
    return hash_end(hash_step(h, w));
}

#endif
