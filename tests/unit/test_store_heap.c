/* test_store_heap.c -- when a commit gives the heap back (store_set_keep_heap).
 *
 * This binary defines malloc_trim, which the store (linked in statically)
 * then calls instead of glibc's: each call is counted and trims nothing.
 * Counting calls rather than reading the resident size keeps the test
 * about the store's choice, not about what the folds after a commit left
 * in the heap, and holds under AddressSanitizer's allocator too. */
#include "tests/unit/store_fixture.h"

#include <malloc.h>

static int trims;

int malloc_trim(size_t pad)
{
    (void)pad;
    trims++;
    return 0;
}

/* A batch past the cache budget: its commit trims the heap by default,
 * keeps it while told to, and the heap kept is trimmed once, when let go.
 * A batch within the budget owes nothing either way. */
Test(store_heap, a_kept_heap_is_given_back_once_when_let_go)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    uint64_t rng = 17;
    store_set_cache_bytes(s, 1 << 20);

    fixture_commit_rides(s, &rng, 20000, 1);
    cr_assert_eq(trims, 1, "the default: the commit trims");

    store_set_keep_heap(s, true);
    fixture_commit_rides(s, &rng, 20000, 2);
    fixture_commit_rides(s, &rng, 20000, 3);
    cr_assert_eq(trims, 1, "kept through two commits");
    store_set_keep_heap(s, false);
    cr_assert_eq(trims, 2, "let go: trimmed once");
    store_set_keep_heap(s, false);
    cr_assert_eq(trims, 2, "nothing owed");

    store_set_cache_bytes(s, 256 << 20);
    store_set_keep_heap(s, true);
    fixture_commit_rides(s, &rng, 10, 4);
    store_set_keep_heap(s, false);
    cr_assert_eq(trims, 2, "a small batch owes nothing");

    struct store_read *r;
    struct store_error err;
    cr_assert_eq(store_read_begin(s, &r, &err), 0, "%s", err.message);
    cr_assert_eq(fixture_total_rows(r, 0, 0), 60010);
    store_read_end(r);
    store_close(s);
    fixture_remove(dir);
}
