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
 * at all. Rows are staged first (staging.c), summed per finest cell, and
 * drained into the cellmaps of every width in time order. */
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

/* ---- Staged rows into cells --------------------------------------------------
 * store_apply stages a row (staging.c); a drain adds each staged cell of
 * the finest width to its cell at every width, on the caller's thread
 * (pending_drain, or past a sixteenth of the cache budget) or, in a load,
 * on the load job's (load.c). */

struct drain {
    struct store *s;
    int view;
    struct cellmap **last; /* per width: the segment the last cell went to */
};

/* A finest-width cell, added to its cell at every width. */
static int drain_cell(void *ctx, int64_t time, const int64_t *keys, const int64_t *counts,
                      const struct store_sum *sums, const struct vc_runs *runs,
                      struct store_error *err)
{
    struct drain *dr = ctx;
    struct store *s = dr->s;
    const struct sql_view *v = &s->views->views[dr->view];
    for (int w = 0; w < v->nwidths; w++) {
        int64_t bucket = store_bucket_of(v, w, time);
        int64_t span = store_span_start(v, w, bucket);
        struct cellmap *m = dr->last[w];
        if ((!m || m->span_start != span) &&
            !(m = dr->last[w] = pending_segment(s, dr->view, w, span, err)))
            return -1;
        size_t before = m->bytes;
        if (cellmap_add_cell(m, (uint32_t)((bucket - span) / v->widths[w]), keys, counts, sums, runs, err))
            return -1;
        s->pending->bytes += m->bytes - before;
    }
    return 0;
}

static int drain_value(void *ctx, int vc, int64_t code, int64_t rows, struct store_error *err)
{
    struct drain *dr = ctx;
    return pending_add_value_rows(dr->s->pending, dr->view, vc, code, rows, err);
}

/* Moves a view's staged rows (b) into its cellmaps. Nothing frees a
 * cellmap meanwhile (spills happen between rows), so drain.last stays
 * valid. */
static int drain_view(struct store *s, struct staging *b, int view, struct store_error *err)
{
    if (!b || staging_empty(b))
        return 0;
    struct drain dr = {s, view, calloc((size_t)s->views->views[view].nwidths, sizeof *dr.last)};
    if (!dr.last)
        return store_fail(err, "out of memory");
    struct staging_sink sink = {&dr, drain_cell, drain_value};
    int rc = staging_drain(b, &sink, err);
    free(dr.last);
    return rc;
}

int pending_drain_set(struct store *s, struct staging **set, struct store_error *err)
{
    for (int v = 0; v < s->views->nviews; v++)
        if (drain_view(s, set[v], v, err))
            return -1;
    return 0;
}

int pending_drain(struct store *s, struct store_error *err)
{
    return load_settle(s, err) || pending_drain_set(s, s->pending->staging, err) ? -1 : 0;
}

/* Stages a row; a sixteenth of the cache budget staged is drained. */
static int stage_row(struct store *s, const struct store_delta *d, struct store_error *err)
{
    struct pending *p = s->pending;
    const struct sql_view *v = &s->views->views[d->view];
    if (!p->staging[d->view] && !(p->staging[d->view] = staging_new(v, s->types[d->view])))
        return store_fail(err, "out of memory");
    struct staging *b = p->staging[d->view];
    if (staging_add(b, store_bucket_of(v, 0, d->time), d, err))
        return -1;
    if (staging_bytes(b) <= s->cache_bytes / 16)
        return 0;
    /* In a load the cellmaps are the load job's until it ends. A drain
     * here is what grows the segments held on this thread: past twice
     * the budget they spill. */
    if (load_settle(s, err) || drain_view(s, b, d->view, err))
        return -1;
    return p->bytes > 2 * s->cache_bytes ? cache_spill(s, err) : 0;
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
    return stage_row(s, d, err);
}

int store_truncate_view(struct store *s, int view, struct store_error *err)
{
    if (store_need_writer(s, err))
        return -1;
    if (view < 0 || view >= s->views->nviews)
        return store_fail(err, "view %d does not exist", view);
    struct pending *p = s->pending;
    if (load_settle(s, err)) {
        pending_reset(p, s->views);
        return -1;
    }
    if (p->staging[view]) /* rows staged before the truncate are gone with it */
        staging_clear(p->staging[view]);
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
