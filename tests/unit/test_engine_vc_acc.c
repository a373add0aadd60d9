/* test_engine_vc_acc.c -- a group's value-count accumulator (engine/vc_acc.c)
 * against a brute-force model.
 *
 * Runs are added in batches the way folding cells does (each batch ascending
 * by code, as blocks hold them), through every state of the accumulator:
 * the merged sorted list, the hash, and the dense window with codes below,
 * inside and above it. The result must be every distinct code once, in code
 * order, with its summed rows; also when a batch is out of order (a damaged
 * block), which the accumulator takes through the hash. Batches may take
 * rows away (delta blocks do): a code whose rows end at zero is not there,
 * and the total is the rows left. Half the batches come in shared arrays
 * (as decoded blocks do), which a group may hold by reference: each batch's
 * arrays are released right after its add, so under AddressSanitizer a
 * group that kept them without its own reference reads freed memory. */
#include "engine/internal.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct model {
    int64_t *codes, *rows;
    size_t n;
};

static uint64_t rng_state;

static int64_t rnd(int64_t n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int64_t)((rng_state >> 17) % (uint64_t)n);
}

static void model_add(struct model *m, int64_t code, int64_t rows)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->codes[i] == code) {
            m->rows[i] += rows;
            return;
        }
    m->codes = realloc(m->codes, sizeof *m->codes * (m->n + 1));
    m->rows = realloc(m->rows, sizeof *m->rows * (m->n + 1));
    cr_assert(m->codes && m->rows);
    m->codes[m->n] = code;
    m->rows[m->n++] = rows;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* A batch of n distinct codes, ascending unless shuffled, drawn by pick. */
static size_t batch(int64_t (*pick)(void), size_t n, bool shuffled, int64_t *codes, int64_t *rows)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t c = pick();
        bool dup = false;
        for (size_t j = 0; j < k && !dup; j++)
            dup = codes[j] == c;
        if (!dup)
            codes[k++] = c;
    }
    qsort(codes, k, sizeof *codes, cmp_i64);
    if (shuffled && k > 1) {
        int64_t t = codes[0];
        codes[0] = codes[k - 1];
        codes[k - 1] = t;
    }
    for (size_t i = 0; i < k; i++)
        rows[i] = 1 + rnd(rnd(4) == 0 ? 1000 : 3);
    return k;
}

/* Adds a batch, from shared arrays when shared (released after). */
static void add(struct vc_acc *a, const int64_t *codes, const int64_t *rows, size_t k, bool shared)
{
    if (!shared) {
        cr_assert_eq(vc_acc_add_runs(a, NULL, codes, rows, (int64_t)k), 0);
        return;
    }
    int64_t *c = malloc(8 * (k + 1)), *r = malloc(8 * (k + 1));
    cr_assert(c && r);
    memcpy(c, codes, 8 * k);
    memcpy(r, rows, 8 * k);
    struct vc_shared *sh = vc_shared_new(c, r, (uint32_t)k, NULL);
    cr_assert_not_null(sh);
    cr_assert_eq(vc_acc_add_runs(a, sh, c, r, (int64_t)k), 0);
    vc_shared_release(sh);
}

static void check(struct vc_acc *a, struct model *m)
{
    struct vc_sorted runs;
    cr_assert_eq(vc_acc_runs(a, &runs), 0);
    uint32_t n = runs.n;
    int64_t total = runs.total, want_total = 0;
    size_t want_n = 0;
    for (size_t j = 0; j < m->n; j++)
        want_n += m->rows[j] != 0;
    cr_assert_eq(n, want_n, "distinct codes: got %u, want %zu", n, want_n);
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0)
            cr_assert_gt(runs.codes[i], runs.codes[i - 1], "codes ascend (at %u)", i);
        size_t j = 0;
        while (j < m->n && m->codes[j] != runs.codes[i])
            j++;
        cr_assert_lt(j, m->n, "code %lld was never added", (long long)runs.codes[i]);
        cr_assert_eq(runs.rows[i], m->rows[j], "rows of code %lld", (long long)runs.codes[i]);
        want_total += m->rows[j];
    }
    cr_assert_eq(total, want_total);
}

/* Fares in cents: mostly 0..6000, some far outliers both ways. */
static int64_t pick_fare(void)
{
    switch (rnd(20)) {
    case 0: return -rnd(500000);
    case 1: return 100000 + rnd(1000000);
    default: return rnd(6000);
    }
}

