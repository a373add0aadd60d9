/* staging.c -- a batch's rows, summed per cell of the finest width before
 * they reach the cellmaps.
 *
 * store_apply hands each row of a view here instead of to a cellmap of
 * every width. Rows are summed into a flat table keyed by (finest bucket,
 * cell keys); their value counts are appended as (cell, value count, code,
 * rows) entries. A drain then sorts each cell's entries into runs and
 * hands the writer one finest-width cell at a time, in time order, which
 * it adds to that width's cell and to each wider width's. A row thus costs
 * one probe of one table instead of a probe and a sorted insertion at
 * every width (perf of the load: 44% of it), and the wider widths take
 * one merge per finest cell instead of one per row.
 *
 * Why time order: rows a follower reads come in the order the source
 * changed them, which for updates and deletes is no order of time at all
 * (the benchmark's change whole ranges of ids spread over six months).
 * Handed over in staging order, every cell at every width was a cache
 * miss; handed over by time, a day's or a month's cell takes its finest
 * cells one after another while it is in cache, and the finest width's
 * segment is the same for a run of cells (the physical follower's deletes
 * at 2,000,000 trips: 1.62 s of apply a million rows by cellmap, 0.99 s
 * staged in staging order, 0.76 s staged and drained by time).
 *
 * A row is added STAGING_AHEAD rows after it is staged, in order: staging
 * copies it into a small ring and prefetches its cell's slot (and its
 * values' slots), and half-way along the ring its cell. Rows come in no
 * order, so each add would otherwise wait on two or three cache misses
 * (perf: 60% of staging_add's time was those loads).
 *
 * Answers do not change: counts, exact sums and value counts add the same
 * in any order. Float sums add in another order, as they would had
 * PostgreSQL sent the rows in another order. */
#include "store/internal.h"

#include <stdlib.h>
#include <string.h>

/* One row's change to one value count of one staged cell. */
struct staging_entry {
    uint32_t cell, vc;
    int64_t code, rows;
};

/* A staged row waiting in the ring: this header, then its keys, counts,
 * sums and value-count deltas at the offsets struct staging records. */
struct ahead_row {
    int64_t time;
    uint64_t hash; /* cell_hash of (time, keys) */
    int nvcs;
};

enum { STAGING_AHEAD = 8 };

/* The value-count changes a ring row holds: an update's old and new value
 * of every value count, the most one row of ingest's brings (a row with
 * more is staged as several, see staging_add). */
#define ROW_VCS(nvcs) (2 * (size_t)(nvcs))

/* Fewer staged cells than this are drained in staging order: they are in
 * cache whatever the order, and the sort's passes would cost more than
 * they save (a small batch, committed often). */
enum { SORT_FROM_CELLS = 4096 };

/* How many cells ahead a drain in time order asks for a cell's record. */
enum { DRAIN_AHEAD = 8 };

struct staging {
    const struct sql_view *view;
    const struct store_column_type *types;
    int nkeys, ncounts, nsums, nvcs;

    /* Rows staged, not yet added: ring_len of them from ring_head, each
     * ring_stride bytes laid out at the row_*_at offsets. */
    uint8_t *ring;
    size_t ring_stride, row_keys_at, row_counts_at, row_sums_at, row_vcs_at;
    uint32_t ring_head, ring_len;

    /* Cells, each one record of `stride` bytes (so that a row touches one
     * or two cache lines): its finest bucket's start, keys, counts, then
     * the sums at sums_at. */
    uint8_t *cells;
    size_t stride, sums_at;
    uint32_t ncells, cell_cap;
    struct hashtab cell_index; /* (time, keys) -> cell number (uint32); the cell holds the key */

    struct staging_entry *entries;
    size_t nentries, entry_cap;

    struct hashtab values;     /* (vc, code) -> rows the view's value gained (int64) */
};

