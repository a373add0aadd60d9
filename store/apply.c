/* apply.c -- rows into cells: store_apply and store_truncate_view, the
 * overlays, and the cache budget with its spills.
 *
 * A segment not already decoded is not decoded to take a delta: the deltas
 * collect in an overlay (a cellmap of this batch's changes only), merged
 * with the stored block when the segment is written (overlay_materialize,
 * or as a delta block by commit.c's plan). A batch touching every segment
 * (one UPDATE of a million rows spread over six months) then holds the
 * cells it changed, not every cell of the store.
 *
 * A batch still too big for memory spills: past twice the cache budget,
 * the least recently used segments are merged, encoded into the batch's
 * write transaction, opened early and committed by store_commit, and
 * freed; touched again, they start a new overlay merged with what that
 * transaction holds (batch_view). Readers still see the batch whole or not
 * at all. In bulk mode rows are staged first (load.c) and reach the
 * cellmaps by the same pending_segment. */
#include "store/internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- Buckets and spans ---------------------------------------------------------- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int64_t store_bucket_of(const struct sql_view *v, int width, int64_t t)
{
    int64_t w = v->widths[width];
    return v->origin_usec + floor_div(t - v->origin_usec, w) * w;
}

int store_span_buckets(const struct sql_view *v, int width)
{
    if (width == v->nwidths - 1)
        return STORE_MAX_SPAN_BUCKETS; /* see store.h */
    int64_t n = (STORE_MAX_SPAN_BUCKETS * v->widths[0] + v->widths[width] - 1) / v->widths[width];
    return n < 8 ? 8 : n > STORE_MAX_SPAN_BUCKETS ? STORE_MAX_SPAN_BUCKETS : (int)n;
}

int64_t store_span_start(const struct sql_view *v, int width, int64_t bucket)
{
    int64_t span = v->widths[width] * store_span_buckets(v, width);
    return v->origin_usec + floor_div(bucket - v->origin_usec, span) * span;
}

/* The transaction that sees the store as this batch last left it: the
 * batch's own once it spilled (it sees its writes), else a fresh read one
 * (*own set: abort it after). */
int batch_view(struct store *s, MDB_txn **txn, bool *own, struct store_error *err)
{
    *txn = s->pending->txn;
    *own = !*txn;
    return *own ? store_txn_begin(s, MDB_RDONLY, txn, err) : 0;
}

/* Loads stored blocks into m (cellmap_load_segment), then gives their
 * pages back (pages.c): decoded, the writer does not read them again. */
int segment_load_blocks(struct store *s, struct cellmap *m, const MDB_val *blocks, int n,
                       struct store_error *err)
{
    int rc = cellmap_load_segment(m, blocks, n, err);
    segment_blocks_release(s, blocks, n);
    return rc;
}

/* Loads a segment as this batch last left it, deltas merged into the base. */
static int load_segment(struct store *s, struct cellmap *m, const uint8_t key[SEG_KEY_BYTES],
                        bool *found, struct store_error *err)
{
    MDB_txn *txn;
    bool own;
    if (batch_view(s, &txn, &own, err))
        return -1;
    MDB_val blocks[1 + STORE_MAX_DELTAS];
    int n, rc = segment_blocks(s, txn, key, blocks, &n), ret = 0;
    *found = rc == 0 && n > 0;
    if (rc)
        ret = store_lmdb_error(err, rc, "reading a segment");
    else if (n > 0)
        ret = segment_load_blocks(s, m, blocks, n, err);
    if (own)
        mdb_txn_abort(txn);
    return ret;
}

/* The segment (view, width, span) of the batch, an overlay when it was not
 * decoded: also one an encode job holds, when a load job's drain sends a
 * late row to it (see struct load_job). */
