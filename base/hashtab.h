/* hashtab.h -- the one open-addressing hash table: keys of a fixed number
 * of 64-bit words (or kept by the caller), values of a fixed size inline.
 *
 * Every in-memory table on a hot path (the writer's cells, the load's
 * staging, the engine's groups, dim rows, IN sets and value counts, run
 * merges) is this one. Its invariants:
 *
 *   1. A slot is slot_words words: the key's hash with HASHTAB_USED set (0:
 *      the slot is empty), the key's key_words words, then the value,
 *      rounded up to whole words (8-byte aligned, so any scalar or pointer
 *      fits). Comparing the stored hash first means a probe that misses
 *      rarely reads a key, and growth never rehashes one. A table of
 *      key_words 0 keeps no key: its value names the caller's record that
 *      holds it (a number, a pointer), and the caller's equality test
 *      (hashtab_find_by, hashtab_upsert_by) reads that record. The writer's
 *      cells and the load's staging hold their keys in their records
 *      already: a slot of two words there, not 2 + the key's. A keyless
 *      table whose values fit 32 bits packs a slot into one word: the
 *      hash's top 32 bits (top bit set) above the value, and its home is
 *      taken from those bits, so growth needs no key either. The load's
 *      staging is such a table: at 16 bytes a slot its table and the cell
 *      records missed the cache past what the staging's prefetches hide
 *      (perf of the initial load: the cell lookup 21% of the process, 8%
 *      at one word).
 *   2. cap is 0 (nothing allocated yet) or a power of two; a key's home is
 *      hash & (cap - 1), and it lies at the first slot from its home, going
 *      up and wrapping (linear probing), that holds it; no empty slot lies
 *      between its home and it.
 *   3. count <= cap / 2: an insertion that would pass half full first
 *      doubles cap. Linear probing at half load expects 1.5 probes for a
 *      key present and 2.5 for one absent (Knuth), and a probe is usually
 *      in the same cache line as the one before: two slots a key is the
 *      memory paid for probes that short.
 *   4. No key is removed one at a time (no user needs it, and without
 *      tombstones invariant 2 is all a lookup needs); hashtab_clear empties
 *      the table whole.
 *
 * Values are addressed by pointer: a pointer from a find or an upsert is
 * valid until the next upsert (which may grow the table and move every
 * slot, even when its key is there: the check for room comes before the
 * probe, so that a probe never runs twice) or clear. Callers hash the key
 * themselves (hashtab_hash, or hash_words with a seed of their own) so
 * that one hash serves a prefetch, a lookup and an insertion. Keys are
 * plain words: a byte key pads itself to whole words. A struct hashtab of
 * zeros (slot_words 0) is not a table: hashtab_init first; a caller that
 * sets its table up on first use tests slot_words. */
#ifndef STRAUM_BASE_HASHTAB_H
#define STRAUM_BASE_HASHTAB_H

#include "base/hash.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HASHTAB_USED 0x8000000000000000ULL /* set in every full slot's stored hash */
/* The largest capacity: counts are 32-bit, and half of 2^31 slots is more
 * keys than any table here holds (a cellmap's cells, an ask's groups). */
#define HASHTAB_MAX_CAP 0x80000000U
enum { HASHTAB_MIN_CAP = 16 }; /* the first allocation: small tables are the common ones */
/* The probes are forced inline: only then is a caller's equality test a
 * constant the compiler inlines in its turn (perf of a following ingest:
 * the writer's cell test called through its pointer was 3% of it). */
#define HASHTAB_PROBE static inline __attribute__((always_inline))

struct hashtab {
    uint64_t *slots;      /* cap slots of slot_words words (invariant 1) */
    uint32_t cap, count;  /* slots, and keys held */
    uint32_t key_words, slot_words;
    /* What tells a slot's key and where its value lies: the stored word's
     * bits that hold the hash, the shift of the hash that gives the home,
     * and the value's byte offset in its slot (invariant 1; hashtab_init). */
    uint64_t tag_mask;
    uint32_t home_shift, value_at;
};

/* Sets up an empty table of keys of key_words words (0: kept by the
 * caller, invariant 1) and values of value_bytes bytes (0 for a set; a
 * keyless table of values of at most 4 bytes packs its slots). Allocates
 * nothing: the first insertion does. Cannot fail. */
void hashtab_init(struct hashtab *t, uint32_t key_words, size_t value_bytes);
/* Frees the slots; the table is empty and may be used again. */
void hashtab_free(struct hashtab *t);
/* Empties the table, keeping its slots for reuse. Cannot fail. */
void hashtab_clear(struct hashtab *t);
/* Makes room for want keys without growing again: 0, or -1 when out of
 * memory or want is past HASHTAB_MAX_CAP / 2 (the table is unchanged). */
int hashtab_reserve(struct hashtab *t, uint64_t want);
/* The heap the slots take, in bytes. */
static inline size_t hashtab_bytes(const struct hashtab *t)
{
    return (size_t)t->cap * t->slot_words * 8;
}

/* The hash of a key as the table indexes it (hash_words, seed 0). */
static inline uint64_t hashtab_hash(const struct hashtab *t, const uint64_t *key)
{
    return hash_words(0, key, t->key_words);
}

HASHTAB_PROBE bool hashtab_key_equal(const uint64_t *a, const uint64_t *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) /* a key is a few words: no call to memcmp per probe */
        if (a[i] != b[i])
            return false;
    return true;
}

/* A caller's equality test for a table of key_words 0: whether the value
 * in a slot (which names the caller's record) is of the key in ctx. */
