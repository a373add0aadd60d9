/* vc_acc.c -- a group's value counts while an ask folds them: rows per value
 * code, merged from the runs of many cells or rollup rows.
 *
 * The first add into an empty group takes the runs by reference when they
 * are shared (decoded block columns that stay alive while a group holds
 * them) and long enough to be worth it: a group fed by one rollup row (a bucket's or a span's value
 * counts, as a percentile per bucket reads) then costs one pass that checks
 * the runs ascend, and its answer walks the block's own arrays. A rollup's
 * list may come with its codes still encoded (struct store_lazy_runs): the
 * group then sums its rows only, and its codes are decoded when the answer picks
 * one, or whole by the caller before another list merges in. Its rows may
 * be encoded too (rows_pending): they are summed once the caller decodes
 * them for a merge, and a percentile that only picks reads them up to its
 * pick, its total being a count of the same rows (exec.rows_count). The next
 * few adds merge sorted lists. Past VC_MERGE_ADDS, codes go to a small hash
 * table. Once it holds VC_DENSE_AFTER distinct codes that fit in VC_WINDOW
 * consecutive codes, the group moves to a dense window of counters: the
 * merges that dominate percentile asks (a span's fares in cents, say) then
 * cost an array add per run instead of a hash probe, and come out already
 * in code order. Codes outside the window keep going to the hash. The
 * window is VC_WINDOW_PAGES pages of VC_PAGE counters, each made when a
 * code first falls in it: a group's codes crowd a part of the window (a
 * day's fares in a borough, 8,000 to 25,000 codes wide with their refunds
 * and outliers, most of them within a few thousand), and an ask holds every
 * group's window until its answer. Whole windows of 256 KiB were 88 MiB of
 * the median per New York day by borough over six months, zeroed and
 * faulted in at every ask.
 *
 * Rows may be negative while folding (delta blocks take rows away); the
 * runs handed out hold only values with rows left, and a lent list is
 * copied before any is dropped, never changed in place. Codes of every type
 * but text are ordered like their values (store.h), so the answer walks
 * them in code order. */
#include "engine/internal.h"

#include <stdlib.h>
#include <string.h>

/* VC_LEND_RUNS: a shorter list is copied. A group holding a block's arrays
 * keeps all of them alive until the answer, however few of its runs the
 * group took: a group per hour fed by one zone's cell would hold every
 * zone's runs. Rollup rows, the lists worth not copying, are longer. */
enum { VC_MERGE_ADDS = 4, VC_DENSE_AFTER = 256, VC_WINDOW = 1 << 15, VC_LEND_RUNS = 256 };
/* A window page: VC_PAGE counters (2 KiB), VC_WINDOW_PAGES of them. Smaller
 * pages fit a group's codes more closely but cost a longer page table and
 * more allocations; 256 codes is $2.56 of fares in cents. */
enum { VC_PAGE_BITS = 8, VC_PAGE = 1 << VC_PAGE_BITS, VC_WINDOW_PAGES = VC_WINDOW / VC_PAGE };

/* The counter of window position at (< VC_WINDOW), its page made when
 * missing; NULL when out of memory. */
static inline int64_t *window_slot(struct vc_acc *a, uint64_t at)
{
    int64_t **page = &a->win[at >> VC_PAGE_BITS];
    if (__builtin_expect(!*page, 0) && !(*page = scratch_calloc(VC_PAGE, sizeof **page)))
        return NULL;
    return *page + (at & (VC_PAGE - 1));
}

/* Frees the window's pages and its page table. */
static void window_free(struct vc_acc *a)
{
    for (uint32_t p = 0; a->win && p < VC_WINDOW_PAGES; p++)
        scratch_free(a->win[p]);
    scratch_free(a->win);
    a->win = NULL;
}

/* Adds rows to code's entry in the hash (a table of code -> rows, set up
 * on the first add). -1 when out of memory. */
static int hash_add(struct vc_acc *a, int64_t code, int64_t rows)
{
    if (!a->hash.slot_words)
        hashtab_init(&a->hash, 1, sizeof(int64_t));
    uint64_t key = (uint64_t)code;
    bool added;
    int64_t *r = hashtab_upsert(&a->hash, &key, hashtab_hash(&a->hash, &key), &added);
    if (!r)
        return -1;
    *r += rows;
    return 0;
}

/* Moves to a dense window when the hash's codes are close enough together;
 * otherwise never tries again. */
