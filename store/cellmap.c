/* cellmap.c -- one segment's cells decoded in memory, for the writer.
 *
 * The writer adds staged cells here (cellmap_add_cell) and encodes the
 * segment back to a block at commit. Cells live in an open-addressing hash
 * table keyed by (bucket index, cell keys). Each cell is one piece of a
 * slab: the struct, then its keys, counts, sums and value-count run
 * headers. Invariant: a cell's runs [0, sorted) are sorted by code and hold
 * no zero-row run; a cell with zero rows holds nothing else (checked at
 * encode, where it is dropped). Runs [sorted, n) are whole cells' runs
 * appended by cellmap_add_cell (runs_merge), merged in (settle_runs)
 * before anything reads the cell's runs. */
#include "store/internal.h"

#include <stdalign.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

/* ---- Cells ---------------------------------------------------------------- */


/* Cells' start and spacing in their slab: their sums' __int128s align to 16. */
enum { CELL_ALIGN = 16 };

/* The parts of a view's cells (struct cell_layout): the keys right after
 * the header, then counts, sums, runs. */
static struct cell_layout layout_of(const struct sql_view *v)
{
    struct cell_layout l;
    l.counts = sizeof(struct cell) + 8 * (size_t)v->ncell_keys;
    l.sums = align_up(l.counts + 8 * (size_t)v->ncounts, alignof(struct store_sum));
    l.vcs = align_up(l.sums + sizeof(struct store_sum) * (size_t)v->nsums, 8);
    l.total = l.vcs + sizeof(struct vc_runs) * (size_t)v->nvalue_counts;
    l.stride = align_up(l.total, CELL_ALIGN);
    return l;
}

/* A cell's parts. They take a const cell, as strchr takes a const string:
 * whether the parts may be written is the caller's to know. */
static inline int64_t *cell_keys(const struct cell *c) { return (int64_t *)(uintptr_t)(c + 1); }

static inline int64_t *cell_counts(const struct cellmap *m, const struct cell *c)
{
    return (int64_t *)(uintptr_t)((const char *)c + m->layout.counts);
}

static inline struct store_sum *cell_sums(const struct cellmap *m, const struct cell *c)
{
    return (struct store_sum *)(uintptr_t)((const char *)c + m->layout.sums);
}

static inline struct vc_runs *cell_vcs(const struct cellmap *m, const struct cell *c)
{
    return (struct vc_runs *)(uintptr_t)((const char *)c + m->layout.vcs);
}

/* Cells are carved from slabs that the cellmap frees whole: a load makes a
 * cell for every finest cell it drains and frees it on another thread
 * once encoded, and malloc and free of them were a sixth of the drain and
 * encode threads (perf). A dead cell's memory stays in its slab until the
 * cellmap goes: cellmaps last a batch, or a load. */
struct cell_slab {
    struct cell_slab *next;
    size_t used, cap;
};

enum { SLAB_ALIGN = CELL_ALIGN, SLAB_FIRST = 16 << 10, SLAB_MAX = 1 << 20 };
_Static_assert(alignof(struct store_sum) <= SLAB_ALIGN, "cells are 16-byte aligned");
_Static_assert(sizeof(struct cell) == 8, "a cell's keys follow its header, 8-aligned");

static size_t slab_head(void) { return align_up(sizeof(struct cell_slab), SLAB_ALIGN); }

static void *slab_take(struct cellmap *m, size_t size)
{
    struct cell_slab *s = m->slabs;
    if (!s || s->used + size > s->cap) {
        size_t cap = s ? (s->cap < SLAB_MAX ? 2 * s->cap : SLAB_MAX) : SLAB_FIRST;
        cap = cap < size ? size : cap;
        struct cell_slab *n = aligned_alloc(SLAB_ALIGN, slab_head() + cap);
        if (!n)
            return NULL;
        *n = (struct cell_slab){s, 0, cap};
        m->slabs = s = n;
    }
    void *p = (char *)s + slab_head() + s->used;
    s->used += size;
    return p;
}

static struct cell *cell_new(struct cellmap *m, uint32_t bucket, const int64_t *keys)
{
    char *p = slab_take(m, m->layout.stride);
    if (!p)
        return NULL;
    memset(p, 0, m->layout.total);
    struct cell *c = (struct cell *)p;
    c->bucket = bucket;
    if (m->view->ncell_keys)
        memcpy(cell_keys(c), keys, 8 * (size_t)m->view->ncell_keys);
    return c;
}