typedef bool (*hashtab_equal_fn)(const void *ctx, const void *value);

/* The slot that holds the key (hash h), else the empty slot it would take.
 * eq NULL compares the key's words; a constant eq inlines. cap > 0. */
HASHTAB_PROBE uint64_t *hashtab_slot(const struct hashtab *t, const uint64_t *key, uint64_t h,
                                     hashtab_equal_fn eq, const void *ctx)
{
    uint64_t tag = (h | HASHTAB_USED) & t->tag_mask, mask = t->cap - 1;
    for (uint64_t i = (h >> t->home_shift) & mask;; i = (i + 1) & mask) {
        uint64_t *s = t->slots + i * t->slot_words;
        if (s[0] == 0)
            return s;
        if ((s[0] & t->tag_mask) == tag && (eq ? eq(ctx, (char *)s + t->value_at)
                                               : hashtab_key_equal(s + 1, key, t->key_words)))
            return s;
    }
}

/* The value of key, whose hash is h, or NULL when the table does not hold
 * it. Cannot fail. */
HASHTAB_PROBE void *hashtab_find(const struct hashtab *t, const uint64_t *key, uint64_t h)
{
    if (!t->cap)
        return NULL;
    uint64_t *s = hashtab_slot(t, key, h, NULL, NULL);
    return s[0] ? (char *)s + t->value_at : NULL;
}

/* Grows to twice the capacity (HASHTAB_MIN_CAP from none): 0, or -1 when
 * out of memory or at HASHTAB_MAX_CAP (the table is unchanged). */
int hashtab_grow(struct hashtab *t);

/* The value of key (hash h), added with all-zero bytes when the table did
 * not hold it (*added then true). NULL when adding needed memory that was
 * not there, or the table is at its largest; the table is unchanged. */
HASHTAB_PROBE void *hashtab_upsert(struct hashtab *t, const uint64_t *key, uint64_t h, bool *added)
{
    if ((uint64_t)(t->count + 1) * 2 > t->cap && hashtab_grow(t))
        return NULL;
    uint64_t *s = hashtab_slot(t, key, h, NULL, NULL);
    if ((*added = s[0] == 0)) {
        s[0] = (h | HASHTAB_USED) & t->tag_mask;
        for (uint32_t k = 0; k < t->key_words; k++)
            s[1 + k] = key[k];
        t->count++;
    }
    return (char *)s + t->value_at;
}

/* hashtab_find for a table of key_words 0: eq(ctx, value) tells the key's
 * value from others of the same hash. Cannot fail. */
HASHTAB_PROBE void *hashtab_find_by(const struct hashtab *t, uint64_t h, hashtab_equal_fn eq,
                                    const void *ctx)
{
    if (!t->cap)
        return NULL;
    uint64_t *s = hashtab_slot(t, NULL, h, eq, ctx);
    return s[0] ? (char *)s + t->value_at : NULL;
}

/* hashtab_upsert for a table of key_words 0, as hashtab_find_by: a value
 * added is all zero bytes until the caller names its record in it. NULL
 * when out of memory (the table unchanged). */
HASHTAB_PROBE void *hashtab_upsert_by(struct hashtab *t, uint64_t h, hashtab_equal_fn eq,
                                      const void *ctx, bool *added)
{
    if ((uint64_t)(t->count + 1) * 2 > t->cap && hashtab_grow(t))
        return NULL;
    uint64_t *s = hashtab_slot(t, NULL, h, eq, ctx);
    if ((*added = s[0] == 0)) {
        s[0] = (h | HASHTAB_USED) & t->tag_mask; /* a packed value's bits: zero */
        t->count++;
    }
    return (char *)s + t->value_at;
}

/* Asks the CPU for key h's home slot ahead of a lookup. Forced inline: a
 * function that only prefetches has no effect the compiler sees, and GCC 12
 * drops a call to it whole (objdump of bulk.o: no prefetch left). */
HASHTAB_PROBE void hashtab_prefetch(const struct hashtab *t, uint64_t h)
{
    if (t->cap)
        __builtin_prefetch(t->slots + ((h >> t->home_shift) & (t->cap - 1)) * t->slot_words);
}

/* The value in key h's home slot when that slot's stored hash is h's (most
 * likely h's key: for prefetching what the value names), else NULL. */
HASHTAB_PROBE void *hashtab_home_value(const struct hashtab *t, uint64_t h)
{
    if (!t->cap)
        return NULL;
    uint64_t *s = t->slots + ((h >> t->home_shift) & (t->cap - 1)) * t->slot_words;
    return (s[0] & t->tag_mask) == ((h | HASHTAB_USED) & t->tag_mask) ? (char *)s + t->value_at
                                                                       : NULL;
}

/* Walks the entries, in slot order (no other order is promised): from
 * *at = 0, each call returns the next full slot and moves *at past it,
 * NULL after the last. Its key is hashtab_key_of (none in a keyless
 * table), its value hashtab_value_of. Insertions during a walk void it. */
static inline uint64_t *hashtab_next(const struct hashtab *t, uint32_t *at)
{
    for (; *at < t->cap; (*at)++) {
        uint64_t *s = t->slots + (size_t)*at * t->slot_words;
        if (s[0]) {
            (*at)++;
            return s;
        }
    }
    return NULL;
}
static inline uint64_t *hashtab_key_of(uint64_t *slot) { return slot + 1; }
static inline void *hashtab_value_of(const struct hashtab *t, uint64_t *slot)
{
    return (char *)slot + t->value_at;
}

#endif
