/* hashtab.c -- the open-addressing table's allocation: init, growth, clear
 * (the lookups are inline in hashtab.h). */
#include "base/hashtab.h"
#include "base/scratch.h"

#include <stdlib.h>
#include <string.h>

void hashtab_init(struct hashtab *t, uint32_t key_words, size_t value_bytes)
{
    memset(t, 0, sizeof *t);
    t->key_words = key_words;
    if (key_words == 0 && value_bytes <= 4) { /* packed: invariant 1 */
        t->slot_words = 1;
        t->tag_mask = 0xFFFFFFFF00000000ULL;
        t->home_shift = 32;
        /* The value is the word's low 32 bits, wherever the byte order puts them. */
        t->value_at = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 0 : 4;
        return;
    }
    t->slot_words = 1 + key_words + (uint32_t)((value_bytes + 7) / 8);
    t->tag_mask = ~0ULL;
    t->value_at = 8 * (1 + key_words);
}

void hashtab_free(struct hashtab *t)
{
    scratch_free(t->slots);
    t->slots = NULL;
    t->cap = t->count = 0;
}

void hashtab_clear(struct hashtab *t)
{
    if (t->slots)
        memset(t->slots, 0, hashtab_bytes(t));
    t->count = 0;
}

/* Moves every key into cap fresh slots; -1 when out of memory. */
static int rehash(struct hashtab *t, uint32_t cap)
{
    size_t words = t->slot_words;
    uint64_t *slots = scratch_calloc(cap, words * 8);
    if (!slots)
        return -1;
    uint64_t mask = cap - 1;
    for (uint32_t i = 0; i < t->cap; i++) {
        const uint64_t *s = t->slots + i * words;
        if (!s[0])
            continue;
        uint64_t j = (s[0] >> t->home_shift) & mask; /* HASHTAB_USED is above any mask */
        while (slots[j * words])
            j = (j + 1) & mask;
        memcpy(slots + j * words, s, words * 8);
    }
    scratch_free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

int hashtab_grow(struct hashtab *t)
{
    if (t->cap >= HASHTAB_MAX_CAP)
        return -1;
    return rehash(t, t->cap ? t->cap * 2 : HASHTAB_MIN_CAP);
}

int hashtab_reserve(struct hashtab *t, uint64_t want)
{
    if (want > HASHTAB_MAX_CAP / 2)
        return -1;
    uint64_t cap = t->cap ? t->cap : HASHTAB_MIN_CAP;
    while (cap < 2 * want)
        cap *= 2;
    return cap == t->cap ? 0 : rehash(t, (uint32_t)cap);
}