/* Timestamps in µs: too sparse for a window. */
static int64_t pick_time(void) { return 1704067200000000LL + rnd(86400000000LL) * 1000; }

/* The extremes of int64 (but INT64_MIN, which is NULL and never counted). */
static int64_t pick_extreme(void)
{
    switch (rnd(4)) {
    case 0: return INT64_MIN + 1 + rnd(3);
    case 1: return INT64_MAX - rnd(3);
    default: return rnd(40) - 20;
    }
}

/* Adds batches as run() does; with take_away, every other batch then takes
 * rows away again: some codes' rows exactly (cancelling them), others' in
 * part, so every state meets negative rows and codes that vanish. */
static void run_taking(int64_t (*pick)(void), int batches, size_t per_batch, bool some_shuffled,
                       bool take_away)
{
    struct vc_acc a = {0};
    struct model m = {0};
    int64_t *codes = malloc(sizeof *codes * per_batch), *rows = malloc(sizeof *rows * per_batch);
    cr_assert(codes && rows);
    for (int b = 0; b < batches; b++) {
        size_t k = batch(pick, 1 + (size_t)rnd((int64_t)per_batch), some_shuffled && rnd(5) == 0,
                         codes, rows);
        add(&a, codes, rows, k, rnd(2));
        for (size_t i = 0; i < k; i++)
            model_add(&m, codes[i], rows[i]);
        if (take_away && b % 2 == 1) {
            for (size_t i = 0; i < k; i++)
                rows[i] = rnd(2) ? -rows[i] : -1 - rnd(2);
            add(&a, codes, rows, k, rnd(2));
            for (size_t i = 0; i < k; i++)
                model_add(&m, codes[i], rows[i]);
        }
    }
    check(&a, &m);
    vc_acc_free(&a);
    free(codes);
    free(rows);
    free(m.codes);
    free(m.rows);
}

static void run(int64_t (*pick)(void), int batches, size_t per_batch, bool some_shuffled)
{
    run_taking(pick, batches, per_batch, some_shuffled, false);
}

Test(vc_acc, one_batch_is_kept_as_it_came)
{
    rng_state = 1;
    for (int i = 0; i < 50; i++)
        run(pick_fare, 1, 3000, false);
}

Test(vc_acc, a_few_batches_merge_as_sorted_lists)
{
    rng_state = 2;
    for (int i = 0; i < 50; i++)
        run(pick_fare, 1 + (int)rnd(4), 500, false);
}

Test(vc_acc, many_batches_go_through_the_hash_and_the_window)
{
    rng_state = 3;
    for (int i = 0; i < 20; i++)
        run(pick_fare, 50 + (int)rnd(200), 200, false);
}

Test(vc_acc, sparse_codes_stay_in_the_hash)
{
    rng_state = 4;
    for (int i = 0; i < 20; i++)
        run(pick_time, 50 + (int)rnd(100), 100, false);
}

Test(vc_acc, extreme_codes_never_overflow_the_window)
{
    rng_state = 5;
    for (int i = 0; i < 50; i++)
        run(pick_extreme, 1 + (int)rnd(300), 30, false);
}

Test(vc_acc, batches_out_of_order_are_still_counted)
{
    rng_state = 6;
    for (int i = 0; i < 50; i++)
        run(pick_fare, 1 + (int)rnd(60), 300, true);
}

Test(vc_acc, rows_taken_away_leave_only_codes_with_rows)
{
    rng_state = 7;
    for (int i = 0; i < 50; i++) /* sorted lists: two batches, then four */
        run_taking(pick_fare, 2 + 2 * (int)rnd(2), 400, false, true);
    for (int i = 0; i < 20; i++) /* the hash and the window */
        run_taking(pick_fare, 50 + (int)rnd(100), 200, false, true);
    for (int i = 0; i < 20; i++)
        run_taking(pick_time, 20 + (int)rnd(50), 100, true, true);
}