struct staging *staging_new(const struct sql_view *view, const struct store_column_type *types)
{
    struct staging *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->view = view;
    b->types = types;
    b->nkeys = view->ncell_keys;
    b->ncounts = view->ncounts;
    b->nsums = view->nsums;
    b->nvcs = view->nvalue_counts;
    size_t head = 8 * (1 + (size_t)b->nkeys + (size_t)b->ncounts);
    b->sums_at = (head + 15) / 16 * 16;
    b->stride = b->sums_at + sizeof(struct store_sum) * (size_t)b->nsums;
    b->stride = (b->stride + 15) / 16 * 16;
    b->row_keys_at = (sizeof(struct ahead_row) + 15) / 16 * 16;
    b->row_counts_at = b->row_keys_at + 8 * (size_t)b->nkeys;
    b->row_sums_at = (b->row_counts_at + 8 * (size_t)b->ncounts + 15) / 16 * 16;
    b->row_vcs_at = b->row_sums_at + sizeof(struct store_sum) * (size_t)b->nsums;
    b->ring_stride = b->row_vcs_at + sizeof(struct store_vc_delta) * ROW_VCS(b->nvcs);
    b->ring_stride = (b->ring_stride + 15) / 16 * 16;
    hashtab_init(&b->cell_index, 0, sizeof(uint32_t));
    hashtab_init(&b->values, 2, sizeof(int64_t));
    if (!(b->ring = aligned_alloc(16, b->ring_stride * STAGING_AHEAD))) {
        free(b);
        return NULL;
    }
    return b;
}

/* The i-th row waiting, oldest first. */
static struct ahead_row *ring_row(const struct staging *b, uint32_t i)
{
    size_t at = (b->ring_head + i) % STAGING_AHEAD;
    return (struct ahead_row *)(b->ring + at * b->ring_stride);
}
static int64_t *row_keys(const struct staging *b, struct ahead_row *r)
{
    return (int64_t *)((uint8_t *)r + b->row_keys_at);
}
static int64_t *row_counts(const struct staging *b, struct ahead_row *r)
{
    return (int64_t *)((uint8_t *)r + b->row_counts_at);
}
static struct store_sum *row_sums(const struct staging *b, struct ahead_row *r)
{
    return (struct store_sum *)((uint8_t *)r + b->row_sums_at);
}
static struct store_vc_delta *row_vcs(const struct staging *b, struct ahead_row *r)
{
    return (struct store_vc_delta *)((uint8_t *)r + b->row_vcs_at);
}

static int64_t *cell_time(const struct staging *b, uint32_t c) { return (int64_t *)(b->cells + c * b->stride); }
static int64_t *cell_keys(const struct staging *b, uint32_t c) { return cell_time(b, c) + 1; }
static int64_t *cell_counts(const struct staging *b, uint32_t c) { return cell_keys(b, c) + b->nkeys; }
static struct store_sum *cell_sums(const struct staging *b, uint32_t c)
{
    return (struct store_sum *)(b->cells + c * b->stride + b->sums_at);
}

void staging_free(struct staging *b)
{
    if (!b)
        return;
    free(b->ring);
    free(b->cells);
    hashtab_free(&b->cell_index);
    free(b->entries);
    hashtab_free(&b->values);
    free(b);
}

void staging_clear(struct staging *b)
{
    b->ring_len = 0;
    b->ncells = 0;
    b->nentries = 0;
    hashtab_clear(&b->cell_index);
    hashtab_clear(&b->values);
}

void staging_release(struct staging *b)
{
    staging_clear(b);
    free(b->cells);
    b->cells = NULL;
    b->cell_cap = 0;
    free(b->entries);
    b->entries = NULL;
    b->entry_cap = 0;
    hashtab_free(&b->cell_index);
    hashtab_init(&b->cell_index, 0, sizeof(uint32_t));
    hashtab_free(&b->values);
    hashtab_init(&b->values, 2, sizeof(int64_t));
}

bool staging_empty(const struct staging *b) { return b->ncells == 0 && b->ring_len == 0; }