static bool runs_inline(const struct vc_runs *r) { return r->codes == r->one; }

static void runs_free(struct vc_runs *r)
{
    if (!runs_inline(r))
        free(r->codes); /* rows too */
    *r = (struct vc_runs){0};
}

/* What a cell holds outside its slab: its runs. */
static void cell_release(const struct cellmap *m, struct cell *c)
{
    for (int i = 0; i < m->view->nvalue_counts; i++)
        runs_free(&cell_vcs(m, c)[i]);
}

/* ---- The hash table ---------------------------------------------------------
 * (bucket, keys) -> struct cell *, in a struct hashtab (base/hashtab.h) that
 * keeps no key: the cell holds it. */

static uint64_t cell_hash(uint32_t bucket, const int64_t *keys, int nkeys)
{
    return hash_words(bucket, (const uint64_t *)keys, (size_t)nkeys);
}

struct cell_probe {
    uint32_t bucket;
    const int64_t *keys;
    int nkeys;
};

/* Whether a slot's cell is the probe's (hashtab_equal_fn). */
static inline bool cell_matches(const void *ctx, const void *value)
{
    const struct cell_probe *p = ctx;
    const struct cell *c = *(struct cell *const *)value;
    return c && c->bucket == p->bucket &&
           hashtab_key_equal((const uint64_t *)cell_keys(c), (const uint64_t *)p->keys,
                             (uint32_t)p->nkeys);
}

/* Adds c, whose key the table does not hold yet; -1 when out of memory. */
static int insert_cell(struct cellmap *m, struct cell *c)
{
    struct cell_probe p = {c->bucket, cell_keys(c), m->view->ncell_keys};
    bool added;
    struct cell **slot = hashtab_upsert_by(&m->table, cell_hash(c->bucket, p.keys, p.nkeys),
                                           cell_matches, &p, &added);
    if (!slot)
        return -1;
    *slot = c;
    return 0;
}

struct cellmap *cellmap_new(const struct sql_view *view, const struct store_column_type *types,
                            int view_index, int width, int64_t span_start)
{
    struct cellmap *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->view = view;
    m->types = types;
    m->view_index = view_index;
    m->width = width;
    m->span_start = span_start;
    m->layout = layout_of(view);
    hashtab_init(&m->table, 0, sizeof(struct cell *));
    if (hashtab_reserve(&m->table, 32)) {
        free(m);
        return NULL;
    }
    m->bytes = sizeof *m + hashtab_bytes(&m->table);
    return m;
}

/* Each cell of the table, in slot order (NULL after the last). A key whose
 * cell could not be made (out of memory) holds NULL and is passed over. */
static struct cell *next_cell(const struct cellmap *m, uint32_t *at)
{
    for (uint64_t *slot; (slot = hashtab_next(&m->table, at));) {
        struct cell *c = *(struct cell **)hashtab_value_of(&m->table, slot);
        if (c)
            return c;
    }
    return NULL;
}

void cellmap_free(struct cellmap *m)
{
    if (!m)
        return;
    uint32_t at = 0;
    for (struct cell *c; (c = next_cell(m, &at));)
        cell_release(m, c);
    for (struct cell_slab *n; m->slabs; m->slabs = n) {
        n = m->slabs->next;
        free(m->slabs);
    }
    hashtab_free(&m->table);
    free(m);
}

static struct cell *find_or_add(struct cellmap *m, uint32_t bucket, const int64_t *keys)
{
    struct cell_probe p = {bucket, keys, m->view->ncell_keys};
    size_t before = hashtab_bytes(&m->table);
    bool added;
    uint64_t h = cell_hash(bucket, keys, p.nkeys);
    struct cell **slot = hashtab_upsert_by(&m->table, h, cell_matches, &p, &added);
    if (!slot)
        return NULL;
    m->bytes += hashtab_bytes(&m->table) - before;
    if (*slot)
        return *slot;
    if (!(*slot = cell_new(m, bucket, keys)))
        return NULL; /* the key stays, holding NULL: next_cell passes it over */
    m->ncells++;
    m->bytes += m->layout.total;
    return *slot;
}

/* ---- Applying deltas -------------------------------------------------------- */