static int try_window(struct vc_acc *a)
{
    a->window_tried = true;
    int64_t min = INT64_MAX, max = INT64_MIN;
    uint32_t at = 0;
    for (uint64_t *slot; (slot = hashtab_next(&a->hash, &at));) {
        int64_t code = (int64_t)*hashtab_key_of(slot);
        min = code < min ? code : min;
        max = code > max ? code : max;
    }
    int64_t range;
    if (__builtin_sub_overflow(max, min, &range) || range >= VC_WINDOW / 2)
        return 0; /* sparse codes (timestamps, floats): the hash suits them */
    /* Room mostly above: value distributions are skewed to the right. */
    int64_t lo;
    if (__builtin_sub_overflow(min, (VC_WINDOW - range) / 8, &lo))
        return 0; /* codes near INT64_MIN */
    if (!(a->win = scratch_calloc(VC_WINDOW_PAGES, sizeof *a->win)))
        return -1;
    a->lo = lo;
    uint32_t kept = 0;
    at = 0;
    for (uint64_t *slot; (slot = hashtab_next(&a->hash, &at)); kept++) {
        int64_t *counter = window_slot(a, (uint64_t)((int64_t)*hashtab_key_of(slot) - lo));
        if (!counter)
            return -1; /* the hash still holds every code: vc_acc_free frees both */
        *counter += *(int64_t *)hashtab_value_of(&a->hash, slot);
    }
    hashtab_free(&a->hash);
    a->nwin = kept;
    return 0;
}

/* Drops the sorted list: frees it when owned, else lets go of the lent
 * block arrays. */
static void let_go(struct vc_acc *a)
{
    scratch_free(a->owned_codes);
    scratch_free(a->owned_rows);
    vc_shared_release(a->lent);
    a->owned_codes = a->owned_rows = NULL;
    a->sorted_codes = a->sorted_rows = NULL;
    a->lent = NULL;
    a->rows_pending = false;
}

/* Makes (codes, rows) the group's own sorted list. */
static void own(struct vc_acc *a, int64_t *codes, int64_t *rows, uint32_t n)
{
    let_go(a);
    a->owned_codes = codes;
    a->owned_rows = rows;
    a->sorted_codes = codes;
    a->sorted_rows = rows;
    a->nsorted = n;
}

/* Copies a lent list into one the group owns. */
static int copy_lent(struct vc_acc *a)
{
    size_t bytes = 8 * ((size_t)a->nsorted + 1);
    int64_t *oc = scratch_malloc(bytes), *orows = scratch_malloc(bytes);
    if (!oc || !orows) {
        scratch_free(oc);
        scratch_free(orows);
        return -1;
    }
    memcpy(oc, a->sorted_codes, 8 * (size_t)a->nsorted);
    memcpy(orows, a->sorted_rows, 8 * (size_t)a->nsorted);
    own(a, oc, orows, a->nsorted);
    return 0;
}

/* Adds the runs' rows to the total and notes a zero. */
static void take_rows(struct vc_acc *a, const int64_t *rows, int64_t n)
{
    int64_t total = 0;
    bool zero = false;
    for (int64_t i = 0; i < n; i++) {
        total += rows[i];
        zero |= rows[i] == 0;
    }
    a->total += total;
    a->zero_rows |= zero;
}

/* Validates runs before they are kept: codes strictly ascending, then
 * take_rows. 1 when they do not ascend. */
static int take_sorted(struct vc_acc *a, const int64_t *codes, const int64_t *rows, int64_t n)
{
    for (int64_t i = 1; i < n; i++)
        if (codes[i] <= codes[i - 1])
            return 1;
    take_rows(a, rows, n);
    return 0;
}

/* Merges the ascending runs into the sorted list (lent or owned). 1 when
 * they turn out not to ascend (a damaged block): the caller hashes them. */
static int merge_sorted(struct vc_acc *a, const int64_t *codes, const int64_t *rows, int64_t n)
{
    int rc = take_sorted(a, codes, rows, n);
    if (rc)
        return rc;
    size_t cap = (size_t)a->nsorted + (size_t)n + 1;
    int64_t *oc = scratch_malloc(8 * cap), *orows = scratch_malloc(8 * cap);
    if (!oc || !orows) {
        scratch_free(oc);
        scratch_free(orows);
        return -1;
    }
    const int64_t *sc = a->sorted_codes, *sr = a->sorted_rows;
    uint32_t i = 0, o = 0;
    int64_t j = 0;
    while (i < a->nsorted && j < n) {
        if (sc[i] < codes[j]) {
            oc[o] = sc[i];
            orows[o++] = sr[i++];
        } else if (codes[j] < sc[i]) {
            oc[o] = codes[j];
            orows[o++] = rows[j++];
        } else {
            oc[o] = codes[j];
            orows[o] = sr[i++] + rows[j++];
            a->zero_rows |= orows[o++] == 0; /* rows taken away again */
        }
    }
    for (; i < a->nsorted; i++, o++) {
        oc[o] = sc[i];
        orows[o] = sr[i];
    }
    for (; j < n; j++, o++) {
        oc[o] = codes[j];
        orows[o] = rows[j];
    }
    own(a, oc, orows, o);
    return 0;
}

