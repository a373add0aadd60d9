/* test_base_hashtab.c -- the open-addressing table: growth keeps every key,
 * colliding hashes, multi-word keys, clear, walks, refusals, and keys built
 * to collide under a weak hash (probe lengths stay short). */
#include "base/hashtab.h"

#include <criterion/criterion.h>
#include <stdlib.h>

/* Invariants 1-3 of hashtab.h over the whole table: every key lies at or
 * after its home with no empty slot between, count is the full slots and
 * at most half. Returns the longest probe (slots from home, 0 at home). */
static uint32_t check_invariants(const struct hashtab *t)
{
    uint32_t full = 0, longest = 0;
    cr_assert(t->cap == 0 || (t->cap & (t->cap - 1)) == 0, "cap %u not a power of two", t->cap);
    for (uint32_t i = 0; i < t->cap; i++) {
        const uint64_t *s = t->slots + (size_t)i * t->slot_words;
        if (!s[0])
            continue;
        full++;
        cr_assert(s[0] & HASHTAB_USED);
        cr_assert_eq(s[0], hashtab_hash(t, s + 1) | HASHTAB_USED, "slot %u holds a stale hash", i);
        uint32_t home = (uint32_t)(s[0] & (t->cap - 1)), d = (i - home) & (t->cap - 1);
        for (uint32_t j = home; j != i; j = (j + 1) & (t->cap - 1))
            cr_assert_neq(t->slots[(size_t)j * t->slot_words], 0, "an empty slot between home and key");
        longest = d > longest ? d : longest;
    }
    cr_assert_eq(full, t->count);
    cr_assert_leq((uint64_t)t->count * 2, t->cap);
    return longest;
}

static int64_t *put(struct hashtab *t, uint64_t key, bool *added)
{
    int64_t *v = hashtab_upsert(t, &key, hashtab_hash(t, &key), added);
    cr_assert_not_null(v);
    return v;
}

static int64_t *get(const struct hashtab *t, uint64_t key)
{
    return hashtab_find(t, &key, hashtab_hash(t, &key));
}

Test(base_hashtab, empty_table_finds_nothing)
{
    struct hashtab t;
    hashtab_init(&t, 1, 8);
    cr_assert_null(get(&t, 0));
    cr_assert_null(get(&t, 42));
    uint32_t at = 0;
    cr_assert_null(hashtab_next(&t, &at));
    cr_assert_eq(hashtab_bytes(&t), 0);
    hashtab_free(&t);
}

Test(base_hashtab, growth_keeps_every_key_and_value)
{
    struct hashtab t;
    hashtab_init(&t, 1, 8);
    enum { N = 100000 };
    uint32_t caps_seen = 0, last_cap = 0;
    for (uint64_t k = 0; k < N; k++) {
        bool added;
        int64_t *v = put(&t, k * 7919, &added);
        cr_assert(added, "key %lu was there before it was added", (unsigned long)k);
        cr_assert_eq(*v, 0, "a new key's value is not zero");
        *v = (int64_t)k + 1;
        if (t.cap != last_cap) {
            caps_seen++;
            last_cap = t.cap;
            check_invariants(&t);
        }
    }
    cr_assert_gt(caps_seen, 10, "the table did not grow step by step");
    cr_assert_eq(t.count, N);
    cr_assert_eq(t.cap, 262144, "100,000 keys at most half full take 2^18 slots, not %u", t.cap);
    for (uint64_t k = 0; k < N; k++) {
        int64_t *v = get(&t, k * 7919);
        cr_assert_not_null(v, "key %lu lost", (unsigned long)k);
        cr_assert_eq(*v, (int64_t)k + 1);
        bool added;
        cr_assert_eq(*put(&t, k * 7919, &added), (int64_t)k + 1);
        cr_assert_not(added);
    }
    cr_assert_null(get(&t, 7919 * (uint64_t)N));
    cr_assert_null(get(&t, 1));
    check_invariants(&t);
    hashtab_free(&t);
}

