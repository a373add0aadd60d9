/* vc_acc.c -- a group's value counts while an ask folds them: rows per value
 * code, merged from the runs of many cells or rollup rows.
 *
 * The first few adds merge sorted lists: a group fed by one rollup row (a
 * bucket's or a span's value counts) then costs a copy, and its answer walks
 * that list. Past VC_MERGE_ADDS, codes go to a small hash table. Once it
 * holds VC_DENSE_AFTER distinct
 * codes that fit in VC_WINDOW consecutive codes, the group moves to a dense
 * window of counters: the merges that dominate percentile asks (a span's
 * fares in cents, say) then cost an array add per run instead of a hash
 * probe, and come out already in code order. Rows may be negative while
 * folding (delta blocks take rows away); the runs handed out hold only
 * values with rows left. Codes outside the window keep
 * going to the hash. Codes of every type but text are ordered like their
 * values (store.h), so the answer walks them in code order. */
#include "serve/internal.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

enum { VC_MERGE_ADDS = 4, VC_DENSE_AFTER = 256, VC_WINDOW = 1 << 15 };

static int hash_grow(struct vc_acc *a)
{
    uint32_t cap = a->cap ? a->cap * 2 : 16;
    int64_t *codes = malloc(8 * (size_t)cap), *rows = calloc(cap, 8);
    if (!codes || !rows) {
        free(codes);
        free(rows);
        return -1;
    }
    for (uint32_t i = 0; i < cap; i++)
        codes[i] = STORE_NULL; /* NULL never has a value count: the empty slot */
    for (uint32_t i = 0; i < a->cap; i++)
        if (a->codes[i] != STORE_NULL) {
            uint32_t h = (uint32_t)XXH3_64bits(&a->codes[i], 8) & (cap - 1);
            while (codes[h] != STORE_NULL)
                h = (h + 1) & (cap - 1);
            codes[h] = a->codes[i];
            rows[h] = a->rows[i];
        }
    free(a->codes);
    free(a->rows);
    a->codes = codes;
    a->rows = rows;
    a->cap = cap;
    return 0;
}

static int hash_add(struct vc_acc *a, int64_t code, int64_t rows)
{
    if ((a->n + 1) * 2 > a->cap && hash_grow(a))
        return -1;
    uint32_t h = (uint32_t)XXH3_64bits(&code, 8) & (a->cap - 1);
    while (a->codes[h] != STORE_NULL && a->codes[h] != code)
        h = (h + 1) & (a->cap - 1);
    if (a->codes[h] == STORE_NULL) {
        a->codes[h] = code;
        a->n++;
    }
    a->rows[h] += rows;
    return 0;
}

/* Moves to a dense window when the hash's codes are close enough together;
 * otherwise never tries again. */
static int try_window(struct vc_acc *a)
{
    a->window_tried = true;
    int64_t min = INT64_MAX, max = INT64_MIN;
    for (uint32_t i = 0; i < a->cap; i++)
        if (a->codes[i] != STORE_NULL) {
            min = a->codes[i] < min ? a->codes[i] : min;
            max = a->codes[i] > max ? a->codes[i] : max;
        }
    int64_t range;
    if (__builtin_sub_overflow(max, min, &range) || range >= VC_WINDOW / 2)
        return 0; /* sparse codes (timestamps, floats): the hash suits them */
    /* Room mostly above: value distributions are skewed to the right. */
    int64_t lo;
    if (__builtin_sub_overflow(min, (VC_WINDOW - range) / 8, &lo))
        return 0; /* codes near INT64_MIN */
    int64_t *win = calloc(VC_WINDOW, sizeof *win);
    if (!win)
        return -1;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < a->cap; i++)
        if (a->codes[i] != STORE_NULL) {
            win[a->codes[i] - lo] += a->rows[i];
            kept++;
        }
    free(a->codes);
    free(a->rows);
    a->codes = a->rows = NULL;
    a->n = a->cap = 0;
    a->win = win;
    a->lo = lo;
    a->nwin = kept;
    return 0;
}

/* Merges the ascending runs into the sorted list. 1 when they turn out not
 * to ascend (a damaged block): the caller hashes them instead. */