struct cellmap *pending_segment(struct store *s, int view, int width, int64_t span,
                                   struct store_error *err)
{
    struct pending *p = s->pending;
    const struct sql_view *v = &s->views->views[view];
    int64_t number = (span - v->origin_usec) / (v->widths[width] * store_span_buckets(v, width));
    struct segment_memo *memo = &p->memo[p->memo_first[view] + width * SEGMENT_MEMO_SPANS +
                                         (number & (SEGMENT_MEMO_SPANS - 1))];
    struct bytemap_entry *e = memo->e;
    if (!e || memo->span != span || memo->removals != p->segments.removals) {
        uint8_t key[SEG_KEY_BYTES];
        seg_key(key, view, width, span);
        if (!(e = bytemap_upsert(&p->segments, key, sizeof key))) {
            store_fail(err, "out of memory");
            return NULL;
        }
        *memo = (struct segment_memo){e, span, p->segments.removals};
    }
    if (!e->ptr) {
        /* Not decoded: the batch's deltas collect in an overlay, written as
         * a delta block or merged with the stored blocks at commit. A view
         * emptied in this batch has nothing stored to merge with. */
        struct cellmap *m = cellmap_new(v, s->types[view], view, width, span);
        if (!m) {
            store_fail(err, "out of memory");
            bytemap_remove(&p->segments, e);
            return NULL;
        }
        m->overlay = !atomic_load_explicit(&p->truncated[view], memory_order_relaxed);
        e->ptr = m;
        p->bytes += m->bytes;
    }
    struct cellmap *m = e->ptr;
    m->last_used = ++p->clock;
    return m;
}

/* Adds rows to the batch's change of (view, value count, code) in the
 * view's value dictionary. */
int pending_add_value_rows(struct pending *p, int view, int vc, int64_t code, int64_t rows,
                          struct store_error *err)
{
    uint64_t key[2];
    pending_value_key(key, view, vc, code);
    bool added;
    int64_t *sum = hashtab_upsert(&p->values, key, hashtab_hash(&p->values, key), &added);
    if (!sum)
        return store_fail(err, "out of memory");
    *sum += rows;
    return 0;
}

static int add_value_deltas(struct pending *p, const struct store_delta *d,
                            struct store_error *err)
{
    for (int i = 0; i < d->nvcs; i++)
        if (pending_add_value_rows(p, d->view, d->vcs[i].vc, d->vcs[i].code, d->vcs[i].delta, err))
            return -1;
    return 0;
}

/* ---- The apply queue ------------------------------------------------------------
 * A row's cells are spread over memory the cache does not hold: at every
 * width a hash slot, the cell it names and the cell's value-count runs,
 * each a miss that the next waits on. So store_apply queues a row (a copy:
 * the caller's arrays are its own again at return) and the queue is
 * applied as a pipeline, a row's slots asked for (cellmap_prefetch) when
 * it enters, its cells APPLY_AHEAD rows later, its runs APPLY_AHEAD after
 * that, and the row applied APPLY_AHEAD after that: the misses of a dozen
 * rows overlap rather than follow one another. Asked for row by row, the
 * widths of one row overlapped, but each level of one row still waited on
 * the one above it (perf of the physical follower's deletes: the slot's
 * miss alone, in cellmap_prefetch_cell, 5 to 7% of ingest).
 *
 * Queued rows are part of the batch (invariants):
 *   1. The queue is applied whole, in its order, before anything reads or
 *      writes the batch's segments: a commit, a truncate, a switch to bulk
 *      mode (apply_queue_flush); a compaction refuses a batch with rows
 *      queued; a reset empties it.
 *   2. What can be checked of a row alone (its view, its time, its value
 *      counts) is checked when it is queued; what fails when it is applied
 *      (an overflow, memory) fails a later store_apply or the commit, and
 *      the batch with it, as a failed store_apply always did.
 *   3. The queue holds at most APPLY_QUEUE_ROWS rows and a sixteenth of
 *      the cache budget in bytes (as a load's staging does), so the cache
 *      budget still bounds the batch. */
enum { APPLY_QUEUE_ROWS = 256, APPLY_AHEAD = 4 };