/* Keys whose hashes are forced equal (one stored hash for all): every
 * lookup walks the cluster and tells them apart by their words alone. */
Test(base_hashtab, equal_hashes_are_told_apart_by_key)
{
    struct hashtab t;
    hashtab_init(&t, 1, 8);
    const uint64_t h = 12345;
    for (uint64_t k = 0; k < 6; k++) {
        bool added;
        int64_t *v = hashtab_upsert(&t, &k, h, &added);
        cr_assert_not_null(v);
        cr_assert(added);
        *v = (int64_t)(100 + k);
    }
    for (uint64_t k = 0; k < 6; k++) {
        int64_t *v = hashtab_find(&t, &k, h);
        cr_assert_not_null(v);
        cr_assert_eq(*v, (int64_t)(100 + k));
    }
    uint64_t absent = 6;
    cr_assert_null(hashtab_find(&t, &absent, h));
    /* A different hash with the same home: the stored hash alone refuses it. */
    uint64_t k0 = 0;
    cr_assert_null(hashtab_find(&t, &k0, h + t.cap));
    hashtab_free(&t);
}

Test(base_hashtab, multi_word_keys_and_wide_values)
{
    struct hashtab t;
    struct wide {
        int64_t a, b;
        uint32_t c;
    };
    hashtab_init(&t, 3, sizeof(struct wide));
    cr_assert_eq(t.slot_words, 1 + 3 + 3);
    for (uint64_t i = 0; i < 5000; i++) {
        uint64_t key[3] = {i % 7, i / 7, i ^ 0xabcdef};
        bool added;
        struct wide *w = hashtab_upsert(&t, key, hashtab_hash(&t, key), &added);
        cr_assert_not_null(w);
        cr_assert(added);
        cr_assert_eq((uintptr_t)w % 8, 0, "value not 8-byte aligned");
        *w = (struct wide){(int64_t)i, -(int64_t)i, (uint32_t)i};
    }
    for (uint64_t i = 0; i < 5000; i++) {
        uint64_t key[3] = {i % 7, i / 7, i ^ 0xabcdef};
        struct wide *w = hashtab_find(&t, key, hashtab_hash(&t, key));
        cr_assert_not_null(w);
        cr_assert_eq(w->a, (int64_t)i);
        cr_assert_eq(w->c, (uint32_t)i);
        key[2] ^= 1; /* one word differs */
        struct wide *x = hashtab_find(&t, key, hashtab_hash(&t, key));
        cr_assert(x == NULL || x->a != (int64_t)i);
    }
    check_invariants(&t);
    hashtab_free(&t);
}

Test(base_hashtab, walk_visits_each_key_once)
{
    struct hashtab t;
    hashtab_init(&t, 1, 8);
    enum { N = 3000 };
    for (uint64_t k = 1; k <= N; k++) {
        bool added;
        *put(&t, k << 20, &added) = (int64_t)k;
    }
    static unsigned char seen[N + 1];
    uint32_t at = 0, n = 0;
    for (uint64_t *slot; (slot = hashtab_next(&t, &at));) {
        const uint64_t *key = hashtab_key_of(slot);
        int64_t *v = hashtab_value_of(&t, slot);
        cr_assert_eq(*key, (uint64_t)*v << 20);
        cr_assert_eq(seen[*v]++, 0, "key %ld walked twice", (long)*v);
        n++;
    }
    cr_assert_eq(n, N);
    hashtab_free(&t);
}

Test(base_hashtab, clear_empties_and_zeroes_values)
{
    struct hashtab t;
    hashtab_init(&t, 2, 8);
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t key[2] = {i, i};
        bool added;
        int64_t *v = hashtab_upsert(&t, key, hashtab_hash(&t, key), &added);
        *v = 99;
    }
    uint32_t cap = t.cap;
    hashtab_clear(&t);
    cr_assert_eq(t.count, 0);
    cr_assert_eq(t.cap, cap, "clear let the slots go");
    uint64_t key[2] = {5, 5};
    cr_assert_null(hashtab_find(&t, key, hashtab_hash(&t, key)));
    bool added;
    int64_t *v = hashtab_upsert(&t, key, hashtab_hash(&t, key), &added);
    cr_assert(added);
    cr_assert_eq(*v, 0, "a value re-added after clear kept its old bytes");
    check_invariants(&t);
    hashtab_free(&t);
}