Test(vc_acc, a_batch_that_cancels_a_single_one_leaves_nothing)
{
    /* Long enough that the first, shared, batch is held by reference. */
    enum { N = 300 };
    int64_t codes[N], plus[N], minus[N];
    for (int i = 0; i < N; i++) {
        codes[i] = 5 + 3 * i;
        plus[i] = 1 + i % 4;
        minus[i] = -plus[i];
    }
    struct vc_acc a = {0};
    for (int shared = 0; shared < 2; shared++) {
        add(&a, codes, plus, N, shared);
        add(&a, codes, minus, N, false);
        struct vc_sorted runs = {.n = 99, .total = 99};
        cr_assert_eq(vc_acc_runs(&a, &runs), 0);
        cr_assert_eq(runs.n, 0);
        cr_assert_eq(runs.total, 0);
        vc_acc_free(&a);
    }
}

Test(vc_acc, a_held_block_is_never_changed)
{
    /* A run of zero rows in a lent list (long enough to be lent): the
     * answer leaves it out, the block's arrays (which other groups may
     * hold) stay as they were. */
    enum { N = 300 };
    int64_t *c = malloc(N * 8), *r = malloc(N * 8);
    cr_assert(c && r);
    for (int i = 0; i < N; i++) {
        c[i] = 4 + 2 * i;
        r[i] = i == 1 ? 0 : 1 + i % 3;
    }
    int64_t want_total = 0;
    for (int i = 0; i < N; i++)
        want_total += r[i];
    struct vc_shared *sh = vc_shared_new(c, r, N, NULL);
    cr_assert_not_null(sh);
    struct vc_acc a = {0}, b = {0};
    cr_assert_eq(vc_acc_add_runs(&a, sh, c, r, N), 0);
    cr_assert_eq(vc_acc_add_runs(&b, sh, c, r, N), 0);
    cr_assert_eq(sh->refs, 3, "both groups hold the block");
    vc_shared_release(sh);
    struct vc_sorted runs;
    cr_assert_eq(vc_acc_runs(&a, &runs), 0);
    cr_assert_eq(runs.n, N - 1);
    cr_assert_eq(runs.codes[1], 8);
    cr_assert_eq(runs.total, want_total);
    cr_assert_eq(c[1], 6, "the shared codes were compacted in place"); /* b holds them */
    cr_assert_eq(r[1], 0);
    cr_assert_eq(vc_acc_runs(&b, &runs), 0); /* lets go of them: the last holder */
    cr_assert_eq(runs.n, N - 1);
    vc_acc_free(&a);
    vc_acc_free(&b);
}

Test(vc_acc, a_short_list_is_copied_not_held)
{
    int64_t *c = malloc(3 * 8), *r = malloc(3 * 8);
    cr_assert(c && r);
    memcpy(c, (int64_t[]){4, 6, 8}, 3 * 8);
    memcpy(r, (int64_t[]){3, 1, 2}, 3 * 8);
    struct vc_shared *sh = vc_shared_new(c, r, 3, NULL);
    struct vc_acc a = {0};
    cr_assert_eq(vc_acc_add_runs(&a, sh, c, r, 3), 0);
    cr_assert_eq(sh->refs, 1);
    vc_shared_release(sh); /* frees the arrays: the group must not need them */
    struct vc_sorted runs;
    cr_assert_eq(vc_acc_runs(&a, &runs), 0);
    cr_assert_eq(runs.n, 3);
    cr_assert_eq(runs.codes[2], 8);
    cr_assert_eq(runs.total, 6);
    vc_acc_free(&a);
}

/* A group's window makes only the pages its codes reach: codes within a
 * few hundred of each other, as a day's fares mostly are, hold a few KiB,
 * not the whole window's 32,768 counters (256 KiB), which an ask would
 * hold for every such group until its answer. */
Test(vc_acc, a_window_holds_the_pages_its_codes_reach)
{
    struct scratch_budget budget = {0};
    struct scratch_budget *outer = scratch_enter(&budget);
    struct vc_acc a = {0};
    struct model m = {0};
    int64_t codes[4], rows[4] = {1, 2, 3, 4};
    for (int b = 0; b < 300; b++) { /* past the hash's 256 codes: the window */
        for (int i = 0; i < 4; i++)
            codes[i] = 1000 + 4 * b + i;
        cr_assert_eq(vc_acc_add_runs(&a, NULL, codes, rows, 4), 0);
        for (int i = 0; i < 4; i++)
            model_add(&m, codes[i], rows[i]);
    }
    cr_assert_not_null(a.win, "1,200 codes 1,200 apart moved to the window");
    size_t held = budget.used;
    check(&a, &m);
    vc_acc_free(&a);
    scratch_leave(outer);
    cr_assert_lt(held, 64 << 10, "the group held %zu bytes", held);
    free(m.codes);
    free(m.rows);
}