/* What is staged, counted by use rather than by capacity: the writer
 * drains at a share of its cache budget, and small budgets (tests) should
 * still stage several rows. */
size_t staging_bytes(const struct staging *b)
{
    return b->ncells * (b->stride + 16 * (size_t)b->cell_index.slot_words) +
           b->nentries * sizeof *b->entries + b->values.count * 16 * (size_t)b->values.slot_words;
}

/* ---- Cells ---------------------------------------------------------------------- */

static uint64_t cell_hash(int64_t time, const int64_t *keys, int nkeys)
{
    return hash_words((uint64_t)time, (const uint64_t *)keys, (size_t)nkeys);
}

static int grow_cells(struct staging *b)
{
    uint32_t cap = b->cell_cap ? b->cell_cap * 2 : 1024;
    uint8_t *cells = aligned_alloc(16, b->stride * cap);
    if (!cells)
        return -1;
    if (b->ncells)
        memcpy(cells, b->cells, b->stride * b->ncells);
    free(b->cells);
    b->cells = cells;
    b->cell_cap = cap;
    return 0;
}

struct cell_probe {
    const struct staging *b;
    int64_t time;
    const int64_t *keys;
};

/* Whether a slot's cell is the probe's (hashtab_equal_fn). */
static inline bool cell_matches(const void *ctx, const void *value)
{
    const struct cell_probe *p = ctx;
    uint32_t c = *(const uint32_t *)value;
    return *cell_time(p->b, c) == p->time &&
           hashtab_key_equal((const uint64_t *)cell_keys(p->b, c), (const uint64_t *)p->keys,
                             (uint32_t)p->b->nkeys);
}

/* The staged cell of (time, keys), whose cell_hash is h, created zeroed;
 * -1 when out of memory. */
static int64_t find_or_add(struct staging *b, int64_t time, const int64_t *keys, uint64_t h)
{
    if (b->ncells == b->cell_cap && grow_cells(b))
        return -1;
    struct cell_probe p = {b, time, keys};
    bool added;
    uint32_t *number = hashtab_upsert_by(&b->cell_index, h, cell_matches, &p, &added);
    if (!number)
        return -1;
    if (!added)
        return *number;
    uint32_t c = *number = b->ncells++;
    memset(cell_time(b, c), 0, b->stride);
    *cell_time(b, c) = time;
    memcpy(cell_keys(b, c), keys, 8 * (size_t)b->nkeys);
    return c;
}

/* ---- Value counts ------------------------------------------------------------------ */

static int add_entry(struct staging *b, uint32_t cell, const struct store_vc_delta *vd)
{
    if (b->nentries == b->entry_cap) {
        size_t cap = b->entry_cap ? b->entry_cap * 2 : 4096;
        struct staging_entry *e = realloc(b->entries, sizeof *e * cap);
        if (!e)
            return -1;
        b->entries = e;
        b->entry_cap = cap;
    }
    b->entries[b->nentries++] = (struct staging_entry){cell, (uint32_t)vd->vc, vd->code, vd->delta};
    return 0;
}

static uint64_t value_hash(const struct staging *b, int32_t vc, int64_t code)
{
    uint64_t key[2] = {(uint64_t)vc, (uint64_t)code};
    return hashtab_hash(&b->values, key);
}

/* Adds rows to (vc, code) in the view's value table. */
static int add_value(struct staging *b, int32_t vc, int64_t code, int64_t rows)
{
    uint64_t key[2] = {(uint64_t)vc, (uint64_t)code};
    bool added;
    int64_t *r = hashtab_upsert(&b->values, key, hashtab_hash(&b->values, key), &added);
    if (!r)
        return -1;
    *r += rows; /* the writer's value map adds the same way, unchecked */
    return 0;
}

