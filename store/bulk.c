/* bulk.c -- an initial load's rows, summed per cell of the finest width
 * before they reach the cellmaps.
 *
 * In bulk mode (store_set_bulk) the writer hands each row of a view here
 * instead of to a cellmap of every width. Rows are summed into a flat table
 * keyed by (finest bucket, cell keys), which stays in cache because a load
 * reads the fact table in time order; their value counts are appended as
 * (cell, value count, code, rows) entries. A drain then sorts each cell's
 * entries into runs and hands the writer one finest-width cell at a time,
 * which it adds to that width's cell and to each wider width's. A row thus
 * costs one probe of a small table instead of a probe of a large table and
 * a sorted insertion at every width (perf of the load: 44% of it), and the
 * wider widths take one merge per finest cell instead of one per row.
 *
 * A row is added BULK_AHEAD rows after it is staged, in order: staging
 * copies it into a small ring and prefetches its cell's slot (and its
 * values' slots), and half-way along the ring its cell. Rows come in no
 * order within a partition, so each add would otherwise wait on two or
 * three cache misses (perf: 60% of bulk_add's time was those loads).
 *
 * Answers do not change: counts, exact sums and value counts add the same
 * in any order. Float sums add in another order, as they would had
 * PostgreSQL sent the rows in another order. */
#include "store/internal.h"

#include <stdlib.h>
#include <string.h>

/* One row's change to one value count of one staged cell. */
struct bulk_entry {
    uint32_t cell, vc;
    int64_t code, rows;
};

/* A staged row waiting in the ring: this header, then its keys, counts,
 * sums and value-count deltas at the offsets struct bulk records. */
struct ahead_row {
    int64_t time;
    uint64_t hash; /* cell_hash of (time, keys) */
    int nvcs;
};

enum { BULK_AHEAD = 8 };

struct bulk {
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

    struct bulk_entry *entries;
    size_t nentries, entry_cap;

    struct hashtab values;     /* (vc, code) -> rows the view's value gained (int64) */
};

struct bulk *bulk_new(const struct sql_view *view, const struct store_column_type *types)
{
    struct bulk *b = calloc(1, sizeof *b);
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
    b->ring_stride = b->row_vcs_at + sizeof(struct store_vc_delta) * (size_t)b->nvcs;
    b->ring_stride = (b->ring_stride + 15) / 16 * 16;
    hashtab_init(&b->cell_index, 0, sizeof(uint32_t));
    hashtab_init(&b->values, 2, sizeof(int64_t));
    if (!(b->ring = aligned_alloc(16, b->ring_stride * BULK_AHEAD))) {
        free(b);
        return NULL;
    }
    return b;
}

/* The i-th row waiting, oldest first. */
static struct ahead_row *ring_row(const struct bulk *b, uint32_t i)
{
    size_t at = (b->ring_head + i) % BULK_AHEAD;
    return (struct ahead_row *)(b->ring + at * b->ring_stride);
}
static int64_t *row_keys(const struct bulk *b, struct ahead_row *r)
{
    return (int64_t *)((uint8_t *)r + b->row_keys_at);
}
static int64_t *row_counts(const struct bulk *b, struct ahead_row *r)
{
    return (int64_t *)((uint8_t *)r + b->row_counts_at);
}
static struct store_sum *row_sums(const struct bulk *b, struct ahead_row *r)
{
    return (struct store_sum *)((uint8_t *)r + b->row_sums_at);
}
static struct store_vc_delta *row_vcs(const struct bulk *b, struct ahead_row *r)
{
    return (struct store_vc_delta *)((uint8_t *)r + b->row_vcs_at);
}

static int64_t *cell_time(const struct bulk *b, uint32_t c) { return (int64_t *)(b->cells + c * b->stride); }
static int64_t *cell_keys(const struct bulk *b, uint32_t c) { return cell_time(b, c) + 1; }
static int64_t *cell_counts(const struct bulk *b, uint32_t c) { return cell_keys(b, c) + b->nkeys; }
static struct store_sum *cell_sums(const struct bulk *b, uint32_t c)
{
    return (struct store_sum *)(b->cells + c * b->stride + b->sums_at);
}

void bulk_free(struct bulk *b)
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

void bulk_clear(struct bulk *b)
{
    b->ring_len = 0;
    b->ncells = 0;
    b->nentries = 0;
    hashtab_clear(&b->cell_index);
    hashtab_clear(&b->values);
}

bool bulk_empty(const struct bulk *b) { return b->ncells == 0 && b->ring_len == 0; }

/* What is staged, counted by use rather than by capacity: the writer
 * drains at a share of its cache budget, and small budgets (tests) should
 * still stage several rows. */
size_t bulk_bytes(const struct bulk *b)
{
    return b->ncells * (b->stride + 16 * (size_t)b->cell_index.slot_words) +
           b->nentries * sizeof *b->entries + b->values.count * 16 * (size_t)b->values.slot_words;
}

/* ---- Cells ---------------------------------------------------------------------- */

static uint64_t cell_hash(int64_t time, const int64_t *keys, int nkeys)
{
    return hash_words((uint64_t)time, (const uint64_t *)keys, (size_t)nkeys);
}

static int grow_cells(struct bulk *b)
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
    const struct bulk *b;
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
static int64_t find_or_add(struct bulk *b, int64_t time, const int64_t *keys, uint64_t h)
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

