/* test_base_scratch.c -- per-ask scratch counted against a budget: what is
 * held and its peak, the refusal past the limit (and the budget marked
 * exceeded), realloc's growth counted once, frees giving it back, a
 * budget per thread, no budget as plain malloc, and the memory of small
 * asks one after another given back to the system. */
#include "base/scratch.h"
#include "tests/kit/sanitizer.h"

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

/* What the giving back is measured by: glibc's arenas and the process's
 * RssAnon (ASan brings its own allocator and shadow memory). */
#if defined(__GLIBC__) && defined(__linux__) && !UNDER_ASAN
#include <stdio.h>
#include <stdlib.h>

static long rss_anon_kib(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "RssAnon: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

enum { SMALL_ASKS = 8 };

/* Eight asks on one thread, as a serve worker answers them: each takes a
 * block of 2 MiB and a bit more than the one before (so none fits where
 * an earlier one was), touches it, and frees it, every peak under
 * SCRATCH_TRIM_AFTER. Something the thread keeps is allocated after each
 * block (bigger than any freed block, so it comes from the arena's top,
 * and never touched, so it costs no resident memory of its own): the freed
 * blocks then lie in the arena's bins, between kept ones, where glibc
 * gives nothing back on its own. */
static void *small_asks(void *arg)
{
    void **kept = arg;
    for (int i = 0; i < SMALL_ASKS; i++) {
        struct scratch_budget b = {0};
        struct scratch_budget *outer = scratch_enter(&b);
        size_t n = ((size_t)2 << 20) + (size_t)i * (128 << 10);
        char *p = scratch_malloc(n);
        cr_assert_not_null(p);
        memset(p, 1, n);
        scratch_leave(outer);
        kept[i] = malloc(((size_t)3 << 20) + (size_t)i * (128 << 10));
        cr_assert_not_null(kept[i]);
        outer = scratch_enter(&b);
        scratch_free(p);
        scratch_leave(outer);
        cr_assert_lt(b.peak, SCRATCH_TRIM_AFTER);
        scratch_give_back(&b);
    }
    return NULL;
}

Test(base_scratch, small_asks_one_after_another_do_not_pile_up_resident_memory)
{
    scratch_process_setup();
    long rest = rss_anon_kib();
    cr_assert_gt(rest, 0);
    void *kept[SMALL_ASKS];
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, small_asks, kept), 0);
    pthread_join(t, NULL);
    long after = rss_anon_kib();
    for (int i = 0; i < SMALL_ASKS; i++)
        free(kept[i]);
    /* 8 blocks of 2 to 2.9 MiB, 19.5 MiB in all, were freed into the bins */
    cr_assert_leq(after, 16 << 10, "RssAnon %ld kB after the asks, %ld kB before", after,
                  rest);
}
#endif