/* Room for want runs. A cell's codes and rows share one allocation (codes,
 * then rows from codes + cap): one malloc and one free per value count of
 * a cell, where two were a fifth of a load's drain and encode threads
 * (perf: malloc, free and their chunk merging). A cell's first run sits
 * in the cell itself (r->one; cells never move in their slab, so the
 * pointers to it hold): under a key nearly unique per row most cells hold
 * one run per value count, and their mallocs were most of a load's memory
 * (the warehouse's tasks: a 64-day segment of 9 million cells decoded
 * whole at a fold). */
static int runs_reserve(struct vc_runs *r, uint32_t want)
{
    if (want <= r->cap)
        return 0;
    if (r->cap == 0 && want == 1) {
        r->codes = &r->one[0];
        r->rows = &r->one[1];
        r->cap = 1;
        return 0;
    }
    uint32_t cap = r->cap > 1 ? r->cap * 2 : 4;
    while (cap < want)
        cap *= 2;
    int64_t *codes = malloc(2 * (size_t)cap * sizeof *codes);
    if (!codes)
        return -1;
    if (r->n) {
        memcpy(codes, r->codes, r->n * sizeof *codes);
        memcpy(codes + cap, r->rows, r->n * sizeof *codes);
    }
    if (!runs_inline(r))
        free(r->codes);
    r->codes = codes;
    r->rows = codes + cap;
    r->cap = cap;
    return 0;
}

static int settle_runs(struct cellmap *m, struct vc_runs *r, struct store_error *err);

/* Adds delta rows of code to sorted runs (r settled) in place, removing a
 * run that reaches zero. */
static int runs_insert(struct cellmap *m, struct vc_runs *r, int64_t code, int64_t delta,
                       struct store_error *err)
{
    uint32_t lo = 0, hi = r->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (r->codes[mid] < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < r->n && r->codes[lo] == code) {
        if (__builtin_add_overflow(r->rows[lo], delta, &r->rows[lo]))
            return store_fail(err, "a value count overflowed");
        if (r->rows[lo] == 0) {
            memmove(r->codes + lo, r->codes + lo + 1, (r->n - lo - 1) * sizeof *r->codes);
            memmove(r->rows + lo, r->rows + lo + 1, (r->n - lo - 1) * sizeof *r->rows);
            r->sorted = --r->n;
        }
        return 0;
    }
    if (delta == 0)
        return 0;
    uint32_t old_cap = r->cap;
    if (runs_reserve(r, r->n + 1))
        return store_fail(err, "out of memory");
    m->bytes += (r->cap - old_cap) * 16;
    memmove(r->codes + lo + 1, r->codes + lo, (r->n - lo) * sizeof *r->codes);
    memmove(r->rows + lo + 1, r->rows + lo, (r->n - lo) * sizeof *r->rows);
    r->codes[lo] = code;
    r->rows[lo] = delta;
    r->sorted = ++r->n;
    return 0;
}

/* Adds sorted runs to sorted runs (r settled) in one pass, from the back
 * so that the result can share r's array: every write lands at or above
 * the next run of r still to read. Runs that reach zero rows are dropped. */
static int merge_sorted(struct cellmap *m, struct vc_runs *r, const struct vc_runs *add,
                        struct store_error *err)
{
    if (add->n <= 2) { /* an insertion or two: no need to move every run */
        for (uint32_t j = 0; j < add->n; j++)
            if (runs_insert(m, r, add->codes[j], add->rows[j], err))
                return -1;
        return 0;
    }
    uint32_t old_cap = r->cap, total = r->n + add->n;
    if (runs_reserve(r, total))
        return store_fail(err, "out of memory");
    m->bytes += (r->cap - old_cap) * 16;
    uint32_t i = r->n, j = add->n, k = total;
    while (j > 0) {
        int64_t code, rows;
        if (i > 0 && r->codes[i - 1] > add->codes[j - 1]) {
            code = r->codes[i - 1];
            rows = r->rows[--i];
        } else if (i > 0 && r->codes[i - 1] == add->codes[j - 1]) {
            code = r->codes[--i];
            if (__builtin_add_overflow(r->rows[i], add->rows[--j], &rows))
                return store_fail(err, "a value count overflowed");
        } else {
            code = add->codes[--j];
            rows = add->rows[j];
        }
        if (rows != 0) {
            r->codes[--k] = code;
            r->rows[k] = rows;
        }
    }
    /* r's first i runs stay; the merged ones sit at [k, total). */
    if (k > i) {
        memmove(r->codes + i, r->codes + k, (total - k) * sizeof *r->codes);
        memmove(r->rows + i, r->rows + k, (total - k) * sizeof *r->rows);
    }
    r->sorted = r->n = i + (total - k);
    return 0;
}

