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
    uint8_t key[VALUE_KEY_BYTES];
    triple_key(key, view, vc, code);
    struct bytemap_entry *e = bytemap_upsert(&p->values, key, sizeof key);
    if (!e)
        return store_fail(err, "out of memory");
    e->num += rows;
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
    if (s->bulk)
        return load_stage_row(s, d, err);
    struct pending *p = s->pending;
    if (p->bytes > 2 * s->cache_bytes && cache_spill(s, err))
        return -1;
    /* A row's widths a few at a time, in passes: each width's segment and
     * hash slot asked for, then each slot's cell, then the deltas. Rows
     * spread over the buckets miss the cache at every width's slot and
     * cell, and asked for together the misses overlap rather than follow
     * one another. (Asking for each cell's value-count runs too, a third
     * pass, gained nothing measurable.) */
    enum { WIDTHS_AHEAD = 8 };
    const struct sql_view *v = &s->views->views[d->view];
    for (int w0 = 0; w0 < v->nwidths; w0 += WIDTHS_AHEAD) {
        int n = v->nwidths - w0 < WIDTHS_AHEAD ? v->nwidths - w0 : WIDTHS_AHEAD;
        struct cellmap *maps[WIDTHS_AHEAD];
        uint32_t at[WIDTHS_AHEAD];
        uint64_t hash[WIDTHS_AHEAD];
        for (int i = 0; i < n; i++) {
            int64_t bucket = store_bucket_of(v, w0 + i, d->time);
            int64_t span = store_span_start(v, w0 + i, bucket);
            if (!(maps[i] = pending_segment(s, d->view, w0 + i, span, err)))
                return -1;
            at[i] = (uint32_t)((bucket - span) / v->widths[w0 + i]);
            hash[i] = cellmap_prefetch(maps[i], at[i], d->keys);
        }
        for (int i = 0; i < n; i++)
            cellmap_prefetch_cell(maps[i], hash[i]);
        for (int i = 0; i < n; i++) {
            size_t before = maps[i]->bytes;
            if (cellmap_apply(maps[i], at[i], d, err))
                return -1;
            p->bytes += maps[i]->bytes - before;
        }
    }
    return add_value_deltas(p, d, err);
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
    if (p->bulk[view]) /* rows staged before the truncate are gone with it */
        bulk_clear(p->bulk[view]);
    BYTEMAP_EACH(&p->segments, e)
    {
        if (((struct cellmap *)e->ptr)->view_index == view)
            pending_forget(p, e);
    }
    BYTEMAP_EACH(&p->values, e)
    {
        if (be_load_u16(e->key) == view)
            bytemap_remove(&p->values, e);
    }
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
