/* test_base_runs.c -- run lists merged: against a brute-force model, at
 * every size the merge chooses a way for (insertion under 32 runs, radix
 * passes above, a hash of codes past 4,096), with codes across the whole
 * int64 range, rows that cancel out, and a sum past 64 bits refused; and
 * runs sorted alone, stably, whatever their rows carry. */
#include "base/runs.h"

#include <criterion/criterion.h>
#include <stdlib.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int cmp_code(const void *a, const void *b)
{
    const struct code_run *x = a, *y = b;
    return x->code < y->code ? -1 : x->code > y->code;
}

/* The model: sorted by a comparison sort, summed, zeros dropped. */
static size_t model(struct code_run *r, size_t n)
{
    qsort(r, n, sizeof *r, cmp_code);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out && r[out - 1].code == r[i].code)
            r[out - 1].rows += r[i].rows;
        else
            r[out++] = r[i];
    }
    size_t kept = 0;
    for (size_t i = 0; i < out; i++)
        if (r[i].rows)
            r[kept++] = r[i];
    return kept;
}

static void check(size_t n, uint64_t span, bool cancel)
{
    struct code_run *a = malloc(sizeof *a * (n + 1)), *b = malloc(sizeof *b * (n + 1));
    cr_assert(a && b);
    for (size_t i = 0; i < n; i++) {
        int64_t code = span ? (int64_t)(next() % span) - (int64_t)(span / 2) : (int64_t)next();
        int64_t rows = cancel && i % 2 ? -a[i - 1].rows : (int64_t)(next() % 100) + 1;
        a[i] = (struct code_run){cancel && i % 2 ? a[i - 1].code : code, rows};
        b[i] = a[i];
    }
    int64_t got = code_runs_merge(a, n);
    size_t want = model(b, n);
    cr_assert_eq(got, (int64_t)want, "n %zu span %llu: %lld runs, the model %zu", n,
                 (unsigned long long)span, (long long)got, want);
    for (size_t i = 0; i < want; i++)
        cr_assert(a[i].code == b[i].code && a[i].rows == b[i].rows,
                  "n %zu span %llu: run %zu differs", n, (unsigned long long)span, i);
    free(a);
    free(b);
}

Test(base_runs, merges_as_the_model_at_every_size)
{
    size_t sizes[] = {0, 1, 2, 31, 32, 33, 500, 4096, 4097, 20000};
    uint64_t spans[] = {1, 3, 1000, 5000000, 0 /* the whole int64 range */};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t p = 0; p < sizeof spans / sizeof *spans; p++) {
            check(sizes[s], spans[p], false);
            check(sizes[s], spans[p], true);
        }
}

Test(base_runs, a_sum_past_64_bits_is_refused)
{
    for (size_t n = 2; n <= 5000; n += 4998) { /* the sorting way and the hashing one */
        struct code_run *r = calloc(n, sizeof *r);
        cr_assert(r);
        for (size_t i = 0; i < n; i++)
            r[i] = (struct code_run){i < 2 ? 0 : (int64_t)(i % 2), i < 2 ? INT64_MAX / 2 + 1 : 1};
        cr_assert_eq(code_runs_merge(r, n), -2, "%zu runs", n);
        free(r);
    }
}

/* code_runs_sort keeps equal codes in their order and moves rows with
 * their codes untouched: the store sorts cells by a packed order this way,
 * an index or a pointer in the rows, and a rollup family relies on equal
 * orders keeping the source's (its float sums add the same way every
 * time). Rows here are the runs' first positions. */
Test(base_runs, sorts_stably_carrying_rows)
{
    size_t sizes[] = {2, 31, 32, 33, 500, 20000};
    uint64_t spans[] = {1, 3, 1000, 5000000, 0 /* the whole int64 range */};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t p = 0; p < sizeof spans / sizeof *spans; p++) {
            size_t n = sizes[s];
            uint64_t span = spans[p];
            struct code_run *a = malloc(sizeof *a * n), *was = malloc(sizeof *was * n);
            cr_assert(a && was);
            for (size_t i = 0; i < n; i++)
                was[i] = a[i] = (struct code_run){
                    span ? (int64_t)(next() % span) - (int64_t)(span / 2) : (int64_t)next(),
                    (int64_t)i};
            cr_assert_eq(code_runs_sort(a, n), 0);
            for (size_t i = 0; i < n; i++)
                cr_assert(a[i].rows >= 0 && (size_t)a[i].rows < n && was[a[i].rows].code == a[i].code,
                          "n %zu span %llu: run %zu lost its rows", n, (unsigned long long)span, i);
            for (size_t i = 1; i < n; i++)
                cr_assert(a[i - 1].code < a[i].code ||
                              (a[i - 1].code == a[i].code && a[i - 1].rows < a[i].rows),
                          "n %zu span %llu: runs %zu and %zu out of order", n,
                          (unsigned long long)span, i - 1, i);
            free(a);
            free(was);
        }
}