/* Merges the appended runs [sorted, n) into the sorted ones: sorted and
 * summed by code on their own (store_runs_merge), then merged from the
 * back. */
static int settle_runs(struct cellmap *m, struct vc_runs *r, struct store_error *err)
{
    uint32_t t = r->n - r->sorted;
    if (t == 0)
        return 0;
    struct code_run *tail = malloc(sizeof *tail * t);
    int64_t *mem = malloc(2 * sizeof *mem * t);
    if (!tail || !mem) {
        free(tail);
        free(mem);
        return store_fail(err, "out of memory");
    }
    for (uint32_t i = 0; i < t; i++)
        tail[i] = (struct code_run){r->codes[r->sorted + i], r->rows[r->sorted + i]};
    int64_t k = store_runs_merge(tail, t, err);
    struct vc_runs add = {.codes = mem, .rows = mem + t, .n = (uint32_t)(k > 0 ? k : 0),
                          .cap = t, .sorted = (uint32_t)(k > 0 ? k : 0)};
    for (int64_t i = 0; i < k; i++) {
        add.codes[i] = tail[i].code;
        add.rows[i] = tail[i].rows;
    }
    r->n = r->sorted;
    int rc = k < 0 ? -1 : merge_sorted(m, r, &add, err);
    free(tail);
    free(mem);
    return rc;
}

/* Adds a cell's sorted runs to r. Merging them in at once costs every run
 * of r above add's smallest code: a cell of the widest width takes a merge
 * from each of its finest cells, and those merges were most of a load's
 * drain (perf). So small adds to a large r are appended, and merged in
 * (settled) together once the appended ones are as many as the sorted:
 * each run then moves a few times, not once per add. */
static int runs_merge(struct cellmap *m, struct vc_runs *r, const struct vc_runs *add,
                      struct store_error *err)
{
    if (r->sorted == r->n && (uint64_t)add->n * 8 >= r->n)
        return merge_sorted(m, r, add, err);
    uint32_t old_cap = r->cap;
    if (r->n > UINT32_MAX / 2 - add->n || runs_reserve(r, r->n + add->n))
        return store_fail(err, "out of memory");
    m->bytes += (r->cap - old_cap) * 16;
    if (add->n) {
        memcpy(r->codes + r->n, add->codes, add->n * sizeof *r->codes);
        memcpy(r->rows + r->n, add->rows, add->n * sizeof *r->rows);
    }
    r->n += add->n;
    return r->n - r->sorted >= r->sorted ? settle_runs(m, r, err) : 0;
}

static int settle_cell(struct cellmap *m, struct cell *c, struct store_error *err)
{
    for (int k = 0; k < m->view->nvalue_counts; k++)
        if (settle_runs(m, &cell_vcs(m, c)[k], err))
            return -1;
    return 0;
}

int cell_accumulate(const struct sql_view *v, const struct store_column_type *types,
                    int64_t *counts, struct store_sum *sums, const int64_t *add_counts,
                    const struct store_sum *add_sums, struct store_error *err)
{
    for (int i = 0; i < v->ncounts; i++)
        if (__builtin_add_overflow(counts[i], add_counts[i], &counts[i]))
            return store_fail(err, "a count of view \"%s\" overflowed", v->name);
    for (int i = 0; i < v->nsums; i++) {
        if (types[v->sums[i].fact_column].type == STORE_TYPE_FLOAT)
            sums[i].real += add_sums[i].real;
        else if (__builtin_add_overflow(sums[i].exact, add_sums[i].exact, &sums[i].exact))
            return store_fail(err, "a sum of view \"%s\" overflowed 128 bits", v->name);
    }
    return 0;
}