/* Leaves the sorted list for the hash. */
static int unsort(struct vc_acc *a)
{
    for (uint32_t i = 0; i < a->nsorted; i++)
        if (hash_add(a, a->sorted_codes[i], a->sorted_rows[i]))
            return -1;
    let_go(a);
    a->nsorted = 0;
    return 0;
}

/* Counts the lent list's rows once they are decoded (vc_shared_fill). */
static void settle_rows(struct vc_acc *a)
{
    if (a->rows_pending && !(a->lent->lazy && a->lent->lazy->rows_pending)) {
        take_rows(a, a->sorted_rows, a->nsorted);
        a->rows_pending = false;
    }
}

bool vc_acc_lends(const struct vc_acc *a, int64_t n)
{
    return !a->hashed && a->adds < VC_MERGE_ADDS && a->nsorted == 0 && n >= VC_LEND_RUNS;
}

struct vc_shared *vc_acc_lazy(const struct vc_acc *a)
{
    return a->lent && a->lent->lazy ? a->lent : NULL;
}

int vc_acc_add_runs(struct vc_acc *a, struct vc_shared *shared, const int64_t *codes,
                    const int64_t *rows, int64_t n)
{
    if (n == 0)
        return 0;
    settle_rows(a);
    if (!a->hashed && a->adds < VC_MERGE_ADDS) {
        a->adds++;
        int rc;
        if (shared && vc_acc_lends(a, n)) {
            /* Lazy codes are not checked: the writer sorts them, and a
             * block that was damaged behind its checksum gives a wrong
             * value, never a read outside the list. Lazy rows are counted
             * when decoded: a group that lends only never needs them. */
            bool rows_pending = shared->lazy && shared->lazy->rows_pending;
            rc = shared->lazy ? (rows_pending ? 0 : (take_rows(a, rows, n), 0))
                              : take_sorted(a, codes, rows, n);
            if (rc == 0) {
                let_go(a);
                a->lent = shared;
                shared->refs++;
                a->sorted_codes = codes;
                a->sorted_rows = rows;
                a->nsorted = (uint32_t)n;
                a->rows_pending = rows_pending;
            }
        } else {
            rc = merge_sorted(a, codes, rows, n);
        }
        if (rc <= 0) /* else not ascending: the hash takes them, counted there */
            return rc;
    }
    if (!a->hashed) {
        a->hashed = true;
        if (unsort(a))
            return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        a->total += rows[i];
        if (a->win) {
            uint64_t at = (uint64_t)codes[i] - (uint64_t)a->lo;
            if (at < VC_WINDOW) {
                int64_t *counter = window_slot(a, at);
                if (!counter)
                    return -1;
                a->nwin += *counter == 0;
                *counter += rows[i];
                continue;
            }
        }
        if (hash_add(a, codes[i], rows[i]))
            return -1;
        if (!a->win && !a->window_tried && a->hash.count >= VC_DENSE_AFTER && try_window(a))
            return -1;
    }
    return 0;
}

void vc_acc_free(struct vc_acc *a)
{
    for (uint32_t i = 0; i < a->nsrcs; i++)
        vc_shared_release(a->srcs[i].shared);
    scratch_free(a->srcs);
    if (a->coll_codes)
        run_arena_give(a->arena, a->coll_codes, a->coll_cap);
    let_go(a);
    hashtab_free(&a->hash);
    window_free(a);
    memset(a, 0, sizeof *a);
}

struct vc_shared *vc_shared_new(int64_t *codes, int64_t *rows, uint32_t n,
                                struct store_lazy_runs *lazy)
{
    struct vc_shared *s = scratch_malloc(sizeof *s);
    if (!s)
        return NULL;
    *s = (struct vc_shared){.codes = codes, .rows = rows, .refs = 1, .n = n, .lazy = lazy};
    return s;
}