/* Where a queued row's arrays lie from its start: keys, counts, sums (16
 * bytes aligned), vcs; total, the next row's start. */
struct queued_layout {
    size_t counts, sums, vcs, total;
};

static struct queued_layout queued_layout(const struct sql_view *v, int nvcs)
{
    struct queued_layout l;
    l.counts = 8 * (size_t)v->ncell_keys;
    l.sums = align_up(l.counts + 8 * (size_t)v->ncounts, 16);
    l.vcs = l.sums + sizeof(struct store_sum) * (size_t)v->nsums;
    l.total = align_up(l.vcs + sizeof(struct store_vc_delta) * (size_t)nvcs, 16);
    return l;
}

struct queued_arrays {
    int64_t *keys, *counts;
    struct store_sum *sums;
    struct store_vc_delta *vcs;
};

static struct queued_arrays queued_arrays(const struct sql_view *v, unsigned char *p, int nvcs)
{
    struct queued_layout l = queued_layout(v, nvcs);
    return (struct queued_arrays){(int64_t *)p, (int64_t *)(p + l.counts),
                                  (struct store_sum *)(p + l.sums),
                                  (struct store_vc_delta *)(p + l.vcs)};
}

static int queue_push(struct store *s, const struct store_delta *d, struct store_error *err)
{
    struct apply_queue *q = &s->pending->queue;
    const struct sql_view *v = &s->views->views[d->view];
    if (d->nvcs < 0)
        return store_fail(err, "a row of view \"%s\" has %d value-count changes", v->name, d->nvcs);
    for (int i = 0; i < d->nvcs; i++)
        if (d->vcs[i].vc < 0 || d->vcs[i].vc >= v->nvalue_counts)
            return store_fail(err, "value count %d is not one of view \"%s\"", d->vcs[i].vc, v->name);
    size_t bytes = queued_layout(v, d->nvcs).total;
    if (!q->rows && !(q->rows = malloc(APPLY_QUEUE_ROWS * sizeof *q->rows)))
        return store_fail(err, "out of memory");
    if (q->used + bytes > q->cap) {
        size_t cap = q->cap ? q->cap : 16384;
        while (cap < q->used + bytes)
            cap *= 2;
        unsigned char *b = aligned_alloc(16, cap);
        if (!b)
            return store_fail(err, "out of memory");
        if (q->used)
            memcpy(b, q->bytes, q->used);
        free(q->bytes);
        q->bytes = b;
        q->cap = cap;
    }
    struct queued_arrays a = queued_arrays(v, q->bytes + q->used, d->nvcs);
    if (v->ncell_keys)
        memcpy(a.keys, d->keys, 8 * (size_t)v->ncell_keys);
    if (v->ncounts)
        memcpy(a.counts, d->counts, 8 * (size_t)v->ncounts);
    if (v->nsums)
        memcpy(a.sums, d->sums, sizeof *a.sums * (size_t)v->nsums);
    if (d->nvcs)
        memcpy(a.vcs, d->vcs, sizeof *a.vcs * (size_t)d->nvcs);
    q->rows[q->n++] = (struct queued_row){d->view, d->nvcs, d->time, q->used};
    q->used += bytes;
    return 0;
}

static struct store_delta queued_delta(struct store *s, const struct apply_queue *q, int i)
{
    const struct queued_row *r = &q->rows[i];
    struct queued_arrays a = queued_arrays(&s->views->views[r->view], q->bytes + r->at, r->nvcs);
    return (struct store_delta){r->view, r->time, a.keys, a.counts, a.sums, a.vcs, r->nvcs};
}