/* Adds counts and sums to the cell at (bucket, keys), creating it. */
static struct cell *add_accumulators(struct cellmap *m, uint32_t bucket, const int64_t *keys,
                                     const int64_t *counts, const struct store_sum *sums,
                                     struct store_error *err)
{
    struct cell *c = find_or_add(m, bucket, keys);
    if (!c) {
        store_fail(err, "out of memory");
        return NULL;
    }
    if (cell_accumulate(m->view, m->types, cell_counts(m, c), cell_sums(m, c), counts, sums, err))
        return NULL;
    return c;
}

int cellmap_add_cell(struct cellmap *m, uint32_t bucket, const int64_t *keys,
                     const int64_t *counts, const struct store_sum *sums,
                     const struct vc_runs *runs, struct store_error *err)
{
    struct cell *c = add_accumulators(m, bucket, keys, counts, sums, err);
    if (!c)
        return -1;
    for (int k = 0; k < m->view->nvalue_counts; k++)
        if (runs_merge(m, &cell_vcs(m, c)[k], &runs[k], err))
            return -1;
    m->dirty = true;
    return 0;
}

int cellmap_merge(struct cellmap *base, struct cellmap *overlay, struct store_error *err)
{
    uint32_t at = 0;
    for (struct cell *o; (o = next_cell(overlay, &at));)
        if (settle_cell(overlay, o, err) ||
            cellmap_add_cell(base, o->bucket, cell_keys(o), cell_counts(overlay, o),
                             cell_sums(overlay, o), cell_vcs(overlay, o), err))
            return -1;
    base->dirty = true;
    return 0;
}

/* ---- Encoding ----------------------------------------------------------------- */

static int cell_cmp(const void *a, const void *b, void *nkeys)
{
    const struct cell *x = *(struct cell *const *)a, *y = *(struct cell *const *)b;
    if (x->bucket != y->bucket)
        return x->bucket < y->bucket ? -1 : 1;
    const int64_t *xk = cell_keys(x), *yk = cell_keys(y);
    for (int i = 0; i < *(int *)nkeys; i++)
        if (xk[i] != yk[i])
            return xk[i] < yk[i] ? -1 : 1;
    return 0;
}

/* Sorts cells into cell_cmp's order: by their packed order (order.c)
 * when bucket and keys fit one code, else, or short of memory for the
 * codes, by cell_cmp. Cannot fail. */
static void sort_cells(struct cell **cells, uint32_t n, int nkeys)
{
    struct order_packing p;
    order_packing_init(&p, 1 + nkeys);
    struct code_run *codes = NULL;
    if (n >= 2 && nkeys + 1 <= ORDER_MAX_FIELDS) {
        for (uint32_t i = 0; i < n; i++) {
            const int64_t *k = cell_keys(cells[i]);
            order_packing_see(&p, 0, cells[i]->bucket);
            for (int f = 0; f < nkeys; f++)
                order_packing_see(&p, 1 + f, k[f]);
        }
        if (order_packing_fits(&p))
            codes = malloc(sizeof *codes * n);
    }
    if (codes) {
        for (uint32_t i = 0; i < n; i++) {
            const int64_t *k = cell_keys(cells[i]);
            int64_t code = order_packing_push(&p, 0, 0, cells[i]->bucket);
            for (int f = 0; f < nkeys; f++)
                code = order_packing_push(&p, code, 1 + f, k[f]);
            codes[i] = (struct code_run){code, (int64_t)(intptr_t)cells[i]};
        }
        if (code_runs_sort(codes, n) == 0) {
            for (uint32_t i = 0; i < n; i++)
                cells[i] = (struct cell *)(intptr_t)codes[i].rows;
            free(codes);
            return;
        }
        free(codes);
    }
    qsort_r(cells, n, sizeof *cells, cell_cmp, &nkeys);
}

static int check_cell(const struct cellmap *m, const struct cell *c, struct store_error *err)
{
    const struct sql_view *v = m->view;
    const int64_t *counts = cell_counts(m, c);
    const struct vc_runs *vcs = cell_vcs(m, c);
    bool empty = counts[0] == 0;
    for (int i = 0; i < v->ncounts; i++)
        if (counts[i] < 0 || (empty && counts[i] != 0))
            return store_fail(err, "view \"%s\": a cell's count %d went %s; a delta took away "
                                   "rows that were never added",
                              v->name, i, counts[i] < 0 ? "negative" : "out of step");
    for (int i = 0; i < v->nvalue_counts; i++)
        for (uint32_t k = 0; k < vcs[i].n; k++)
            if (vcs[i].rows[k] < 0 || empty)
                return store_fail(err, "view \"%s\": a value count went negative; a delta "
                                       "took away a value that was never added", v->name);
    return 0;
}