struct vc_shared *vc_shared_copy(const struct vc_shared *s, uint32_t at, uint32_t n)
{
    size_t bytes = 8 * ((size_t)n + 1);
    int64_t *codes = scratch_malloc(bytes), *rows = scratch_malloc(bytes);
    struct vc_shared *c = codes && rows ? vc_shared_new(codes, rows, n, NULL) : NULL;
    if (!c) {
        scratch_free(codes);
        scratch_free(rows);
        return NULL;
    }
    memcpy(codes, s->codes + at, 8 * (size_t)n);
    memcpy(rows, s->rows + at, 8 * (size_t)n);
    return c;
}

/* The list's running rows (vc_shared.cum), made once. -1 when out of
 * memory. */
static int vc_shared_cum(struct vc_shared *s)
{
    if (s->cum || s->n == 0)
        return 0;
    if (!(s->cum = scratch_malloc(8 * (size_t)s->n)))
        return -1;
    int64_t sum = 0;
    for (uint32_t i = 0; i < s->n; i++)
        s->cum[i] = sum += s->rows[i];
    return 0;
}

void vc_shared_release(struct vc_shared *s)
{
    if (s && --s->refs == 0) {
        if (s->held_runs)
            *s->held_runs -= s->n;
        scratch_free(s->codes);
        scratch_free(s->rows);
        scratch_free(s->lazy);
        scratch_free(s->cum);
        scratch_free(s);
    }
}

/* The hash and the window into one owned sorted list, zero rows left out. */
static int hash_to_sorted(struct vc_acc *a)
{
    uint32_t cap = a->hash.count + (a->win ? a->nwin : 0);
    int64_t *oc = scratch_malloc(8 * ((size_t)cap + 1)), *orows = scratch_malloc(8 * ((size_t)cap + 1));
    struct code_run *hashed = scratch_malloc(sizeof *hashed * (a->hash.count + 1));
    if (!oc || !orows || !hashed) {
        scratch_free(oc);
        scratch_free(orows);
        scratch_free(hashed);
        return -1;
    }
    uint32_t nh = 0, o = 0, h = 0, at = 0;
    for (uint64_t *slot; (slot = hashtab_next(&a->hash, &at));) {
        int64_t rows = *(int64_t *)hashtab_value_of(&a->hash, slot);
        if (rows != 0)
            hashed[nh++] = (struct code_run){(int64_t)*hashtab_key_of(slot), rows};
    }
    if (code_runs_merge(hashed, nh) < 0) { /* distinct codes: sorted only */
        scratch_free(oc);
        scratch_free(orows);
        scratch_free(hashed);
        return -1;
    }
    /* Hashed codes below the window, the window, those above. */
    for (; h < nh && a->win && hashed[h].code < a->lo; h++, o++) {
        oc[o] = hashed[h].code;
        orows[o] = hashed[h].rows;
    }
    for (uint32_t p = 0; a->win && p < VC_WINDOW_PAGES; p++) {
        const int64_t *page = a->win[p];
        for (uint32_t i = 0; page && i < VC_PAGE; i++)
            if (page[i] != 0) {
                oc[o] = a->lo + (int64_t)(p * VC_PAGE + i);
                orows[o++] = page[i];
            }
    }
    for (; h < nh; h++, o++) {
        oc[o] = hashed[h].code;
        orows[o] = hashed[h].rows;
    }
    scratch_free(hashed);
    int64_t total = a->total;
    struct vc_acc kept = *a; /* the sources and the collected runs stay the group's */
    a->srcs = NULL;
    a->nsrcs = 0;
    a->coll_codes = a->coll_rows = NULL;
    vc_acc_free(a);
    a->srcs = kept.srcs;
    a->nsrcs = kept.nsrcs;
    a->srcs_cap = kept.srcs_cap;
    a->coll_codes = kept.coll_codes;
    a->coll_rows = kept.coll_rows;
    a->ncoll = kept.ncoll;
    a->coll_cap = kept.coll_cap;
    a->arena = kept.arena;
    own(a, oc, orows, o);
    a->adds = VC_MERGE_ADDS;
    a->total = total;
    return 0;
}

int vc_acc_runs(struct vc_acc *a, struct vc_sorted *out)
{
    settle_rows(a);
    if (a->hashed && hash_to_sorted(a))
        return -1;
    /* Delta blocks take rows away: a value can end at zero rows, and then it
     * is not there (min, max and distinct counts must not see it). A lent
     * list is copied first: the block's arrays are shared. */
    if (a->zero_rows && a->lent && copy_lent(a))
        return -1;
    if (a->zero_rows) {
        uint32_t kept = 0;
        for (uint32_t i = 0; i < a->nsorted; i++)
            if (a->sorted_rows[i] != 0) {
                a->owned_codes[kept] = a->sorted_codes[i];
                a->owned_rows[kept++] = a->sorted_rows[i];
            }
        a->nsorted = kept;
        a->zero_rows = false;
    }
    *out = (struct vc_sorted){a->sorted_codes, a->sorted_rows, a->nsorted, a->total, NULL, 0, false};
    if (vc_acc_lazy(a)) { /* zero_rows is false: the list was not copied */
        out->lazy = a->lent;
        out->lazy_at = (uint32_t)(a->sorted_codes - a->lent->codes);
        out->rows_pending = a->rows_pending;
    }
    return 0;
}