static int merge_sorted(struct vc_acc *a, const int64_t *codes, const int64_t *rows, int64_t n)
{
    for (int64_t i = 1; i < n; i++)
        if (codes[i] <= codes[i - 1])
            return 1;
    struct vc_run *out = malloc(sizeof *out * ((size_t)a->nsorted + (size_t)n + 1));
    if (!out)
        return -1;
    uint32_t i = 0, o = 0;
    int64_t j = 0;
    while (i < a->nsorted || j < n) {
        if (j == n || (i < a->nsorted && a->sorted[i].code < codes[j]))
            out[o++] = a->sorted[i++];
        else if (i == a->nsorted || codes[j] < a->sorted[i].code) {
            out[o++] = (struct vc_run){codes[j], rows[j]};
            j++;
        } else {
            out[o++] = (struct vc_run){codes[j], a->sorted[i++].rows + rows[j]};
            j++;
        }
    }
    free(a->sorted);
    a->sorted = out;
    a->nsorted = o;
    return 0;
}

/* Leaves the sorted list for the hash. */
static int unsort(struct vc_acc *a)
{
    for (uint32_t i = 0; i < a->nsorted; i++)
        if (hash_add(a, a->sorted[i].code, a->sorted[i].rows))
            return -1;
    free(a->sorted);
    a->sorted = NULL;
    a->nsorted = 0;
    return 0;
}

int vc_acc_add_runs(struct vc_acc *a, const int64_t *codes, const int64_t *rows, int64_t n)
{
    if (n == 0)
        return 0;
    if (!a->hashed && a->adds < VC_MERGE_ADDS) {
        a->adds++;
        int rc = merge_sorted(a, codes, rows, n);
        if (rc <= 0)
            return rc;
    }
    if (!a->hashed) {
        a->hashed = true;
        if (unsort(a))
            return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        if (a->win) {
            uint64_t at = (uint64_t)codes[i] - (uint64_t)a->lo;
            if (at < VC_WINDOW) {
                a->nwin += a->win[at] == 0;
                a->win[at] += rows[i];
                continue;
            }
        }
        if (hash_add(a, codes[i], rows[i]))
            return -1;
        if (!a->win && !a->window_tried && a->n >= VC_DENSE_AFTER && try_window(a))
            return -1;
    }
    return 0;
}

void vc_acc_free(struct vc_acc *a)
{
    free(a->sorted);
    free(a->codes);
    free(a->rows);
    free(a->win);
    memset(a, 0, sizeof *a);
}

static int cmp_run(const void *p, const void *q)
{
    const struct vc_run *x = p, *y = q;
    return x->code < y->code ? -1 : x->code > y->code;
}

const struct vc_run *vc_acc_runs(struct vc_acc *a, uint32_t *n, int64_t *total)
{
    if (a->hashed) {
        uint32_t cap = a->n + (a->win ? a->nwin : 0);
        struct vc_run *out = malloc(sizeof *out * (cap + 1));
        struct vc_run *hashed = malloc(sizeof *hashed * (a->n + 1));
        if (!out || !hashed) {
            free(out);
            free(hashed);
            return NULL;
        }
        uint32_t nh = 0, o = 0, h = 0;
        for (uint32_t i = 0; i < a->cap; i++)
            if (a->codes[i] != STORE_NULL)
                hashed[nh++] = (struct vc_run){a->codes[i], a->rows[i]};
        qsort(hashed, nh, sizeof *hashed, cmp_run);
        /* Hashed codes below the window, the window, those above. */
        while (h < nh && a->win && hashed[h].code < a->lo)
            out[o++] = hashed[h++];
        for (uint32_t i = 0; a->win && i < VC_WINDOW; i++)
            if (a->win[i] != 0)
                out[o++] = (struct vc_run){a->lo + (int64_t)i, a->win[i]};
        while (h < nh)
            out[o++] = hashed[h++];
        free(hashed);
        struct vc_acc done = {.sorted = out, .nsorted = o, .adds = VC_MERGE_ADDS};
        vc_acc_free(a);
        *a = done;
    }
    /* Delta blocks take rows away: a value can end at zero rows, and then it
     * is not there (min, max and distinct counts must not see it). */
    uint32_t kept = 0;
    *total = 0;
    for (uint32_t i = 0; i < a->nsorted; i++)
        if (a->sorted[i].rows != 0) {
            *total += a->sorted[i].rows;
            a->sorted[kept++] = a->sorted[i];
        }
    *n = a->nsorted = kept;
    return a->sorted ? a->sorted : (const struct vc_run *)a; /* non-NULL when empty */
}