/* Gathers live cells, sorted. Dead cells are freed and the table rebuilt. */
static struct cell **live_cells(struct cellmap *m, uint32_t *n, struct store_error *err)
{
    struct cell **cells = malloc((m->ncells ? m->ncells : 1) * sizeof *cells);
    if (!cells) {
        store_fail(err, "out of memory");
        return NULL;
    }
    uint32_t live = 0, dead = 0, at = 0;
    for (struct cell *c; (c = next_cell(m, &at));) {
        if (settle_cell(m, c, err) || check_cell(m, c, err)) {
            free(cells);
            return NULL;
        }
        if (cell_counts(m, c)[0] == 0)
            dead++;
        else
            cells[live++] = c;
    }
    if (dead) {
        at = 0;
        for (struct cell *c; (c = next_cell(m, &at));)
            if (cell_counts(m, c)[0] == 0) {
                cell_release(m, c);
                m->bytes -= m->layout.total;
            }
        hashtab_clear(&m->table); /* as many slots as before: the re-adds cannot fail */
        for (uint32_t i = 0; i < live; i++)
            insert_cell(m, cells[i]);
        m->ncells = live;
    }
    sort_cells(cells, live, m->view->ncell_keys);
    *n = live;
    return cells;
}

/* What a consuming encode (cellmap_encode_consume) gives back as it goes:
 * each cell's runs once copied, and, for a segment whose runs are large
 * (TRIM_RUN_BYTES: the widest width's), the freed heap to the system every
 * eighth of the cells, since the columns they move into are separate
 * mappings that cannot reuse it. A trim walks the whole heap: trimming
 * for every segment a million-row commit folded made it 1.5 times as long
 * (measured). */
#define TRIM_RUN_BYTES ((uint64_t)32 << 20)

static int build_columns(const struct cellmap *m, struct cell **cells, uint32_t n, bool consume,
                         struct block_columns *bc)
{
    const struct sql_view *v = m->view;
    int64_t *bucket = block_column_add(bc, STORE_ROLE_BUCKET, 0, FORMAT_I64, n);
    if (!bucket)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        bucket[i] = cells[i]->bucket;
    if (block_add_bucket_starts(bc, STORE_ROLE_BUCKET, store_span_buckets(v, m->width), bucket, n))
        return -1;
    for (int k = 0; k < v->ncell_keys; k++) {
        int64_t *a = block_column_add(bc, STORE_ROLE_KEY, (uint16_t)k, FORMAT_I64, n);
        if (!a)
            return -1;
        for (uint32_t i = 0; i < n; i++)
            a[i] = cell_keys(cells[i])[k];
    }
    for (int k = 0; k < v->ncounts; k++) {
        int64_t *a = block_column_add(bc, STORE_ROLE_COUNT, (uint16_t)k, FORMAT_I64, n);
        if (!a)
            return -1;
        for (uint32_t i = 0; i < n; i++)
            a[i] = cell_counts(m, cells[i])[k];
    }
    for (int k = 0; k < v->nsums; k++) {
        bool real = m->types[v->sums[k].fact_column].type == STORE_TYPE_FLOAT;
        void *a = block_column_add(bc, STORE_ROLE_SUM, (uint16_t)k, real ? FORMAT_F64 : FORMAT_I128, n);
        if (!a)
            return -1;
        for (uint32_t i = 0; i < n; i++) {
            if (real)
                ((double *)a)[i] = cell_sums(m, cells[i])[k].real;
            else
                ((__int128 *)a)[i] = cell_sums(m, cells[i])[k].exact;
        }
    }
    for (int k = 0; k < v->nvalue_counts; k++) {
        int64_t *off = block_column_add(bc, STORE_ROLE_VC_OFFSETS, (uint16_t)k, FORMAT_I64, n + 1);
        if (!off)
            return -1;
        off[0] = 0;
        for (uint32_t i = 0; i < n; i++)
            off[i + 1] = off[i] + cell_vcs(m, cells[i])[k].n;
        uint32_t runs = (uint32_t)off[n];
        bool trim = consume && 16 * (uint64_t)runs > TRIM_RUN_BYTES;
        int64_t *codes = block_column_add(bc, STORE_ROLE_VC_VALUES, (uint16_t)k, FORMAT_I64, runs);
        int64_t *rows = codes ? block_column_add(bc, STORE_ROLE_VC_COUNTS, (uint16_t)k, FORMAT_I64, runs)
                              : NULL;
        if (!rows)
            return -1;
        for (uint32_t i = 0; i < n; i++) {
            struct vc_runs *r = &cell_vcs(m, cells[i])[k];
            if (r->n) { /* codes/rows may be NULL: memcpy from NULL is UB even for 0 bytes */
                memcpy(codes + off[i], r->codes, 8 * (size_t)r->n);
                memcpy(rows + off[i], r->rows, 8 * (size_t)r->n);
            }
            if (consume) {
                runs_free(r);
                if (trim && (i + 1) % (n / 8 + 1) == 0)
                    malloc_trim(0);
            }
        }
    }
    return 0;
}