/* The class of a region of cap runs (a power of two). */
static unsigned arena_class(uint64_t cap) { return (unsigned)__builtin_ctzll(cap); }

/* A region for cap runs (a power of two) from ar, or NULL when out of
 * memory. */
static void *arena_take(struct run_arena *ar, uint64_t cap)
{
    unsigned k = arena_class(cap);
    if (k < RUN_ARENA_CLASSES && ar->free[k]) {
        void *p = ar->free[k];
        memcpy(&ar->free[k], p, sizeof(void *));
        return p;
    }
    size_t bytes = 16 * (size_t)cap;
    while (ar->at < ar->nchunks) {
        if (ar->sizes[ar->at] - ar->used >= bytes) {
            void *p = ar->chunks[ar->at] + ar->used;
            ar->used += bytes;
            return p;
        }
        if (ar->at + 1 == ar->nchunks)
            break;
        ar->at++;
        ar->used = 0;
    }
    if (ar->nchunks == ar->cap) {
        uint32_t cap = ar->cap ? ar->cap * 2 : 8;
        char **chunks = scratch_realloc(ar->chunks, sizeof *chunks * cap);
        if (!chunks)
            return NULL;
        ar->chunks = chunks;
        size_t *sizes = scratch_realloc(ar->sizes, sizeof *sizes * cap);
        if (!sizes)
            return NULL;
        ar->sizes = sizes;
        ar->cap = cap;
    }
    size_t size = bytes > RUN_ARENA_CHUNK ? bytes : RUN_ARENA_CHUNK;
    char *chunk = scratch_malloc(size);
    if (!chunk)
        return NULL;
    ar->chunks[ar->nchunks] = chunk;
    ar->sizes[ar->nchunks++] = size;
    ar->at = ar->nchunks - 1;
    ar->used = bytes;
    return chunk;
}

void run_arena_give(struct run_arena *ar, void *region, uint64_t cap)
{
    unsigned k = arena_class(cap);
    if (k >= RUN_ARENA_CLASSES)
        return; /* left to the reset */
    memcpy(region, &ar->free[k], sizeof(void *));
    ar->free[k] = region;
}

void run_arena_reset(struct run_arena *ar)
{
    ar->at = 0;
    ar->used = 0;
    memset(ar->free, 0, sizeof ar->free);
}

void run_arena_free(struct run_arena *ar)
{
    for (uint32_t i = 0; i < ar->nchunks; i++)
        scratch_free(ar->chunks[i]);
    scratch_free(ar->chunks);
    scratch_free(ar->sizes);
    memset(ar, 0, sizeof *ar);
}

int vc_acc_collect(struct vc_acc *a, struct run_arena *ar, const int64_t *codes,
                   const int64_t *rows, uint32_t n)
{
    if (!a->merges && a->ncoll + (uint64_t)n > VC_COLLECT_MAX) {
        /* The runs so far into the merge, in any order (they go to the
         * hash), and every list from now on. */
        a->merges = true;
        if (a->ncoll && vc_acc_add_runs(a, NULL, a->coll_codes, a->coll_rows, a->ncoll))
            return -1;
        if (a->coll_codes)
            run_arena_give(a->arena, a->coll_codes, a->coll_cap);
        a->coll_codes = a->coll_rows = NULL;
        a->ncoll = a->coll_cap = 0;
    }
    if (a->merges)
        return vc_acc_add_runs(a, NULL, codes, rows, n);
    if (a->ncoll + (uint64_t)n > a->coll_cap) {
        /* The first list's size rounded up to a power of two (4 at
         * least), then doubling: most groups of an ask of a million groups
         * collect one cell of a few runs. */
        uint64_t cap = a->coll_cap ? a->coll_cap : 4;
        while (cap < a->ncoll + (uint64_t)n)
            cap *= 2;
        if (cap > UINT32_MAX)
            return -1;
        int64_t *c = arena_take(ar, cap); /* the codes, then the rows */
        if (!c)
            return -1;
        if (a->ncoll) {
            memcpy(c, a->coll_codes, 8 * (size_t)a->ncoll);
            memcpy(c + cap, a->coll_rows, 8 * (size_t)a->ncoll);
        }
        if (a->coll_codes)
            run_arena_give(ar, a->coll_codes, a->coll_cap);
        a->coll_codes = c;
        a->coll_rows = c + cap;
        a->coll_cap = (uint32_t)cap;
        a->arena = ar;
    }
    memcpy(a->coll_codes + a->ncoll, codes, 8 * (size_t)n);
    memcpy(a->coll_rows + a->ncoll, rows, 8 * (size_t)n);
    a->ncoll += n;
    a->coll_sorted = false;
    return 0;
}