/* Row i's segment and bucket at every width, and its hash slots asked for. */
static int queue_locate(struct store *s, struct apply_queue *q, int i, struct store_error *err)
{
    const struct queued_row *r = &q->rows[i];
    const struct sql_view *v = &s->views->views[r->view];
    const int64_t *keys = (const int64_t *)(q->bytes + r->at);
    for (int w = 0; w < v->nwidths; w++) {
        struct queued_cell *c = &q->cells[(size_t)i * (size_t)q->max_widths + (size_t)w];
        int64_t bucket = store_bucket_of(v, w, r->time);
        int64_t span = store_span_start(v, w, bucket);
        if (!(c->m = pending_segment(s, r->view, w, span, err)))
            return -1;
        c->at = (uint32_t)((bucket - span) / v->widths[w]);
        c->hash = cellmap_prefetch(c->m, c->at, keys);
    }
    return 0;
}

static const struct queued_cell *queue_cells(const struct apply_queue *q, int i)
{
    return &q->cells[(size_t)i * (size_t)q->max_widths];
}

static int queue_apply(struct store *s, struct apply_queue *q, int i, struct store_error *err)
{
    struct pending *p = s->pending;
    struct store_delta d = queued_delta(s, q, i);
    const struct queued_cell *c = queue_cells(q, i);
    for (int w = 0; w < s->views->views[d.view].nwidths; w++) {
        size_t before = c[w].m->bytes;
        if (cellmap_apply(c[w].m, c[w].at, &d, err))
            return -1;
        p->bytes += c[w].m->bytes - before;
    }
    return add_value_deltas(p, &d, err);
}

int apply_queue_flush(struct store *s, struct store_error *err)
{
    struct apply_queue *q = &s->pending->queue;
    int n = q->n, rc = 0;
    if (n && !q->cells) {
        int most = 1;
        for (int v = 0; v < s->views->nviews; v++)
            most = s->views->views[v].nwidths > most ? s->views->views[v].nwidths : most;
        if (!(q->cells = malloc(APPLY_QUEUE_ROWS * (size_t)most * sizeof *q->cells)))
            rc = store_fail(err, "out of memory");
        q->max_widths = most;
    }
    for (int i = 0; rc == 0 && i < n + 3 * APPLY_AHEAD; i++) {
        if (i < n)
            rc = queue_locate(s, q, i, err);
        for (int stage = 1; rc == 0 && stage <= 2; stage++) {
            int j = i - stage * APPLY_AHEAD;
            if (j < 0 || j >= n)
                continue;
            const struct queued_cell *c = queue_cells(q, j);
            for (int w = 0; w < s->views->views[q->rows[j].view].nwidths; w++)
                if (stage == 1)
                    cellmap_prefetch_cell(c[w].m, c[w].hash);
                else
                    cellmap_prefetch_runs(c[w].m, c[w].hash);
        }
        int j = i - 3 * APPLY_AHEAD;
        if (rc == 0 && j >= 0 && j < n)
            rc = queue_apply(s, q, j, err);
    }
    apply_queue_clear(q); /* applied, or the batch is broken (invariant 2) */
    return rc;
}

void apply_queue_clear(struct apply_queue *q)
{
    q->n = 0;
    q->used = 0;
}

void apply_queue_free(struct apply_queue *q)
{
    free(q->rows);
    free(q->bytes);
    free(q->cells);
    *q = (struct apply_queue){0};
}

int store_apply(struct store *s, const struct store_delta *d, struct store_error *err)
{
    if (store_need_writer(s, err))
        return -1;
    if (d->view < 0 || d->view >= s->views->nviews)
        return store_fail(err, "view %d does not exist", d->view);
    /* Before store_bucket_of: outside these times its arithmetic overflows. */
    if (d->time < STORE_MIN_TIME || d->time >= STORE_MAX_TIME) {
        char when[64];
        store_code_format(&(struct store_column_type){STORE_TYPE_TIMESTAMP, 0, 0}, d->time, when,
                          sizeof when);
        return store_fail(err, "a row of view \"%s\" has the time %s, outside the times a "
                          "store keeps (4713 BC to the year 100000)",
                          s->views->views[d->view].name, when);
    }
    if (d->nvcs == 0 && !accumulators_change(&s->views->views[d->view], d->counts, d->sums))
        return 0; /* changes nothing (an update's two rows that agree on what the view reads) */
    if (s->bulk)
        return load_stage_row(s, d, err);
    struct pending *p = s->pending;
    if (queue_push(s, d, err))
        return -1;
    if (p->queue.n < APPLY_QUEUE_ROWS && p->queue.used <= s->cache_bytes / 16)
        return 0; /* invariant 3 */
    if (apply_queue_flush(s, err))
        return -1;
    return p->bytes > 2 * s->cache_bytes ? cache_spill(s, err) : 0;
}