Test(base_hashtab, a_set_has_no_value_words)
{
    struct hashtab t;
    hashtab_init(&t, 1, 0);
    cr_assert_eq(t.slot_words, 2);
    uint64_t k = (uint64_t)INT64_MIN; /* every word is a key: no value stands for empty */
    bool added;
    cr_assert_not_null(hashtab_upsert(&t, &k, hashtab_hash(&t, &k), &added));
    cr_assert_not_null(hashtab_find(&t, &k, hashtab_hash(&t, &k)));
    uint64_t z = 0;
    cr_assert_null(hashtab_find(&t, &z, hashtab_hash(&t, &z)));
    cr_assert_not_null(hashtab_upsert(&t, &z, hashtab_hash(&t, &z), &added));
    cr_assert(added);
    cr_assert_eq(t.count, 2);
    hashtab_free(&t);
}

Test(base_hashtab, reserve_sizes_once_and_refuses_too_much)
{
    struct hashtab t;
    hashtab_init(&t, 1, 8);
    cr_assert_eq(hashtab_reserve(&t, 1000), 0);
    cr_assert_eq(t.cap, 2048);
    uint64_t *slots = t.slots;
    for (uint64_t k = 0; k < 1000; k++) {
        bool added;
        put(&t, k, &added);
    }
    cr_assert_eq(t.slots, slots, "the table grew inside its reservation");
    cr_assert_eq(hashtab_reserve(&t, (uint64_t)HASHTAB_MAX_CAP), -1);
    cr_assert_eq(t.cap, 2048, "a refused reservation changed the table");
    cr_assert_eq(t.count, 1000);
    hashtab_free(&t);
}

/* Keys with structure a table indexed by low bits would pile up on:
 * multiples of a large power of two (codes of a coarse time unit), keys
 * that differ in their top bits only, and a counting sequence. The hash
 * spreads each: the longest probe stays short at half load. */
Test(base_hashtab, adversarial_keys_keep_probes_short)
{
    static const struct {
        const char *name;
        int shift;
    } sets[] = {{"multiples of 2^32", 32}, {"multiples of 2^16", 16}, {"top bits only", 48},
                {"a counting sequence", 0}};
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        struct hashtab t;
        hashtab_init(&t, 1, 8);
        enum { N = 1 << 15 };
        for (uint64_t i = 0; i < N; i++) {
            bool added;
            put(&t, i << sets[s].shift, &added);
            cr_assert(added, "%s: %lu collided with an earlier key", sets[s].name, (unsigned long)i);
        }
        uint32_t longest = check_invariants(&t);
        /* Random keys at load 1/2 in 2^16 slots run about 30 slots longest. */
        cr_assert_lt(longest, 64, "%s: a probe %u slots long", sets[s].name, longest);
        hashtab_free(&t);
    }
    /* Multi-word keys that differ in one word only, in each position. */
    for (int pos = 0; pos < 3; pos++) {
        struct hashtab t;
        hashtab_init(&t, 3, 0);
        for (uint64_t i = 0; i < 20000; i++) {
            uint64_t key[3] = {7, 7, 7};
            key[pos] = i << 40;
            bool added;
            cr_assert_not_null(hashtab_upsert(&t, key, hashtab_hash(&t, key), &added));
            cr_assert(added);
        }
        cr_assert_lt(check_invariants(&t), 64, "word %d: probes grew long", pos);
        hashtab_free(&t);
    }
}