int vc_acc_add_source(struct vc_acc *a, struct vc_shared *shared, uint32_t at, uint32_t n,
                      bool minus)
{
    if (a->nsrcs == a->srcs_cap) {
        uint32_t cap = a->srcs_cap ? a->srcs_cap * 2 : 8;
        struct vc_source *s = scratch_realloc(a->srcs, sizeof *s * cap);
        if (!s)
            return -1;
        a->srcs = s;
        a->srcs_cap = cap;
    }
    a->srcs[a->nsrcs++] = (struct vc_source){shared, at, n, minus};
    shared->refs++;
    return 0;
}

/* ---- Picking a row across lists ------------------------------------------------
 *
 * Each list is a sorted run of codes with its running rows (element j: the
 * rows of runs 0..j), read by position: a source in place in its block, the
 * merged list from arrays (a format_seek of 64 bits reads an int64 array).
 * F(v), the rows at or below v, is the sum over lists of the running rows
 * at the last code <= v; rows may be negative in a list (a delta block's),
 * but F is the group's, so it never falls. The pick is the smallest v with
 * F(v) >= row: bisected over the codes between the smallest and the
 * largest. Each list keeps the bracket [lo, hi] its count of codes <= v
 * lies in for every v still in play, so its binary searches narrow as the
 * bisection does. */

struct pick_list {
    struct format_seek codes, cum;
    uint32_t first;           /* element of run 0 */
    uint32_t lo, hi;          /* codes <= v lie in [lo, hi] for v in play */
    uint32_t at;              /* codes <= mid */
    int64_t base;             /* running rows before run 0 (a decoded list's
                                 cum runs from the list's start) */
    int64_t sign;             /* -1: a source taken away (vc_source.minus) */
};

static struct pick_list pick_list_of(struct format_seek codes, struct format_seek cum,
                                     uint32_t first, uint32_t n, int64_t base, int64_t sign)
{
    return (struct pick_list){.codes = codes, .cum = cum, .first = first, .hi = n, .base = base,
                              .sign = sign};
}

/* The number of codes <= v in [l->lo, l->hi] (codes below lo are <= v,
 * those from hi on above it). */
static inline uint32_t count_at_most(const struct pick_list *l, int64_t v)
{
    return format_seek_upper(&l->codes, l->first + l->lo, l->first + l->hi, v) - l->first;
}

static inline int64_t rows_through(const struct pick_list *l, uint32_t count)
{
    return count ? l->sign * (format_seek_get(&l->cum, l->first + count - 1) - l->base) : 0;
}

/* F(v) over the lists, each one's count of codes <= v into its at. */
static int64_t rows_at_most(struct pick_list *lists, uint32_t nl, int64_t v)
{
    int64_t f = 0;
    for (uint32_t i = 0; i < nl; i++) {
        lists[i].at = count_at_most(&lists[i], v);
        f += rows_through(&lists[i], lists[i].at);
    }
    return f;
}

/* A first bracket: the pick of a mixture lies between its parts' picks at
 * the same fraction, so each list's own pick (a binary search of its
 * running rows) bounds it, and hour medians of a day lie a few hundred
 * codes apart where the codes span a million (outliers). The bracket is
 * used only when F proves it (deltas and rows taken away void the rule);
 * it saves most of the bisection's steps. */