static int add_entry(struct bulk *b, uint32_t cell, const struct store_vc_delta *vd)
{
    if (b->nentries == b->entry_cap) {
        size_t cap = b->entry_cap ? b->entry_cap * 2 : 4096;
        struct bulk_entry *e = realloc(b->entries, sizeof *e * cap);
        if (!e)
            return -1;
        b->entries = e;
        b->entry_cap = cap;
    }
    b->entries[b->nentries++] = (struct bulk_entry){cell, (uint32_t)vd->vc, vd->code, vd->delta};
    return 0;
}

static uint64_t value_hash(const struct bulk *b, int32_t vc, int64_t code)
{
    uint64_t key[2] = {(uint64_t)vc, (uint64_t)code};
    return hashtab_hash(&b->values, key);
}

/* Adds rows to (vc, code) in the view's value table. */
static int add_value(struct bulk *b, int32_t vc, int64_t code, int64_t rows)
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
static int add_row(struct bulk *b, struct ahead_row *r, struct store_error *err)
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
static int add_oldest(struct bulk *b, struct store_error *err)
{
    struct ahead_row *r = ring_row(b, 0);
    b->ring_head = (b->ring_head + 1) % BULK_AHEAD;
    b->ring_len--;
    return add_row(b, r, err);
}

/* Adds every staged row, in order. */
static int flush_ring(struct bulk *b, struct store_error *err)
{
    while (b->ring_len)
        if (add_oldest(b, err))
            return -1;
    return 0;
}

/* Half-way along the ring a row's slot has arrived: the cell it names is
 * fetched next (the probe's likely end; a slot of another hash is left). */
static inline __attribute__((always_inline)) void prefetch_cell(const struct bulk *b,
                                                                struct ahead_row *r)
{
    const uint32_t *number = hashtab_home_value(&b->cell_index, r->hash);
    if (number)
        __builtin_prefetch(cell_time(b, *number));
}

int bulk_add(struct bulk *b, int64_t time, const struct store_delta *d, struct store_error *err)
{
    const struct sql_view *v = b->view;
    if (d->nvcs > v->nvalue_counts)
        return store_fail(err, "a row of view \"%s\" has %d value count changes, more than its "
                          "%d value counts", v->name, d->nvcs, v->nvalue_counts);
    for (int i = 0; i < d->nvcs; i++)
        if (d->vcs[i].vc < 0 || d->vcs[i].vc >= v->nvalue_counts)
            return store_fail(err, "value count %d is not one of view \"%s\"", d->vcs[i].vc, v->name);
    struct ahead_row *r = ring_row(b, b->ring_len);
    r->time = time;
    r->hash = cell_hash(time, d->keys, b->nkeys);
    r->nvcs = d->nvcs;
    memcpy(row_keys(b, r), d->keys, 8 * (size_t)b->nkeys);
    memcpy(row_counts(b, r), d->counts, 8 * (size_t)b->ncounts);
    memcpy(row_sums(b, r), d->sums, sizeof *d->sums * (size_t)b->nsums);
    memcpy(row_vcs(b, r), d->vcs, sizeof *d->vcs * (size_t)d->nvcs);
    hashtab_prefetch(&b->cell_index, r->hash);
    if (b->values.cap)
        for (int i = 0; i < d->nvcs; i++)
            hashtab_prefetch(&b->values, value_hash(b, d->vcs[i].vc, d->vcs[i].code));
    b->ring_len++;
    if (b->ring_len > BULK_AHEAD / 2)
        prefetch_cell(b, ring_row(b, b->ring_len - 1 - BULK_AHEAD / 2));
    return b->ring_len == BULK_AHEAD ? add_oldest(b, err) : 0;
}

/* ---- Draining ------------------------------------------------------------------------ */

/* The entries ordered by (cell, value count): a counting sort, whose group
 * g = cell * nvcs + vc starts at (*start)[g]. */
static struct code_run *group_entries(const struct bulk *b, size_t **start)
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
        at[(size_t)b->entries[i].cell * b->nvcs + b->entries[i].vc + 1]++;
    for (size_t g = 0; g < ngroups; g++)
        at[g + 1] += at[g];
    for (size_t i = 0; i < b->nentries; i++) {
        const struct bulk_entry *e = &b->entries[i];
        runs[at[(size_t)e->cell * b->nvcs + e->vc]++] = (struct code_run){e->code, e->rows};
    }
    /* at[g] is now the end of group g: shift to starts */
    memmove(at + 1, at, sizeof *at * ngroups);
    at[0] = 0;
    *start = at;
    return runs;
}

int bulk_drain(struct bulk *b, const struct bulk_sink *sink, struct store_error *err)
{
    if (flush_ring(b, err)) {
        bulk_clear(b);
        return -1;
    }
    size_t *start = NULL;
    struct code_run *runs = group_entries(b, &start);
    int64_t *codes = malloc(8 * (b->nentries + 1)), *rows = malloc(8 * (b->nentries + 1));
    struct vc_runs *vcs = calloc((size_t)b->nvcs + 1, sizeof *vcs);
    int rc = runs && codes && rows && vcs ? 0 : store_fail(err, "out of memory");
    for (uint32_t c = 0; rc == 0 && c < b->ncells; c++) {
        for (int k = 0; rc == 0 && k < b->nvcs; k++) {
            size_t g = (size_t)c * b->nvcs + k, first = start[g];
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
    bulk_clear(b);
    return rc;
}