/* Adds a staged row to its cell and its value counts. */
static int add_row(struct staging *b, struct ahead_row *r, struct store_error *err)
{
    const struct sql_view *v = b->view;
    int64_t c = find_or_add(b, r->time, row_keys(b, r), r->hash);
    if (c < 0 || cell_accumulate(v, b->types, cell_counts(b, (uint32_t)c),
                                 cell_sums(b, (uint32_t)c), row_counts(b, r), row_sums(b, r), err))
        return c < 0 ? store_fail(err, "out of memory") : -1;
    const struct store_vc_delta *vcs = row_vcs(b, r);
    for (int i = 0; i < r->nvcs; i++) {
        if (vcs[i].delta == 0)
            continue;
        if (add_entry(b, (uint32_t)c, &vcs[i]) ||
            add_value(b, vcs[i].vc, vcs[i].code, vcs[i].delta))
            return store_fail(err, "out of memory");
    }
    return 0;
}

/* Adds the oldest staged row. */
static int add_oldest(struct staging *b, struct store_error *err)
{
    struct ahead_row *r = ring_row(b, 0);
    b->ring_head = (b->ring_head + 1) % STAGING_AHEAD;
    b->ring_len--;
    return add_row(b, r, err);
}

/* Adds every staged row, in order. */
static int flush_ring(struct staging *b, struct store_error *err)
{
    while (b->ring_len)
        if (add_oldest(b, err))
            return -1;
    return 0;
}

/* Half-way along the ring a row's slot has arrived: the cell it names is
 * fetched next (the probe's likely end; a slot of another hash is left). */
static inline __attribute__((always_inline)) void prefetch_cell(const struct staging *b,
                                                                struct ahead_row *r)
{
    const uint32_t *number = hashtab_home_value(&b->cell_index, r->hash);
    if (number)
        __builtin_prefetch(cell_time(b, *number));
}

/* n bytes of src to dst, or zeros when src is NULL (an array of no
 * element may be NULL, which memcpy may not be given). */
static void copy_or_zero(void *dst, const void *src, size_t n)
{
    if (n && src)
        memcpy(dst, src, n);
    else if (n)
        memset(dst, 0, n);
}

/* Stages one row of at most ROW_VCS(b->nvcs) value-count changes; counts
 * and sums NULL: zeros. */
static int stage(struct staging *b, int64_t time, const int64_t *keys, const int64_t *counts,
                 const struct store_sum *sums, const struct store_vc_delta *vcs, int nvcs,
                 struct store_error *err)
{
    struct ahead_row *r = ring_row(b, b->ring_len);
    r->time = time;
    r->hash = cell_hash(time, keys, b->nkeys);
    r->nvcs = nvcs;
    copy_or_zero(row_keys(b, r), keys, 8 * (size_t)b->nkeys);
    copy_or_zero(row_counts(b, r), counts, 8 * (size_t)b->ncounts);
    copy_or_zero(row_sums(b, r), sums, sizeof *sums * (size_t)b->nsums);
    copy_or_zero(row_vcs(b, r), vcs, sizeof *vcs * (size_t)nvcs);
    hashtab_prefetch(&b->cell_index, r->hash);
    if (b->values.cap)
        for (int i = 0; i < nvcs; i++)
            hashtab_prefetch(&b->values, value_hash(b, vcs[i].vc, vcs[i].code));
    b->ring_len++;
    if (b->ring_len > STAGING_AHEAD / 2)
        prefetch_cell(b, ring_row(b, b->ring_len - 1 - STAGING_AHEAD / 2));
    return b->ring_len == STAGING_AHEAD ? add_oldest(b, err) : 0;
}