static void narrow(struct pick_list *lists, uint32_t nl, int64_t row, int64_t *vlo, int64_t *vhi)
{
    int64_t total = 0, lo = INT64_MAX, hi = INT64_MIN;
    for (uint32_t i = 0; i < nl; i++)
        total += rows_through(&lists[i], lists[i].hi);
    if (total <= 0 || *vlo >= *vhi)
        return;
    double fraction = (double)row / (double)total;
    for (uint32_t i = 0; i < nl; i++) {
        const struct pick_list *l = &lists[i];
        int64_t mine = rows_through(l, l->hi);
        if (mine <= 0)
            continue;
        int64_t want = (int64_t)(fraction * (double)mine);
        /* The first run whose running rows reach want (the last run if none
         * before it does). */
        uint32_t a = format_seek_upper(&l->cum, l->first, l->first + l->hi - 1, l->base + want - 1) -
                     l->first;
        int64_t c = format_seek_get(&l->codes, l->first + a);
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
    }
    if (lo > hi || lo <= *vlo || hi >= *vhi)
        return;
    /* F(lo - 1) < row <= F(hi): the pick lies in [lo, hi]; the lists'
     * brackets follow. */
    if (rows_at_most(lists, nl, hi) < row)
        return;
    for (uint32_t i = 0; i < nl; i++)
        lists[i].hi = lists[i].at;
    *vhi = hi;
    if (rows_at_most(lists, nl, lo - 1) >= row) { /* below lo after all */
        for (uint32_t i = 0; i < nl; i++)
            lists[i].hi = lists[i].at;
        *vhi = lo - 1;
        return;
    }
    for (uint32_t i = 0; i < nl; i++)
        lists[i].lo = lists[i].at;
    *vlo = lo;
    *vhi = hi;
}

/* ---- Selecting among collected runs ------------------------------------------------
 *
 * A group of many short lists (a bucket's cells of one key, each a few
 * runs) collects them unsorted; its pick is a weighted quickselect: a
 * pivot code splits the runs into those below, equal and above, and the
 * rows below and equal say which side holds the row. Rows may be negative
 * (a delta's), but every code's rows in all are not, so the rows below a
 * pivot are the group's rows below it, whichever runs carry them. */

static inline void swap_runs(int64_t *codes, int64_t *rows, uint32_t i, uint32_t j)
{
    int64_t c = codes[i], r = rows[i];
    codes[i] = codes[j];
    rows[i] = rows[j];
    codes[j] = c;
    rows[j] = r;
}

/* The smallest code whose rows at or below reach row (1-based) among the n
 * runs, reordering them; the largest code when row is past them all. */
static int64_t collect_select(int64_t *codes, int64_t *rows, uint32_t n, int64_t row)
{
    uint32_t lo = 0, hi = n; /* the runs in play; rows below lo are counted out */
    uint64_t seed = 0x9e3779b97f4a7c15u ^ n;
    int64_t largest = codes[0];
    for (uint32_t i = 1; i < n; i++)
        largest = codes[i] > largest ? codes[i] : largest;
    while (hi > lo) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        int64_t pivot = codes[lo + (uint32_t)((seed >> 33) % (hi - lo))];
        /* [lo, lt) below, [lt, i) equal, [gt, hi) above */
        uint32_t lt = lo, i = lo, gt = hi;
        int64_t below = 0, equal = 0;
        while (i < gt) {
            if (codes[i] < pivot) {
                below += rows[i];
                swap_runs(codes, rows, lt++, i++);
            } else if (codes[i] > pivot) {
                swap_runs(codes, rows, i, --gt);
            } else {
                equal += rows[i++];
            }
        }
        if (row <= below) {
            hi = lt;
        } else if (row <= below + equal) {
            return pivot;
        } else {
            row -= below + equal;
            lo = gt;
        }
    }
    return largest;
}

/* The collected runs sorted in place, each code once (coll_sorted): for a
 * pick across other lists too, which bisects them. A group's second pick
 * (percentile_cont reads two rows; a median beside a p99) finds them
 * sorted. -1 when out of memory. */
static int sort_collected(struct vc_acc *a)
{
    if (a->coll_sorted)
        return 0;
    struct code_run *runs = scratch_malloc(sizeof *runs * ((size_t)a->ncoll + 1));
    if (!runs)
        return -1;
    for (uint32_t i = 0; i < a->ncoll; i++)
        runs[i] = (struct code_run){a->coll_codes[i], a->coll_rows[i]};
    int64_t m = code_runs_merge(runs, a->ncoll);
    for (int64_t i = 0; i < m; i++) {
        a->coll_codes[i] = runs[i].code;
        a->coll_rows[i] = runs[i].rows;
    }
    scratch_free(runs);
    if (m < 0) /* out of memory; a sum past 64 bits cannot be: rows are rows */
        return -1;
    a->ncoll = (uint32_t)m;
    a->coll_sorted = true;
    return 0;
}