/* A copied list is the slice asked for and outlives the list it came from. */
Test(vc_acc, a_copied_list_is_its_slice_alone)
{
    int64_t *c = malloc(5 * 8), *r = malloc(5 * 8);
    cr_assert(c && r);
    memcpy(c, (int64_t[]){1, 4, 6, 8, 9}, 5 * 8);
    memcpy(r, (int64_t[]){7, 3, 1, 2, 5}, 5 * 8);
    struct vc_shared *sh = vc_shared_new(c, r, 5, NULL);
    cr_assert_not_null(sh);
    struct vc_shared *copy = vc_shared_copy(sh, 1, 3);
    cr_assert_not_null(copy);
    vc_shared_release(sh);
    cr_assert_eq(copy->n, 3);
    cr_assert_eq(copy->refs, 1);
    cr_assert_arr_eq(copy->codes, ((int64_t[]){4, 6, 8}), 3 * 8);
    cr_assert_arr_eq(copy->rows, ((int64_t[]){3, 1, 2}), 3 * 8);
    struct vc_acc a = {0};
    cr_assert_eq(vc_acc_add_source(&a, copy, 0, 3, false), 0);
    vc_shared_release(copy); /* the group's reference keeps it */
    struct vc_sorted merged;
    cr_assert_eq(vc_acc_runs(&a, &merged), 0);
    int64_t code;
    cr_assert_eq(vc_acc_select(&a, &merged, 5, &code), 0);
    cr_assert_eq(code, 8, "the fifth of 3 + 1 + 2 rows");
    cr_assert_eq(vc_acc_select(&a, &merged, 4, &code), 0);
    cr_assert_eq(code, 6);
    vc_acc_free(&a);
}

Test(vc_acc, an_empty_accumulator_has_no_runs)
{
    struct vc_acc a = {0};
    cr_assert_eq(vc_acc_add_runs(&a, NULL, NULL, NULL, 0), 0);
    struct vc_sorted runs = {.n = 99, .total = 99};
    cr_assert_eq(vc_acc_runs(&a, &runs), 0);
    cr_assert_eq(runs.n, 0);
    cr_assert_eq(runs.total, 0);
    vc_acc_free(&a);
}

/* ---- Picking across sources (vc_acc_select) ------------------------------------
 *
 * A group that keeps rollup rows by position picks a row across them and
 * whatever it merged, without merging: every row of the brute-force model
 * must come out as the code the sorted multiset holds there. Lists come as
 * sources (codes and running rows read by position, here from int64
 * arrays, a format_seek of 64 bits) and as merged batches; some sources are
 * deltas that take rows away from an earlier one, so a list's running rows
 * may fall and a code may end at zero rows. */

/* The model's codes in order, each with its rows. */
static void qsort_pairs(struct model *m)
{
    struct code_run *r = malloc(sizeof *r * (m->n + 1));
    cr_assert(r);
    for (size_t i = 0; i < m->n; i++)
        r[i] = (struct code_run){m->codes[i], m->rows[i]};
    qsort(r, m->n, sizeof *r, cmp_i64); /* by code: a run starts with it */
    for (size_t i = 0; i < m->n; i++) {
        m->codes[i] = r[i].code;
        m->rows[i] = r[i].rows;
    }
    free(r);
}

/* A source over n runs: its codes and running rows in a vc_shared (which
 * frees them), one reference, the caller's. */
static struct vc_shared *source_of(const int64_t *codes, const int64_t *rows, size_t n)
{
    int64_t *c = malloc(8 * (n + 1)), *cum = malloc(8 * (n + 1)), sum = 0;
    cr_assert(c && cum);
    for (size_t i = 0; i < n; i++) {
        c[i] = codes[i];
        cum[i] = sum += rows[i];
    }
    struct vc_shared *s = vc_shared_new(c, cum, (uint32_t)n, NULL);
    cr_assert(s);
    s->seeks = true;
    s->seek.codes = format_seek_array(c, (uint32_t)n);
    s->seek.cum = format_seek_array(cum, (uint32_t)n);
    return s;
}

/* A cell's runs as a decoded list that does not seek: the k runs lie at
 * *at in a list with other cells' runs before and after them (which the
 * source must not count), and the pick makes the running rows itself
 * (vc_shared.cum). */