/* Encodes n sorted cells, with the rollup families when asked, by policy. */
static int encode_cells(struct cellmap *m, struct cell **cells, uint32_t n, bool rollups,
                        bool consume, enum format_policy policy, void **out, size_t *len,
                        struct store_error *err)
{
    struct block_columns bc = {0};
    int rc = -1;
    if (build_columns(m, cells, n, consume, &bc) ||
        (rollups && rollup_build(m->view, m->types, m->width, &bc, n))) {
        store_fail(err, "out of memory");
        goto done;
    }
    size_t cap = format_block_bound(bc.cols, bc.ncols);
    void *buf = malloc(cap);
    if (!buf) {
        store_fail(err, "out of memory");
        goto done;
    }
    struct format_block_info info = {m->span_start, m->view->widths[m->width], n};
    struct format_error ferr;
    if (format_block_encode(&info, bc.cols, bc.ncols, policy, buf, cap, len, &ferr)) {
        free(buf);
        store_fail(err, "encoding a segment: %s", ferr.message);
        goto done;
    }
    *out = buf;
    rc = 0;
done:
    block_columns_free(&bc);
    return rc;
}

static int encode_live(struct cellmap *m, bool consume, void **out, size_t *len,
                       struct store_error *err)
{
    uint32_t n;
    *out = NULL;
    *len = 0;
    struct cell **cells = live_cells(m, &n, err);
    if (!cells)
        return -1;
    int rc = n ? encode_cells(m, cells, n, true, consume, FORMAT_POLICY_SMALLEST, out, len, err)
               : 0;
    free(cells);
    return rc;
}

int cellmap_encode(struct cellmap *m, void **out, size_t *len, struct store_error *err)
{
    return encode_live(m, false, out, len, err);
}

int cellmap_encode_consume(struct cellmap *m, void **out, size_t *len, struct store_error *err)
{
    return encode_live(m, true, out, len, err);
}

bool accumulators_change(const struct sql_view *v, const int64_t *counts,
                         const struct store_sum *sums)
{
    for (int i = 0; i < v->ncounts; i++)
        if (counts[i])
            return true;
    for (int i = 0; i < v->nsums; i++)
        if (sums[i].exact || sums[i].real != 0)
            return true;
    return false;
}

/* Whether an overlay's cell changes anything. */
static bool cell_changes(const struct cellmap *m, const struct cell *c)
{
    const struct sql_view *v = m->view;
    if (accumulators_change(v, cell_counts(m, c), cell_sums(m, c)))
        return true;
    for (int i = 0; i < v->nvalue_counts; i++)
        if (cell_vcs(m, c)[i].n)
            return true;
    return false;
}

int cellmap_encode_delta(struct cellmap *m, void **out, size_t *len, struct store_error *err)
{
    *out = NULL;
    *len = 0;
    struct cell **cells = malloc((m->ncells ? m->ncells : 1) * sizeof *cells);
    if (!cells)
        return store_fail(err, "out of memory");
    uint32_t n = 0, at = 0;
    for (struct cell *c; (c = next_cell(m, &at));) {
        if (settle_cell(m, c, err)) {
            free(cells);
            return -1;
        }
        if (cell_changes(m, c))
            cells[n++] = c;
    }
    sort_cells(cells, n, m->view->ncell_keys);
    /* A delta block lives until a fold rewrites it (fold.c): the quick
     * policy plans each column in one pass, where the smallest's planning
     * was a fifth of a million-row commit (SPEC.md §4.3). */
    int rc = n ? encode_cells(m, cells, n, true, false, FORMAT_POLICY_QUICK, out, len, err) : 0;
    free(cells);
    return rc;
}