Test(base_hashtab, hash_bytes_sees_every_byte_and_the_length)
{
    const char a[] = "SELECT count(*) FROM trips WHERE zone = 1";
    char b[sizeof a];
    memcpy(b, a, sizeof a);
    uint64_t h = hash_bytes(a, sizeof a - 1);
    cr_assert_eq(hash_bytes(b, sizeof b - 1), h, "equal texts hash apart");
    for (size_t i = 0; i < sizeof a - 1; i++) {
        b[i] ^= 1;
        cr_assert_neq(hash_bytes(b, sizeof b - 1), h, "byte %zu does not reach the hash", i);
        b[i] ^= 1;
    }
    const char z[3] = {'a', 0, 0};
    cr_assert_neq(hash_bytes(z, 1), hash_bytes(z, 2), "a trailing NUL does not reach the hash");
    cr_assert_neq(hash_bytes(z, 0), hash_bytes(z, 1));
}

/* A table that keeps no key (key_words 0): values name the caller's
 * records, and the caller's test tells records of equal hashes apart. */
struct record {
    uint64_t a, b;
};
static struct record records[4096];

struct probe {
    uint64_t a, b;
};

static bool record_matches(const void *ctx, const void *value)
{
    const struct probe *p = ctx;
    const struct record *r = &records[*(const uint32_t *)value];
    return r->a == p->a && r->b == p->b;
}

/* The same walk through a keyless table of values of value_bytes: 4
 * packs its slots into one word (the hash's top bits above the value), 8
 * takes the hash and the value, a word each. */
static void keyless(size_t value_bytes, uint32_t slot_words)
{
    struct hashtab t;
    hashtab_init(&t, 0, value_bytes);
    cr_assert_eq(t.slot_words, slot_words, "%zu-byte values: %u-word slots", value_bytes,
                 t.slot_words);
    uint32_t n = 0;
    for (uint64_t i = 0; i < 4096; i++) {
        struct probe p = {i % 64, i / 64};
        /* Records share hashes (and, packed, the top bits) in clusters:
         * the caller's test decides. */
        uint64_t h = hash_words(0, &p.a, 1) ^ (p.b / 2) ^ ((p.b / 2) << 40);
        bool added;
        uint32_t *v = hashtab_upsert_by(&t, h, record_matches, &p, &added);
        cr_assert_not_null(v);
        cr_assert(added, "record %lu matched another", (unsigned long)i);
        cr_assert_eq(*v, 0, "a new value is not zero");
        records[n] = (struct record){p.a, p.b};
        *v = n++;
    }
    cr_assert_eq(t.count, 4096);
    cr_assert_leq((uint64_t)t.count * 2, t.cap);
    uint32_t at = 0, walked = 0;
    static unsigned char seen[4096];
    memset(seen, 0, sizeof seen);
    for (uint64_t *slot; (slot = hashtab_next(&t, &at)); walked++) {
        uint32_t v = *(uint32_t *)hashtab_value_of(&t, slot);
        cr_assert_lt(v, 4096);
        cr_assert_eq(seen[v]++, 0, "record %u walked twice", v);
    }
    cr_assert_eq(walked, 4096);
    for (uint64_t i = 0; i < 4096; i++) {
        struct probe p = {i % 64, i / 64};
        uint64_t h = hash_words(0, &p.a, 1) ^ (p.b / 2) ^ ((p.b / 2) << 40);
        uint32_t *v = hashtab_find_by(&t, h, record_matches, &p);
        cr_assert_not_null(v, "record %lu lost", (unsigned long)i);
        cr_assert_eq(*v, (uint32_t)i);
        bool added;
        uint32_t *again = hashtab_upsert_by(&t, h, record_matches, &p, &added);
        cr_assert_not_null(again);
        cr_assert_eq(*again, (uint32_t)i); /* the same entry (its slot may move: see hashtab.h) */
        cr_assert_not(added);
        struct probe q = {p.a, p.b + 4096}; /* the same hash, no record */
        cr_assert_null(hashtab_find_by(&t, h, record_matches, &q));
    }
    hashtab_free(&t);
}

Test(base_hashtab, keys_kept_by_the_caller)
{
    keyless(4, 1);
    keyless(8, 2);
}