static struct vc_shared *decoded_source_of(const int64_t *codes, const int64_t *rows, size_t k,
                                           uint32_t *at)
{
    size_t before = (size_t)rnd(40), after = (size_t)rnd(40), n = before + k + after;
    int64_t *c = malloc(8 * (n + 1)), *r = malloc(8 * (n + 1));
    cr_assert(c && r);
    for (size_t i = 0; i < n; i++) {
        bool mine = i >= before && i < before + k;
        c[i] = mine ? codes[i - before] : (int64_t)rnd(1000);
        r[i] = mine ? rows[i - before] : 1 + (int64_t)rnd(7);
    }
    struct vc_shared *s = vc_shared_new(c, r, (uint32_t)n, NULL);
    cr_assert(s);
    *at = (uint32_t)before;
    return s;
}

/* A delta after a list of k runs: some of its codes with rows taken away
 * (all or some of them), into codes and rows, and into the model. */
static size_t delta_of(int64_t *codes, int64_t *rows, size_t k, struct model *m)
{
    size_t d = 0;
    for (size_t i = 0; i < k; i++)
        if (rnd(3) == 0) {
            codes[d] = codes[i];
            rows[d] = -(rnd(2) ? rows[i] : 1 + rnd(rows[i]));
            model_add(m, codes[d], rows[d]);
            d++;
        }
    return d;
}

/* nsources sources (in place or decoded), then nmerged lists merged or
 * collected: collect 0 none, 1 every one, 2 each by a coin. */
static void check_picks(int nsources, int nmerged, int64_t range, bool deltas, int collect)
{
    struct vc_acc a = {0};
    struct run_arena arena = {0};
    struct model m = {0};
    int64_t codes[600], rows[600];
    for (int s = 0; s < nsources + nmerged; s++) {
        size_t n = (size_t)rnd(300), k = 0;
        int64_t c = rnd(range / 4 + 1) - range / 8; /* negative codes too */
        for (size_t i = 0; i < n; i++) {
            c += 1 + rnd(range / 50 + 1);
            codes[k] = c;
            rows[k++] = 1 + rnd(rnd(8) ? 5 : 4000);
        }
        for (size_t i = 0; i < k; i++)
            model_add(&m, codes[i], rows[i]);
        if (s < nsources) {
            /* A source, in place or decoded, and maybe a delta after it
             * taking some rows away. */
            uint32_t at = 0;
            struct vc_shared *sh = rnd(2) ? source_of(codes, rows, k)
                                          : decoded_source_of(codes, rows, k, &at);
            cr_assert_eq(vc_acc_add_source(&a, sh, at, (uint32_t)k, false), 0);
            vc_shared_release(sh);
            if (deltas && k && rnd(2)) {
                size_t d = delta_of(codes, rows, k, &m);
                at = 0;
                sh = rnd(2) ? source_of(codes, rows, d) : decoded_source_of(codes, rows, d, &at);
                cr_assert_eq(vc_acc_add_source(&a, sh, at, (uint32_t)d, false), 0);
                vc_shared_release(sh);
            }
        } else if (collect == 1 || (collect == 2 && rnd(2))) {
            /* Collected: in any order, and perhaps a delta's runs after. */
            for (size_t i = k; i > 1; i--) {
                size_t j = (size_t)rnd((int64_t)i);
                int64_t c2 = codes[i - 1], r2 = rows[i - 1];
                codes[i - 1] = codes[j];
                rows[i - 1] = rows[j];
                codes[j] = c2;
                rows[j] = r2;
            }
            cr_assert_eq(vc_acc_collect(&a, &arena, codes, rows, (uint32_t)k), 0);
            if (deltas && k && rnd(2)) {
                size_t d = delta_of(codes, rows, k, &m);
                cr_assert_eq(vc_acc_collect(&a, &arena, codes, rows, (uint32_t)d), 0);
            }
        } else {
            cr_assert_eq(vc_acc_add_runs(&a, NULL, codes, rows, (int64_t)k), 0);
        }
    }
    qsort_pairs(&m);
    int64_t total = 0;
    for (size_t i = 0; i < m.n; i++)
        total += m.rows[i];
    struct vc_sorted merged;
    cr_assert_eq(vc_acc_runs(&a, &merged), 0);
    size_t at = 0;
    int64_t below = 0; /* rows of the model's codes before at */
    for (int64_t row = 1; row <= total; row += 1 + rnd(total / 200 + 1)) {
        while (below + m.rows[at] < row)
            below += m.rows[at++];
        int64_t code;
        cr_assert_eq(vc_acc_select(&a, &merged, row, &code), 0);
        cr_assert_eq(code, m.codes[at], "row %" PRId64 " of %" PRId64 ": picked %" PRId64
                     ", the multiset holds %" PRId64, row, total, code, m.codes[at]);
    }
    if (total > 0) { /* past the end: the largest code with rows */
        int64_t code;
        size_t last = m.n;
        while (last > 0 && m.rows[last - 1] == 0)
            last--;
        cr_assert_eq(vc_acc_select(&a, &merged, total + 5, &code), 0);
        cr_assert_geq(code, m.codes[last - 1]);
    }
    vc_acc_free(&a);
    run_arena_free(&arena);
    free(m.codes);
    free(m.rows);
}