/* ---- Loading ------------------------------------------------------------------- */

/* The runs of cell i's value counts, copied from the decoded block. */
static int load_vcs(struct cellmap *m, const struct store_rows *rows, struct cell *c, uint32_t i,
                    struct store_error *err)
{
    for (int k = 0; k < m->view->nvalue_counts; k++) {
        struct vc_runs *r = &cell_vcs(m, c)[k];
        const int64_t *off = rows->vc_off[k];
        uint32_t cnt = (uint32_t)(off[i + 1] - off[i]);
        if (cnt == 0)
            continue; /* no runs: codes may be NULL, and memcpy(NULL) is UB */
        if (runs_reserve(r, cnt))
            return store_fail(err, "out of memory");
        memcpy(r->codes, rows->vc_codes[k] + off[i], 8 * (size_t)cnt);
        memcpy(r->rows, rows->vc_rows[k] + off[i], 8 * (size_t)cnt);
        r->sorted = r->n = cnt;
        m->bytes += 16 * (size_t)cnt;
    }
    return 0;
}

static struct cell *load_cell(struct cellmap *m, const struct store_rows *rows, uint32_t i,
                              int64_t *keys, struct store_error *err)
{
    const struct sql_view *v = m->view;
    for (int k = 0; k < v->ncell_keys; k++)
        keys[k] = rows->keys[k][i];
    uint32_t before = m->ncells;
    struct cell *c = find_or_add(m, (uint32_t)rows->bucket[i], keys);
    if (!c) {
        store_fail(err, "out of memory");
        return NULL;
    }
    if (m->ncells == before) {
        store_fail(err, "segment block holds the same cell twice");
        return NULL;
    }
    int64_t *counts = cell_counts(m, c);
    struct store_sum *sums = cell_sums(m, c);
    for (int k = 0; k < v->ncounts; k++)
        counts[k] = rows->counts[k][i];
    for (int k = 0; k < v->nsums; k++) {
        if (rows->sum_real[k])
            sums[k].real = format_load_f64(rows->sums[k], i);
        else
            sums[k].exact = format_load_i128(rows->sums[k], i);
    }
    return load_vcs(m, rows, c, i, err) ? NULL : c;
}

/* Every cell of a block, through the store's cursor: its cells' family
 * whole, every column (store_rows_load checks the bucket indexes and
 * value-count offsets). The trailer is checked too: the writer re-encodes
 * what it loads, and must not carry a corruption into a fresh checksum. */
int cellmap_load(struct cellmap *m, const void *block, size_t len, struct store_error *err)
{
    struct store_block b;
    struct store_rows rows = {0};
    int64_t *keys = malloc(sizeof *keys * ((size_t)m->view->ncell_keys + 1));
    const struct store_want every = {.whole = true, .every = true};
    int rc = keys ? store_block_open(&b, m->view, m->types, m->width, m->span_start, block, len,
                                     true, err)
                  : store_fail(err, "out of memory");
    if (rc == 0)
        rc = store_rows_load(&b, &every, &rows, err);
    for (uint32_t i = 0; rc == 0 && i < rows.n; i++)
        if (!load_cell(m, &rows, i, keys, err))
            rc = -1;
    store_rows_free(m->view, &rows);
    free(keys);
    return rc;
}

int cellmap_load_segment(struct cellmap *m, const MDB_val *blocks, int nblocks,
                         struct store_error *err)
{
    if (nblocks < 1 || cellmap_load(m, blocks[0].mv_data, blocks[0].mv_size, err))
        return -1;
    for (int i = 1; i < nblocks; i++) {
        struct cellmap *d = cellmap_new(m->view, m->types, m->view_index, m->width, m->span_start);
        int rc = d ? cellmap_load(d, blocks[i].mv_data, blocks[i].mv_size, err)
                   : store_fail(err, "out of memory");
        if (rc == 0)
            rc = cellmap_merge(m, d, err);
        cellmap_free(d);
        if (rc) {
            struct store_error inner = *err;
            return store_fail(err, "delta block %d: %s", i, inner.message);
        }
    }
    return 0;
}
