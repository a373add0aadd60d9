/* runs.c -- lists of value-count runs, (code, rows), sorted and summed
 * (runs.h). */
#include "base/runs.h"
#include "base/hashtab.h"
#include "base/scratch.h"

#include <string.h>

/* By insertion when few, else by an LSD radix sort of the codes' offsets
 * from the smallest (fares in cents span a few thousand codes: one or two
 * passes). qsort and its comparator were a third of a commit's time
 * (perf). A pass costs its digits' counters as well as its runs, so a
 * short list takes narrower digits: with 11 bits for all, the load's
 * drains, whose lists are mostly tens of runs, spent more time clearing
 * and summing counters than moving runs. Both keep equal codes in their
 * order (runs.h). */
int code_runs_sort(struct code_run *runs, size_t n)
{
    if (n < 32) {
        for (size_t i = 1; i < n; i++) {
            struct code_run r = runs[i];
            size_t j = i;
            for (; j > 0 && runs[j - 1].code > r.code; j--)
                runs[j] = runs[j - 1];
            runs[j] = r;
        }
        return 0;
    }
    int64_t lo = runs[0].code, hi = lo;
    for (size_t i = 1; i < n; i++) {
        lo = runs[i].code < lo ? runs[i].code : lo;
        hi = runs[i].code > hi ? runs[i].code : hi;
    }
    uint64_t range = (uint64_t)hi - (uint64_t)lo;
    struct code_run *tmp = scratch_malloc(sizeof *tmp * n), *src = runs, *dst = tmp;
    if (!tmp)
        return -1;
    enum { MAX_BITS = 11 };
    int bits = 64 - __builtin_clzll((uint64_t)n); /* a digit of about n values */
    bits = bits > MAX_BITS ? MAX_BITS : bits;
    int range_bits = 64 - __builtin_clzll(range | 1);
    int passes = (range_bits + bits - 1) / bits;
    bits = (range_bits + passes - 1) / passes; /* as narrow as the passes allow */
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    for (int shift = 0; shift < 64 && (range >> shift) != 0; shift += bits) {
        size_t at[(1 << MAX_BITS) + 1];
        memset(at, 0, sizeof at[0] * (mask + 2));
        for (size_t i = 0; i < n; i++)
            at[(((uint64_t)src[i].code - (uint64_t)lo) >> shift & mask) + 1]++;
        for (uint64_t d = 0; d < mask + 1; d++)
            at[d + 1] += at[d];
        for (size_t i = 0; i < n; i++)
            dst[at[((uint64_t)src[i].code - (uint64_t)lo) >> shift & mask]++] = src[i];
        struct code_run *t = src;
        src = dst;
        dst = t;
    }
    if (src != runs)
        memcpy(runs, src, sizeof *runs * n);
    scratch_free(tmp);
    return 0;
}

/* Sums rows per code over runs[0..n) in place through a table of code ->
 * rows (base/hashtab.h); returns the distinct count (unordered), -1 when
 * out of memory, -2 on overflow. */
static int64_t sum_by_code(struct code_run *runs, size_t n)
{
    struct hashtab t;
    hashtab_init(&t, 1, sizeof(int64_t));
    if (hashtab_reserve(&t, 2048))
        return -1;
    for (size_t i = 0; i < n; i++) {
        const uint64_t *k = (const uint64_t *)&runs[i].code;
        bool added;
        int64_t *rows = hashtab_upsert(&t, k, hashtab_hash(&t, k), &added);
        if (!rows) {
            hashtab_free(&t);
            return -1;
        }
        if (__builtin_add_overflow(*rows, runs[i].rows, rows)) {
            hashtab_free(&t);
            return -2;
        }
    }
    size_t out = 0;
    uint32_t at = 0;
    for (uint64_t *slot; (slot = hashtab_next(&t, &at));)
        runs[out++] = (struct code_run){(int64_t)*hashtab_key_of(slot),
                                         *(int64_t *)hashtab_value_of(&t, slot)};
    hashtab_free(&t);
    return (int64_t)out;
}

int64_t code_runs_merge(struct code_run *runs, size_t n)
{
    if (n > 4096) {
        int64_t distinct = sum_by_code(runs, n);
        if (distinct < 0)
            return distinct;
        n = (size_t)distinct;
    }
    if (code_runs_sort(runs, n))
        return -1;
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out == 0 || runs[out - 1].code != runs[i].code)
            runs[out++] = runs[i];
        else if (__builtin_add_overflow(runs[out - 1].rows, runs[i].rows, &runs[out - 1].rows))
            return -2;
    }
    /* Deltas' runs may cancel out (store.h): no run of zero rows. */
    size_t kept = 0;
    for (size_t i = 0; i < out; i++)
        if (runs[i].rows != 0)
            runs[kept++] = runs[i];
    return (int64_t)kept;
}
