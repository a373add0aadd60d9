/* test_serve_vc_acc.c -- a group's value-count accumulator (serve/vc_acc.c)
 * against a brute-force model.
 *
 * Runs are added in batches the way folding cells does (each batch ascending
 * by code, as blocks hold them), through every state of the accumulator:
 * the merged sorted list, the hash, and the dense window with codes below,
 * inside and above it. The result must be every distinct code once, in code
 * order, with its summed rows; also when a batch is out of order (a damaged
 * block), which the accumulator takes through the hash. */
#include "serve/internal.h"

#include <criterion/criterion.h>
#include <stdlib.h>

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

static void check(struct vc_acc *a, struct model *m)
{
    uint32_t n;
    int64_t total, want_total = 0;
    const struct vc_run *runs = vc_acc_runs(a, &n, &total);
    cr_assert_not_null(runs);
    cr_assert_eq(n, m->n, "distinct codes: got %u, want %zu", n, m->n);
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0)
            cr_assert_gt(runs[i].code, runs[i - 1].code, "codes ascend (at %u)", i);
        size_t j = 0;
        while (j < m->n && m->codes[j] != runs[i].code)
            j++;
        cr_assert_lt(j, m->n, "code %lld was never added", (long long)runs[i].code);
        cr_assert_eq(runs[i].rows, m->rows[j], "rows of code %lld", (long long)runs[i].code);
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

static void run(int64_t (*pick)(void), int batches, size_t per_batch, bool some_shuffled)
{
    struct vc_acc a = {0};
    struct model m = {0};
    int64_t *codes = malloc(sizeof *codes * per_batch), *rows = malloc(sizeof *rows * per_batch);
    cr_assert(codes && rows);
    for (int b = 0; b < batches; b++) {
        size_t k = batch(pick, 1 + (size_t)rnd((int64_t)per_batch), some_shuffled && rnd(5) == 0,
                         codes, rows);
        cr_assert_eq(vc_acc_add_runs(&a, codes, rows, (int64_t)k), 0);
        for (size_t i = 0; i < k; i++)
            model_add(&m, codes[i], rows[i]);
    }
    check(&a, &m);
    vc_acc_free(&a);
    free(codes);
    free(rows);
    free(m.codes);
    free(m.rows);
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

Test(vc_acc, an_empty_accumulator_has_no_runs)
{
    struct vc_acc a = {0};
    cr_assert_eq(vc_acc_add_runs(&a, NULL, NULL, 0), 0);
    uint32_t n = 99;
    int64_t total = 99;
    cr_assert_not_null(vc_acc_runs(&a, &n, &total));
    cr_assert_eq(n, 0);
    cr_assert_eq(total, 0);
    vc_acc_free(&a);
}
