/* test_base_scratch.c -- per-ask scratch counted against a budget: what is
 * held and its peak, the refusal past the limit (and the budget marked
 * exceeded), realloc's growth counted once, frees giving it back, a
 * budget per thread, and no budget as plain malloc. */
#include "base/scratch.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

Test(base_scratch, counts_what_is_held_and_its_peak)
{
    struct scratch_budget b = {.limit = 0};
    struct scratch_budget *outer = scratch_enter(&b);
    char *p = scratch_malloc(1000), *q = scratch_calloc(10, 100);
    cr_assert(p && q);
    cr_assert_geq(b.used, 2000);
    size_t two = b.used;
    scratch_free(p);
    cr_assert_lt(b.used, two);
    cr_assert_eq(b.peak, two);
    q = scratch_realloc(q, 100000);
    cr_assert_not_null(q);
    cr_assert_geq(b.used, 100000);
    cr_assert_lt(b.used, 100000 + 2000, "the block grown is counted once: %zu", b.used);
    scratch_free(q);
    cr_assert_eq(b.used, 0);
    cr_assert_not(b.exceeded);
    scratch_leave(outer);
}

Test(base_scratch, refuses_past_the_limit_and_marks_the_budget)
{
    struct scratch_budget b = {.limit = 64 << 10};
    struct scratch_budget *outer = scratch_enter(&b);
    void *p = scratch_malloc(40 << 10);
    cr_assert_not_null(p);
    cr_assert_null(scratch_malloc(40 << 10));
    cr_assert(b.exceeded);
    cr_assert_null(scratch_calloc(SIZE_MAX / 2, 4), "an overflowing calloc is refused");
    void *grown = scratch_realloc(p, 80 << 10);
    cr_assert_null(grown);
    memset(p, 1, 40 << 10); /* still the caller's, and still counted */
    cr_assert_geq(b.used, 40 << 10);
    scratch_free(p);
    cr_assert_eq(b.used, 0);
    void *again = scratch_malloc(40 << 10); /* what was given back fits again */
    cr_assert_not_null(again);
    scratch_free(again);
    scratch_leave(outer);
}

Test(base_scratch, without_a_budget_is_malloc_and_frees_never_go_below_zero)
{
    void *plain = scratch_malloc(5000); /* no budget: nothing counted */
    cr_assert_not_null(plain);
    struct scratch_budget b = {.limit = 1 << 20};
    struct scratch_budget *outer = scratch_enter(&b);
    cr_assert_null(outer);
    scratch_free(plain); /* a block counted in no budget */
    cr_assert_eq(b.used, 0);
    scratch_leave(outer);
    void *big = scratch_malloc(8 << 20); /* past b's limit, but b is left */
    cr_assert_not_null(big);
    scratch_free(big);
    cr_assert_eq(b.used, 0);
}

static void *other_thread(void *arg)
{
    struct scratch_budget *b = arg;
    struct scratch_budget *outer = scratch_enter(b);
    void *p = scratch_malloc(3000);
    scratch_leave(outer);
    return p;
}

Test(base_scratch, a_budget_is_one_threads)
{
    struct scratch_budget mine = {0}, theirs = {0};
    struct scratch_budget *outer = scratch_enter(&mine);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, other_thread, &theirs), 0);
    void *p;
    pthread_join(t, &p);
    cr_assert_eq(mine.used, 0, "another thread's block is not counted here");
    cr_assert_geq(theirs.used, 3000);
    scratch_leave(outer);
    scratch_free(p);
}