int vc_acc_select(struct vc_acc *a, const struct vc_sorted *merged, int64_t row,
                  int64_t *code)
{
    if (a->ncoll && a->nsrcs == 0 && merged->n == 0) {
        a->coll_sorted = false; /* the selection reorders them */
        *code = collect_select(a->coll_codes, a->coll_rows, a->ncoll, row);
        return 0;
    }
    if (a->ncoll) { /* folded into the merged list: one more list to bisect */
        int64_t *mc = NULL, *mr = NULL;
        if (sort_collected(a))
            return -1;
        const int64_t *cc = a->coll_codes, *cr = a->coll_rows;
        uint32_t cn = a->ncoll;
        struct vc_sorted both = *merged;
        if (merged->n) { /* merge the two sorted lists */
            mc = scratch_malloc(8 * ((size_t)cn + merged->n + 1));
            mr = scratch_malloc(8 * ((size_t)cn + merged->n + 1));
            if (!mc || !mr) {
                scratch_free(mc);
                scratch_free(mr);
                return -1;
            }
            uint32_t i = 0, j = 0, o = 0;
            while (i < cn || j < merged->n) {
                bool take_c = j == merged->n || (i < cn && cc[i] <= merged->codes[j]);
                bool same = i < cn && j < merged->n && cc[i] == merged->codes[j];
                mc[o] = take_c ? cc[i] : merged->codes[j];
                mr[o++] = (take_c ? cr[i++] : 0) + (same || !take_c ? merged->rows[j++] : 0);
            }
            both.codes = mc;
            both.rows = mr;
            both.n = o;
        } else {
            both.codes = cc;
            both.rows = cr;
            both.n = cn;
        }
        uint32_t ncoll = a->ncoll;
        a->ncoll = 0;
        int rc = vc_acc_select(a, &both, row, code);
        a->ncoll = ncoll;
        scratch_free(mc);
        scratch_free(mr);
        return rc;
    }
    uint32_t nl = 0;
    struct pick_list *lists = scratch_malloc(sizeof *lists * ((size_t)a->nsrcs + 1));
    int64_t *merged_cum = merged->n ? scratch_malloc(8 * (size_t)merged->n) : NULL;
    if (!lists || (merged->n && !merged_cum)) {
        scratch_free(lists);
        scratch_free(merged_cum);
        return -1;
    }
    int64_t vlo = INT64_MAX, vhi = INT64_MIN;
    for (uint32_t i = 0; i <= a->nsrcs; i++) {
        struct pick_list *l = &lists[nl];
        if (i < a->nsrcs && a->srcs[i].shared->seeks) {
            const struct vc_source *s = &a->srcs[i];
            *l = pick_list_of(s->shared->seek.codes, s->shared->seek.cum,
                              s->shared->seek_first + s->at, s->n, 0, s->minus ? -1 : 1);
        } else if (i < a->nsrcs) {
            const struct vc_source *s = &a->srcs[i];
            struct vc_shared *sh = s->shared;
            if (vc_shared_cum(sh)) {
                scratch_free(lists);
                scratch_free(merged_cum);
                return -1;
            }
            struct format_seek c = format_seek_array(sh->codes, sh->n);
            struct format_seek r = format_seek_array(sh->cum, sh->n);
            *l = pick_list_of(c, r, s->at, s->n, s->at ? sh->cum[s->at - 1] : 0,
                              s->minus ? -1 : 1);
        } else {
            if (!merged->n)
                break;
            int64_t sum = 0;
            for (uint32_t j = 0; j < merged->n; j++)
                merged_cum[j] = sum += merged->rows[j];
            struct format_seek c = format_seek_array(merged->codes, merged->n);
            struct format_seek r = format_seek_array(merged_cum, merged->n);
            *l = pick_list_of(c, r, 0, merged->n, 0, 1);
        }
        if (l->hi == 0)
            continue;
        int64_t first = format_seek_get(&l->codes, l->first);
        int64_t last = format_seek_get(&l->codes, l->first + l->hi - 1);
        vlo = first < vlo ? first : vlo;
        vhi = last > vhi ? last : vhi;
        nl++;
    }
    narrow(lists, nl, row, &vlo, &vhi);
    while (vlo < vhi) {
        int64_t mid = (int64_t)((uint64_t)vlo + ((uint64_t)vhi - (uint64_t)vlo) / 2);
        bool reached = rows_at_most(lists, nl, mid) >= row;
        for (uint32_t i = 0; i < nl; i++)
            *(reached ? &lists[i].hi : &lists[i].lo) = lists[i].at;
        if (reached)
            vhi = mid;
        else
            vlo = mid + 1;
    }
    *code = vlo;
    scratch_free(lists);
    scratch_free(merged_cum);
    return 0;
}
