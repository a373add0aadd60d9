/* test_store_dict.c -- dictionary ids of long texts: a text over
 * DICT_INLINE_BYTES is keyed by its first bytes and a 64-bit hash, and two
 * texts whose keys collide must still get two ids, each reading back as its
 * own text (SPEC.md §4.2). The hash is replaced by a constant to force the
 * collisions. */
#include "store/internal.h"
#include "tests/unit/store_fixture.h"

static uint64_t constant_hash(const void *text, size_t len)
{
    (void)text;
    (void)len;
    return 42;
}

enum { TEXTS = 4, LEN = 600 };

/* Text i: one shared 500-byte prefix (longer than the key's prefix), then
 * its own tail. */
static void long_text(int i, char out[LEN])
{
    memset(out, 'x', LEN);
    snprintf(out + 500, LEN - 500, "text number %d", i);
    out[strlen(out)] = 'y';
}

static int64_t intern(struct store *s, int col, int i)
{
    char text[LEN];
    long_text(i, text);
    int64_t id;
    struct store_error err;
    cr_assert_eq(store_dict_intern(s, 0, col, text, LEN, &id, &err), 0, "%s", err.message);
    return id;
}

Test(store_dict, long_texts_whose_hashes_collide_keep_their_own_ids)
{
    uint64_t (*saved)(const void *, size_t) = dict_text_hash;
    dict_text_hash = constant_hash;
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    int col = fixture_fact_index(&store_views(s)->views[0], "kind");
    int64_t ids[TEXTS];
    ids[0] = intern(s, col, 0);
    ids[1] = intern(s, col, 1);
    cr_assert_neq(ids[0], ids[1], "two texts with one hash got one id");
    cr_assert_eq(intern(s, col, 0), ids[0], "interned again in the same batch");
    cr_assert_eq(intern(s, col, 1), ids[1], "interned again in the same batch");
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 1}, &err), 0, "%s", err.message);
    /* From the stored dictionary, and new ones after the stored ones. */
    cr_assert_eq(intern(s, col, 1), ids[1], "found again in the store");
    cr_assert_eq(intern(s, col, 0), ids[0], "found again in the store");
    ids[2] = intern(s, col, 2);
    ids[3] = intern(s, col, 3);
    for (int i = 0; i < TEXTS; i++)
        for (int j = 0; j < i; j++)
            cr_assert_neq(ids[i], ids[j], "texts %d and %d share an id", i, j);
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 2}, &err), 0, "%s", err.message);
    store_close(s);

    cr_assert_eq(store_open(dir, STORE_READ_ONLY, &s, &err), 0, "%s", err.message);
    struct store_read *r;
    cr_assert_eq(store_read_begin(s, &r, &err), 0, "%s", err.message);
    for (int i = 0; i < TEXTS; i++) {
        char text[LEN];
        long_text(i, text);
        int64_t id;
        cr_assert_eq(store_dict_find(r, 0, col, text, LEN, &id), 0, "text %d is found", i);
        cr_assert_eq(id, ids[i], "text %d: id %lld, not %lld", i, (long long)id,
                     (long long)ids[i]);
        const char *got;
        size_t len;
        cr_assert_eq(store_dict_lookup(r, 0, col, ids[i], &got, &len), 0);
        cr_assert(len == LEN && memcmp(got, text, LEN) == 0, "id %lld reads back text %d",
                  (long long)ids[i], i);
    }
    char other[LEN];
    long_text(TEXTS, other);
    int64_t id;
    cr_assert_eq(store_dict_find(r, 0, col, other, LEN, &id), 1, "a text never interned");
    store_read_end(r);
    store_close(s);
    dict_text_hash = saved;
    fixture_remove(dir);
}