Test(vc_acc, a_pick_across_sources_equals_the_sorted_multiset)
{
    rng_state = 77;
    for (int round = 0; round < 40; round++)
        check_picks(1 + (int)rnd(30), 0, 1 + rnd(rnd(2) ? 100000 : 1000), false, 0);
}

Test(vc_acc, a_pick_across_sources_and_merged_runs_with_deltas)
{
    rng_state = 78;
    for (int round = 0; round < 40; round++)
        check_picks(1 + (int)rnd(20), (int)rnd(6), 1 + rnd(rnd(2) ? 100000 : 1000), true, 0);
}

Test(vc_acc, a_pick_among_collected_runs_equals_the_sorted_multiset)
{
    rng_state = 79;
    for (int round = 0; round < 60; round++) /* collected alone: the selection */
        check_picks(0, 1 + (int)rnd(30), 1 + rnd(rnd(2) ? 100000 : 1000), rnd(2), 1);
}

Test(vc_acc, a_pick_across_sources_collected_and_merged_runs_with_deltas)
{
    rng_state = 80;
    for (int round = 0; round < 40; round++)
        check_picks((int)rnd(10), 1 + (int)rnd(10), 1 + rnd(rnd(2) ? 100000 : 1000), true, 2);
}

Test(vc_acc, codes_far_apart_are_bisected_without_overflow)
{
    int64_t codes[] = {INT64_MIN + 1, -5, 0, INT64_MAX - 1}, rows[] = {2, 1, 3, 4};
    struct vc_acc a = {0};
    struct vc_shared *sh = source_of(codes, rows, 4);
    cr_assert_eq(vc_acc_add_source(&a, sh, 0, 4, false), 0);
    vc_shared_release(sh);
    struct vc_sorted merged;
    cr_assert_eq(vc_acc_runs(&a, &merged), 0);
    int64_t want[] = {INT64_MIN + 1, INT64_MIN + 1, -5, 0, 0, 0, INT64_MAX - 1, INT64_MAX - 1,
                      INT64_MAX - 1, INT64_MAX - 1};
    for (int row = 1; row <= 10; row++) {
        int64_t code;
        cr_assert_eq(vc_acc_select(&a, &merged, row, &code), 0);
        cr_assert_eq(code, want[row - 1], "row %d", row);
    }
    vc_acc_free(&a);
}

/* Regions a group gives back (growing, merging, freed) are taken again by
 * the next groups: an ask whose groups never settle (calendar days) holds
 * about the runs it collects, not every region its groups grew out of. */
Test(vc_acc, the_run_arena_takes_back_the_regions_given_back)
{
    struct run_arena arena = {0};
    int64_t codes[10], rows[10];
    for (int i = 0; i < 10; i++) {
        codes[i] = 1000 - i;
        rows[i] = 1 + i;
    }
    for (int g = 0; g < 2000; g++) {
        struct vc_acc a = {0};
        for (int batch = 0; batch < 10; batch++) /* 100 runs: regions of 16 to 128 runs */
            cr_assert_eq(vc_acc_collect(&a, &arena, codes, rows, 10), 0);
        cr_assert_eq(a.ncoll, 100);
        vc_acc_free(&a);
    }
    cr_assert_eq(arena.nchunks, 1, "%u chunks for one group's runs at a time", arena.nchunks);
    run_arena_free(&arena);
}