int store_truncate_view(struct store *s, int view, struct store_error *err)
{
    if (store_need_writer(s, err))
        return -1;
    if (view < 0 || view >= s->views->nviews)
        return store_fail(err, "view %d does not exist", view);
    struct pending *p = s->pending;
    if (apply_queue_flush(s, err) || load_settle(s, err)) {
        pending_reset(p, s->views);
        return -1;
    }
    if (p->bulk[view]) /* rows staged before the truncate are gone with it */
        bulk_clear(p->bulk[view]);
    BYTEMAP_EACH(&p->segments, e)
    {
        if (((struct cellmap *)e->ptr)->view_index == view)
            pending_forget(p, e);
    }
    uint32_t at = 0;
    for (uint64_t *slot; (slot = hashtab_next(&p->values, &at));)
        if (hashtab_key_of(slot)[0] >> 32 == (uint64_t)view) /* no removal: zero, not written */
            *(int64_t *)hashtab_value_of(&p->values, slot) = 0;
    atomic_store_explicit(&p->truncated[view], true, memory_order_relaxed);
    return p->txn ? batch_truncate(s, p->txn, err) : 0;
}

/* The least recently used segment held, only among clean ones unless
 * dirty too; NULL when there is none. */
static struct bytemap_entry *oldest_segment(struct pending *p, bool dirty_too)
{
    struct bytemap_entry *oldest = NULL;
    BYTEMAP_EACH(&p->segments, e)
    {
        struct cellmap *m = e->ptr;
        if ((dirty_too || !m->dirty) &&
            (!oldest || m->last_used < ((struct cellmap *)oldest->ptr)->last_used))
            oldest = e;
    }
    return oldest;
}

/* Keeps the clean decoded segments under the cache budget, oldest first. */
void cache_evict(struct store *s)
{
    struct bytemap_entry *e;
    while (s->pending->bytes > s->cache_bytes && (e = oldest_segment(s->pending, false)))
        pending_forget(s->pending, e);
}

/* Turns an overlay into the whole segment: the stored block as this batch
 * last left it, plus the overlay's deltas. */
int overlay_materialize(struct store *s, struct bytemap_entry *e, struct store_error *err)
{
    struct pending *p = s->pending;
    struct cellmap *o = e->ptr;
    if (!o->overlay)
        return 0;
    struct cellmap *m = cellmap_new(o->view, o->types, o->view_index, o->width, o->span_start);
    bool found;
    if (!m)
        return store_fail(err, "out of memory");
    if (load_segment(s, m, e->key, &found, err)) {
        cellmap_free(m);
        return -1;
    }
    if (!found) { /* a new segment: the overlay is all of it */
        cellmap_free(m);
        o->overlay = false;
        return 0;
    }
    if (cellmap_merge(m, o, err)) {
        cellmap_free(m);
        return -1;
    }
    m->last_used = o->last_used;
    p->bytes += m->bytes;
    pending_unhold(p, o);
    cellmap_free(o);
    e->ptr = m;
    return 0;
}

/* Writes the least recently used segments into the batch's transaction
 * until what is held fits the cache budget: clean ones are dropped first,
 * they are in the store already. */
int cache_spill(struct store *s, struct store_error *err)
{
    struct pending *p = s->pending;
    cache_evict(s);
    struct bytemap_entry *e;
    while (p->bytes > s->cache_bytes && (e = oldest_segment(p, true)))
        if (segment_spill(s, e, NULL, err))
            return -1;
    return 0;
}