int staging_add(struct staging *b, int64_t time, const struct store_delta *d, struct store_error *err)
{
    const struct sql_view *v = b->view;
    if (d->nvcs < 0)
        return store_fail(err, "a row of view \"%s\" has %d value-count changes", v->name, d->nvcs);
    for (int i = 0; i < d->nvcs; i++)
        if (d->vcs[i].vc < 0 || d->vcs[i].vc >= v->nvalue_counts)
            return store_fail(err, "value count %d is not one of view \"%s\"", d->vcs[i].vc, v->name);
    /* More changes than a ring row holds: the rest as rows of no count
     * and no sum of the same cell, which add the same. */
    int per_row = (int)ROW_VCS(b->nvcs), at = 0;
    do {
        int n = d->nvcs - at < per_row ? d->nvcs - at : per_row;
        if (stage(b, time, d->keys, at ? NULL : d->counts, at ? NULL : d->sums,
                  n ? d->vcs + at : NULL, n, err))
            return -1;
        at += n;
    } while (at < d->nvcs);
    return 0;
}

/* ---- Draining ------------------------------------------------------------------------ */

/* The staged cells' numbers in time order, or NULL to drain them in
 * staging order (fewer than SORT_FROM_CELLS; spread over 2^32 finest
 * buckets or more; out of memory: each adds the same). A radix sort of
 * (bucket number from the earliest, cell number) pairs, 16 bits a pass,
 * one pass when the cells span fewer than 65,536 buckets (at the hour,
 * seven years), two otherwise. */
static uint32_t *cells_by_time(const struct staging *b)
{
    if (b->ncells < SORT_FROM_CELLS)
        return NULL;
    int64_t first = *cell_time(b, 0), last = first;
    for (uint32_t c = 1; c < b->ncells; c++) {
        int64_t t = *cell_time(b, c);
        first = t < first ? t : first;
        last = t > last ? t : last;
    }
    uint64_t width = (uint64_t)b->view->widths[0], span = ((uint64_t)last - (uint64_t)first) / width;
    if (span > UINT32_MAX)
        return NULL;
    enum { DIGIT_BITS = 16, DIGITS = 1 << DIGIT_BITS };
    uint64_t *pairs = malloc(sizeof *pairs * b->ncells), *spare = malloc(sizeof *spare * b->ncells);
    uint32_t *at = malloc(sizeof *at * DIGITS), *order = NULL;
    if (!pairs || !spare || !at)
        goto out;
    for (uint32_t c = 0; c < b->ncells; c++) /* time's bucket number above, cell's number below */
        pairs[c] = ((uint64_t)*cell_time(b, c) - (uint64_t)first) / width << 32 | c;
    for (int shift = 32; shift < 64 && (shift == 32 || span >> (shift - 32)); shift += DIGIT_BITS) {
        memset(at, 0, sizeof *at * DIGITS);
        for (uint32_t i = 0; i < b->ncells; i++)
            at[pairs[i] >> shift & (DIGITS - 1)]++;
        for (uint32_t d = 0, sum = 0; d < DIGITS; d++) {
            uint32_t n = at[d];
            at[d] = sum;
            sum += n;
        }
        for (uint32_t i = 0; i < b->ncells; i++)
            spare[at[pairs[i] >> shift & (DIGITS - 1)]++] = pairs[i];
        uint64_t *sorted = spare;
        spare = pairs;
        pairs = sorted;
    }
    order = (uint32_t *)spare; /* the cell numbers, into the buffer the sort is done with */
    for (uint32_t i = 0; i < b->ncells; i++)
        order[i] = (uint32_t)pairs[i];
    spare = NULL;
out:
    free(pairs);
    free(spare);
    free(at);
    return order;
}

/* Entry e's group: its cell's place in the drain (rank[cell], or the
 * cell's number without rank) times nvcs, plus its value count. */
static size_t entry_group(const struct staging *b, const uint32_t *rank, const struct staging_entry *e)
{
    return (size_t)(rank ? rank[e->cell] : e->cell) * (size_t)b->nvcs + e->vc;
}

/* The entries ordered by (cell's place in the drain, value count): a
 * counting sort, whose group g = place * nvcs + vc starts at (*start)[g].
 * A cell's place is rank[cell], or its number when rank is NULL: grouped
 * in the order the drain reads them, each cell's runs follow the last
 * one's rather than lying anywhere in the array. */
static struct code_run *group_entries(const struct staging *b, const uint32_t *rank, size_t **start)
{
    size_t ngroups = (size_t)b->ncells * (size_t)b->nvcs;
    size_t *at = calloc(ngroups + 1, sizeof *at);
    struct code_run *runs = malloc(sizeof *runs * (b->nentries + 1));
    if (!at || !runs) {
        free(at);
        free(runs);
        return NULL;
    }
    for (size_t i = 0; i < b->nentries; i++)
        at[entry_group(b, rank, &b->entries[i]) + 1]++;
    for (size_t g = 0; g < ngroups; g++)
        at[g + 1] += at[g];
    for (size_t i = 0; i < b->nentries; i++) {
        const struct staging_entry *e = &b->entries[i];
        runs[at[entry_group(b, rank, e)]++] = (struct code_run){e->code, e->rows};
    }
    /* at[g] is now the end of group g: shift to starts */
    memmove(at + 1, at, sizeof *at * ngroups);
    at[0] = 0;
    *start = at;
    return runs;
}

int staging_drain(struct staging *b, const struct staging_sink *sink, struct store_error *err)
{
    if (flush_ring(b, err)) {
        staging_clear(b);
        return -1;
    }
    /* Drained in time order, a cell's place in the drain is its rank. */
    uint32_t *order = cells_by_time(b), *rank = order ? malloc(sizeof *rank * b->ncells) : NULL;
    if (order && !rank) {
        free(order);
        order = NULL;
    }
    for (uint32_t i = 0; rank && i < b->ncells; i++)
        rank[order[i]] = i;
    size_t *start = NULL;
    struct code_run *runs = group_entries(b, rank, &start);
    free(rank);
    int64_t *codes = malloc(8 * (b->nentries + 1)), *rows = malloc(8 * (b->nentries + 1));
    struct vc_runs *vcs = calloc((size_t)b->nvcs + 1, sizeof *vcs);
    int rc = runs && codes && rows && vcs ? 0 : store_fail(err, "out of memory");
    for (uint32_t i = 0; rc == 0 && i < b->ncells; i++) {
        uint32_t c = order ? order[i] : i;
        if (order && i + DRAIN_AHEAD < b->ncells) { /* in time order, cells lie anywhere */
            __builtin_prefetch(cell_time(b, order[i + DRAIN_AHEAD]));
            __builtin_prefetch(cell_sums(b, order[i + DRAIN_AHEAD]));
        }
        for (int k = 0; rc == 0 && k < b->nvcs; k++) {
            size_t g = (size_t)i * b->nvcs + k, first = start[g];
            int64_t n = store_runs_merge(runs + first, start[g + 1] - first, err);
            if (n < 0) {
                rc = -1;
                break;
            }
            /* Each group's runs land where its entries were: no overlap. */
            for (int64_t j = 0; j < n; j++) {
                codes[first + j] = runs[first + j].code;
                rows[first + j] = runs[first + j].rows;
            }
            vcs[k] = (struct vc_runs){.codes = codes + first, .rows = rows + first,
                                      .n = (uint32_t)n, .cap = (uint32_t)n, .sorted = (uint32_t)n};
        }
        if (rc == 0)
            rc = sink->cell(sink->ctx, *cell_time(b, c), cell_keys(b, c), cell_counts(b, c),
                            cell_sums(b, c), vcs, err);
    }
    uint32_t at = 0;
    for (uint64_t *slot; rc == 0 && (slot = hashtab_next(&b->values, &at));) {
        int64_t gained = *(int64_t *)hashtab_value_of(&b->values, slot);
        const uint64_t *key = hashtab_key_of(slot);
        if (gained != 0)
            rc = sink->value(sink->ctx, (int32_t)key[0], (int64_t)key[1], gained, err);
    }
    free(start);
    free(runs);
    free(codes);
    free(rows);
    free(vcs);
    free(order);
    staging_clear(b);
    return rc;
}
