/* writer.c -- the store's writer: deltas, dictionaries, projections and the
 * position, committed together.
 *
 * Everything a batch changes is held in memory until store_commit: decoded
 * segments (cellmaps) in a cache, value-dictionary deltas, new dictionary
 * entries and projection operations in order. store_commit writes it all
 * with the position in one LMDB write transaction and commits once: a source
 * transaction is either wholly in the store or not at all, and so is the
 * position that says so. The commit writes each segment into the
 * transaction as soon as it is encoded, as a spill does (below), to hold
 * each segment's bytes once. A load (bulk mode) drains each partition and
 * encodes the segments it is done with on other threads while the next
 * partition is staged (a load job, below), and writes what they encoded at
 * its next hand-off or commit.
 *
 * A segment not already decoded is not decoded to take a delta: the deltas
 * collect in an overlay (a cellmap of this batch's changes only), merged
 * with the stored block when the segment is written. A batch touching every
 * segment (one UPDATE of a million rows spread over six months) then holds
 * the cells it changed, not every cell of the store.
 *
 * A batch still too big for memory spills: past twice the cache budget, the
 * least recently used segments are merged, encoded into the batch's write
 * transaction, opened early and committed by store_commit, and freed;
 * touched again, they start a new overlay merged with what that
 * transaction holds. Readers still see the batch whole or not at all.
 * The map is grown before the transaction opens, generously, because it
 * cannot grow while the transaction is open: a map that fills up anyway
 * fails the batch, which the caller replays from the stored position. */
#include "store/bytemap.h"
#include "store/internal.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

enum proj_op_kind { PROJ_PUT, PROJ_DELETE, PROJ_TRUNCATE };

struct proj_op {
    enum proj_op_kind kind;
    int view, join;
    int64_t key;
    void *row;
    size_t row_len;
};

struct pending {
    /* Read for every row a load stages (stage_row), so apart from the
     * fields a load job writes beside the caller (the segments, the value
     * deltas, the clock, the held bytes): sharing a cache line with those
     * cost the row a miss (perf). */
    struct bulk **bulk;       /* per view: rows staged in bulk mode (bulk.c), NULL until one */
    struct bulk **spare;      /* the other staging set, which a load job drains */
    char apart[64];
    struct bytemap segments;  /* seg key -> struct cellmap * */
    struct bytemap values;    /* value key -> num: row delta */
    struct bytemap dict;      /* dict key -> num: id; ptr: the text (malloc'd) */
    struct bytemap dict_next; /* (view, column) -> num: next id */
    struct proj_op *proj;
    size_t nproj, proj_cap;
    bool *truncated;          /* per view: emptied in this batch */
    struct load_job *load;    /* a load's partition being drained and encoded
                                 (store_hand_off_cold), or NULL */
    size_t bytes_seen;        /* bytes when the load job started (store_cached_bytes) */
    uint64_t clock;
    uint64_t committed_clock; /* the clock at the last commit: a segment used
                                 since is hot (store_commit_cold) */
    size_t bytes;             /* decoded bytes of the segments held */
    MDB_txn *txn;             /* the batch's write transaction, once it spilled */
    uint8_t (*folds)[SEG_KEY_BYTES]; /* segments to fold after the commit (plan_write) */
    size_t nfolds, folds_cap;
    struct encode_job *job;   /* a load's segments handed off (encoder.c), written
                                 by the next settle_load or commit (flush_job):
                                 outside a load job, no segment is both pending
                                 and in it */
    bool job_left;            /* the last hand-off left job at work unwritten */
};

int pending_new(struct store *s, struct store_error *err)
{
    s->pending = calloc(1, sizeof *s->pending);
    if (!s->pending || !(s->pending->truncated = calloc((size_t)s->views->nviews, 1)) ||
        !(s->pending->bulk = calloc((size_t)s->views->nviews, sizeof *s->pending->bulk)) ||
        !(s->pending->spare = calloc((size_t)s->views->nviews, sizeof *s->pending->spare)))
        return store_fail(err, "out of memory");
    return 0;
}

/* Takes a segment's decoded bytes off what the batch holds. */
static void unhold(struct pending *p, const struct cellmap *m)
{
    p->bytes -= m->bytes < p->bytes ? m->bytes : p->bytes;
}

static void forget_segment(struct pending *p, struct bytemap_entry *e)
{
    struct cellmap *m = e->ptr;
    unhold(p, m);
    cellmap_free(m);
    bytemap_remove(&p->segments, e);
}

/* The held bytes, counted afresh (encoding drops dead cells). */
static void recount(struct pending *p)
{
    p->bytes = 0;
    BYTEMAP_EACH(&p->segments, e)
    p->bytes += ((struct cellmap *)e->ptr)->bytes;
}

static void drop_segments(struct pending *p, bool all)
{
    BYTEMAP_EACH(&p->segments, e)
    {
        if (all || ((struct cellmap *)e->ptr)->dirty)
            forget_segment(p, e);
    }
}

static int join_load(struct pending *p, int nviews, struct store_error *err);

/* Forgets the batch: everything not yet committed. */
static void pending_reset(struct pending *p, const struct sql_view_list *views)
{
    struct store_error ignored; /* the batch goes either way */
    join_load(p, views->nviews, &ignored);
    if (p->txn) {
        mdb_txn_abort(p->txn);
        p->txn = NULL;
    }
    encode_job_free(p->job);
    p->job = NULL;
    drop_segments(p, true);
    p->bytes = 0;
    bytemap_clear(&p->values);
    BYTEMAP_EACH(&p->dict, e) free(e->ptr);
    bytemap_clear(&p->dict);
    bytemap_clear(&p->dict_next); /* re-read from the store: ids of a dropped batch are reused */
    for (size_t i = 0; i < p->nproj; i++)
        free(p->proj[i].row);
    p->nproj = 0;
    memset(p->truncated, 0, (size_t)views->nviews);
    for (int v = 0; v < views->nviews; v++) {
        if (p->bulk[v])
            bulk_clear(p->bulk[v]);
        if (p->spare[v])
            bulk_clear(p->spare[v]);
    }
    p->nfolds = 0;
}

void pending_free(struct store *s)
{
    if (!s->pending)
        return;
    pending_reset(s->pending, s->views);
    bytemap_clear(&s->pending->segments);
    free(s->pending->proj);
    free(s->pending->folds);
    free(s->pending->truncated);
    for (int v = 0; v < s->views->nviews; v++) {
        bulk_free(s->pending->bulk ? s->pending->bulk[v] : NULL);
        bulk_free(s->pending->spare ? s->pending->spare[v] : NULL);
    }
    free(s->pending->bulk);
    free(s->pending->spare);
    free(s->pending);
    s->pending = NULL;
}

void store_set_cache_bytes(struct store *s, size_t bytes) { s->cache_bytes = bytes; }
void store_set_inline_fold_bytes(struct store *s, size_t bytes) { s->inline_fold_bytes = bytes; }

static int settle_load(struct store *s, struct store_error *err);

int store_set_bulk(struct store *s, bool bulk, struct store_error *err)
{
    /* A load's work still in flight goes into the batch's transaction
     * first, so that reads outside bulk mode need not look for it; the
     * next commit commits it. */
    if (s->pending && settle_load(s, err)) {
        pending_reset(s->pending, s->views);
        return -1;
    }
    s->bulk = bulk;
    if (!bulk && s->pending) /* decoded segments would take changes whole: drop the clean ones */
        BYTEMAP_EACH(&s->pending->segments, e)
        {
            if (!((struct cellmap *)e->ptr)->dirty)
                forget_segment(s->pending, e);
        }
    return 0;
}

size_t store_cached_bytes(struct store *s)
{
    if (!s->pending)
        return 0;
    /* A load job is changing bytes: what it held when it started. */
    size_t bytes = s->pending->load ? s->pending->bytes_seen : s->pending->bytes;
    for (int v = 0; v < s->views->nviews; v++)
        if (s->pending->bulk[v])
            bytes += bulk_bytes(s->pending->bulk[v]);
    return bytes;
}

static int need_writer(struct store *s, struct store_error *err)
{
    if (!s->pending)
        return store_fail(err, "the store at %s is open read-only", s->dir);
    return 0;
}

/* ---- Buckets and spans ---------------------------------------------------------- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t bucket_of(const struct sql_view *v, int width, int64_t t)
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

/* ---- Segments ---------------------------------------------------------------------- */

/* The transaction that sees the store as this batch last left it: the
 * batch's own once it spilled (it sees its writes), else a fresh read one
 * (*own set: abort it after). */
static int batch_view(struct store *s, MDB_txn **txn, bool *own, struct store_error *err)
{
    *txn = s->pending->txn;
    *own = !*txn;
    return *own ? store_txn_begin(s, MDB_RDONLY, txn, err) : 0;
}

/* Loads stored blocks into m (cellmap_load_segment), then gives their
 * pages back (pages.c): decoded, the writer does not read them again. */
static int load_blocks(struct store *s, struct cellmap *m, const MDB_val *blocks, int n,
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
        ret = load_blocks(s, m, blocks, n, err);
    if (own)
        mdb_txn_abort(txn);
    return ret;
}

/* The segment (view, width, span) of the batch, an overlay when it was not
 * decoded: also one an encode job holds, when a load job's drain sends a
 * late row to it (see struct load_job). */
static struct cellmap *get_segment(struct store *s, int view, int width, int64_t span,
                                   struct store_error *err)
{
    struct pending *p = s->pending;
    uint8_t key[SEG_KEY_BYTES];
    seg_key(key, view, width, span);
    struct bytemap_entry *e = bytemap_upsert(&p->segments, key, sizeof key);
    if (!e) {
        store_fail(err, "out of memory");
        return NULL;
    }
    if (!e->ptr) {
        /* Not decoded: the batch's deltas collect in an overlay, written as
         * a delta block or merged with the stored blocks at commit. A view
         * emptied in this batch has nothing stored to merge with. */
        struct cellmap *m = cellmap_new(&s->views->views[view], s->types[view], view, width, span);
        if (!m) {
            store_fail(err, "out of memory");
            bytemap_remove(&p->segments, e);
            return NULL;
        }
        m->overlay = !p->truncated[view];
        e->ptr = m;
        p->bytes += m->bytes;
    }
    struct cellmap *m = e->ptr;
    m->last_used = ++p->clock;
    return m;
}

/* Adds rows to the batch's change of (view, value count, code) in the
 * view's value dictionary. */
static int add_value_rows(struct pending *p, int view, int vc, int64_t code, int64_t rows,
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
        if (add_value_rows(p, d->view, d->vcs[i].vc, d->vcs[i].code, d->vcs[i].delta, err))
            return -1;
    return 0;
}

static int spill(struct store *s, struct store_error *err);
static int truncate_in_txn(struct store *s, MDB_txn *txn, struct store_error *err);

/* ---- Bulk staging: rows summed per finest cell first (bulk.c) ---------------------- */

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
        int64_t bucket = bucket_of(v, w, time);
        int64_t span = store_span_start(v, w, bucket);
        struct cellmap *m = dr->last[w];
        if ((!m || m->span_start != span) &&
            !(m = dr->last[w] = get_segment(s, dr->view, w, span, err)))
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
    return add_value_rows(dr->s->pending, dr->view, vc, code, rows, err);
}

/* Moves a view's staged rows (b) into its cellmaps. Nothing frees a
 * cellmap meanwhile (spills happen between rows), so drain.last stays
 * valid. */
static int drain_view(struct store *s, struct bulk *b, int view, struct store_error *err)
{
    if (!b || bulk_empty(b))
        return 0;
    struct drain dr = {s, view, calloc((size_t)s->views->views[view].nwidths, sizeof *dr.last)};
    if (!dr.last)
        return store_fail(err, "out of memory");
    struct bulk_sink sink = {&dr, drain_cell, drain_value};
    int rc = bulk_drain(b, &sink, err);
    free(dr.last);
    return rc;
}

/* Drains a staging set: the writer's (s->pending->bulk) or a load job's. */
static int drain_set(struct store *s, struct bulk **set, struct store_error *err)
{
    for (int v = 0; v < s->views->nviews; v++)
        if (drain_view(s, set[v], v, err))
            return -1;
    return 0;
}

static int drain_all(struct store *s, struct store_error *err)
{
    return settle_load(s, err) || drain_set(s, s->pending->bulk, err) ? -1 : 0;
}

/* Stages a row; a quarter of the cache budget staged is drained. */
static int stage_row(struct store *s, const struct store_delta *d, struct store_error *err)
{
    struct pending *p = s->pending;
    const struct sql_view *v = &s->views->views[d->view];
    if (!p->bulk[d->view] && !(p->bulk[d->view] = bulk_new(v, s->types[d->view])))
        return store_fail(err, "out of memory");
    struct bulk *b = p->bulk[d->view];
    if (bulk_add(b, bucket_of(v, 0, d->time), d, err))
        return -1;
    if (bulk_bytes(b) <= s->cache_bytes / 16)
        return 0;
    /* The cellmaps are the load job's until it ends. A drain here is what
     * grows the segments held on this thread in bulk mode: past twice the
     * budget they spill, as store_apply's would. */
    if (settle_load(s, err) || drain_view(s, b, d->view, err))
        return -1;
    return p->bytes > 2 * s->cache_bytes ? spill(s, err) : 0;
}

int store_apply(struct store *s, const struct store_delta *d, struct store_error *err)
{
    if (need_writer(s, err))
        return -1;
    if (d->view < 0 || d->view >= s->views->nviews)
        return store_fail(err, "view %d does not exist", d->view);
    /* Before bucket_of: outside these times its arithmetic overflows. */
    if (d->time < STORE_MIN_TIME || d->time >= STORE_MAX_TIME) {
        char when[64];
        store_code_format(&(struct store_column_type){STORE_TYPE_TIMESTAMP, 0, 0}, d->time, when,
                          sizeof when);
        return store_fail(err, "a row of view \"%s\" has the time %s, outside the times a "
                          "store keeps (4713 BC to the year 100000)",
                          s->views->views[d->view].name, when);
    }
    if (s->bulk)
        return stage_row(s, d, err);
    struct pending *p = s->pending;
    if (p->bytes > 2 * s->cache_bytes && spill(s, err))
        return -1;
    const struct sql_view *v = &s->views->views[d->view];
    for (int w = 0; w < v->nwidths; w++) {
        int64_t bucket = bucket_of(v, w, d->time);
        int64_t span = store_span_start(v, w, bucket);
        struct cellmap *m = get_segment(s, d->view, w, span, err);
        if (!m)
            return -1;
        size_t before = m->bytes;
        if (cellmap_apply(m, (uint32_t)((bucket - span) / v->widths[w]), d, err))
            return -1;
        p->bytes += m->bytes - before;
    }
    return add_value_deltas(p, d, err);
}

int store_truncate_view(struct store *s, int view, struct store_error *err)
{
    if (need_writer(s, err))
        return -1;
    if (view < 0 || view >= s->views->nviews)
        return store_fail(err, "view %d does not exist", view);
    struct pending *p = s->pending;
    if (settle_load(s, err)) {
        pending_reset(p, s->views);
        return -1;
    }
    if (p->bulk[view]) /* rows staged before the truncate are gone with it */
        bulk_clear(p->bulk[view]);
    BYTEMAP_EACH(&p->segments, e)
    {
        if (((struct cellmap *)e->ptr)->view_index == view)
            forget_segment(p, e);
    }
    BYTEMAP_EACH(&p->values, e)
    {
        if (get_u16be(e->key) == view)
            bytemap_remove(&p->values, e);
    }
    p->truncated[view] = true;
    return p->txn ? truncate_in_txn(s, p->txn, err) : 0;
}

/* ---- Dictionaries -------------------------------------------------------------------- */

/* The next id of a dictionary: one past the largest stored id. */
static int dict_next_id(struct store *s, MDB_txn *txn, int view, int col, int64_t *next,
                        struct store_error *err)
{
    uint8_t key[4];
    put_u16be(key, (uint16_t)view);
    put_u16be(key + 2, (uint16_t)col);
    struct bytemap_entry *e = bytemap_upsert(&s->pending->dict_next, key, sizeof key);
    if (!e)
        return store_fail(err, "out of memory");
    if (!e->ptr) { /* first use: find the last stored id */
        MDB_cursor *cur;
        uint8_t probe[DICT_REV_KEY_BYTES];
        triple_key(probe, view, col, INT64_MAX);
        int rc = mdb_cursor_open(txn, s->dictrev, &cur);
        if (rc)
            return store_lmdb_error(err, rc, "opening a dictionary cursor");
        MDB_val k = {sizeof probe, probe}, v;
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        rc = rc == 0 ? mdb_cursor_get(cur, &k, &v, MDB_PREV) : mdb_cursor_get(cur, &k, &v, MDB_LAST);
        e->num = 0;
        if (rc == 0 && k.mv_size == DICT_REV_KEY_BYTES && memcmp(k.mv_data, probe, 4) == 0)
            e->num = get_i64key((uint8_t *)k.mv_data + 4) + 1;
        mdb_cursor_close(cur);
        e->ptr = e; /* marks "loaded" */
    }
    *next = e->num++;
    return 0;
}

int store_dict_intern(struct store *s, int view, int col, const char *text, size_t len,
                      int64_t *id, struct store_error *err)
{
    if (need_writer(s, err))
        return -1;
    uint8_t key[DICT_KEY_MAX_BYTES];
    size_t klen = dict_key(key, view, col, text, len);
    struct bytemap_entry *e = bytemap_find(&s->pending->dict, key, klen);
    if (e) {
        *id = e->num;
        return 0;
    }
    MDB_txn *txn;
    if (store_txn_begin(s, MDB_RDONLY, &txn, err))
        return -1;
    MDB_val k = {klen, key}, v;
    int rc = mdb_get(txn, s->dict, &k, &v);
    if (rc == 0 && v.mv_size == 8) {
        *id = get_i64key(v.mv_data);
        mdb_txn_abort(txn);
        return 0;
    }
    rc = rc == MDB_NOTFOUND ? dict_next_id(s, txn, view, col, id, err)
                            : store_lmdb_error(err, rc, "reading a dictionary");
    mdb_txn_abort(txn);
    if (rc)
        return -1;
    char *copy = malloc(len + 1);
    e = copy ? bytemap_upsert(&s->pending->dict, key, klen) : NULL;
    if (!e) {
        free(copy);
        return store_fail(err, "out of memory");
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    e->ptr = copy;
    e->num = *id;
    return 0;
}

/* ---- Projections ------------------------------------------------------------------------ */

static int push_proj(struct store *s, struct proj_op op, struct store_error *err)
{
    struct pending *p = s->pending;
    if (p->nproj == p->proj_cap) {
        size_t cap = p->proj_cap ? p->proj_cap * 2 : 16;
        struct proj_op *a = realloc(p->proj, cap * sizeof *a);
        if (!a)
            return store_fail(err, "out of memory");
        p->proj = a;
        p->proj_cap = cap;
    }
    p->proj[p->nproj++] = op;
    return 0;
}

static int check_join(struct store *s, int view, int join, struct store_error *err)
{
    if (need_writer(s, err))
        return -1;
    if (view < 0 || view >= s->views->nviews || join < 0 ||
        join >= s->views->views[view].njoins)
        return store_fail(err, "join %d of view %d does not exist", join, view);
    return 0;
}

/* A dim row: u16 count, then per value u8 null, u32 length (LE), bytes. */
int store_projection_put(struct store *s, int view, int join, int64_t key,
                         const struct store_dim_value *values, struct store_error *err)
{
    if (check_join(s, view, join, err))
        return -1;
    int n = s->views->views[view].joins[join].ndim_columns - 1;
    size_t len = 2;
    for (int i = 0; i < n; i++)
        len += 5 + (values[i].is_null ? 0 : values[i].len);
    uint8_t *row = malloc(len);
    if (!row)
        return store_fail(err, "out of memory");
    uint8_t *p = row;
    *p++ = (uint8_t)n;
    *p++ = (uint8_t)(n >> 8);
    for (int i = 0; i < n; i++) {
        size_t l = values[i].is_null ? 0 : values[i].len;
        *p++ = values[i].is_null;
        for (int b = 0; b < 4; b++)
            *p++ = (uint8_t)(l >> (8 * b));
        if (l)
            memcpy(p, values[i].text, l);
        p += l;
    }
    if (push_proj(s, (struct proj_op){PROJ_PUT, view, join, key, row, len}, err)) {
        free(row);
        return -1;
    }
    return 0;
}

int store_projection_delete(struct store *s, int view, int join, int64_t key,
                            struct store_error *err)
{
    if (check_join(s, view, join, err))
        return -1;
    return push_proj(s, (struct proj_op){PROJ_DELETE, view, join, key, NULL, 0}, err);
}

int store_projection_truncate(struct store *s, int view, int join, struct store_error *err)
{
    if (check_join(s, view, join, err))
        return -1;
    return push_proj(s, (struct proj_op){PROJ_TRUNCATE, view, join, 0, NULL, 0}, err);
}

/* ---- Commit ------------------------------------------------------------------------------- */

/* Deletes every key of a database that starts with prefix. */
static int delete_prefix(MDB_txn *txn, MDB_dbi dbi, const uint8_t *prefix, size_t plen)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc)
        return rc;
    for (;;) {
        MDB_val k = {plen, (void *)prefix}, v;
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        if (rc || k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0)
            break;
        if ((rc = mdb_cursor_del(cur, 0)))
            break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

static int materialize(struct store *s, struct bytemap_entry *e, struct store_error *err);
static int compact_segment(struct store *s, MDB_txn *txn, const uint8_t key[SEG_KEY_BYTES],
                           struct store_error *err);
struct write_plan_of;
static int spill_segment(struct store *s, struct bytemap_entry *e,
                         const struct write_plan_of *known, struct store_error *err);

/* A stored segment's blocks (base and deltas: *n) and their cells, from
 * the blocks' headers. 1 when all is there, 0 when it is not stored or a
 * block does not open (merging will name the damage), -(LMDB code).
 * blocks[] gets the blocks when not NULL. */
static int segment_census(struct store *s, MDB_txn *txn, const uint8_t *key, int *n,
                          uint64_t *base, uint64_t *deltas, MDB_val *blocks_out)
{
    MDB_val own[1 + STORE_MAX_DELTAS], *blocks = blocks_out ? blocks_out : own;
    *base = *deltas = 0;
    int rc = segment_blocks(s, txn, key, blocks, n);
    if (rc)
        return -rc;
    for (int i = 0; i < *n; i++) {
        struct format_block b;
        struct format_error ferr;
        if (format_block_open(&b, blocks[i].mv_data, blocks[i].mv_size, false, &ferr))
            return 0;
        *(i ? deltas : base) += b.info.ncells;
    }
    return *n > 0;
}

/* How a dirty overlay is written (SPEC.md "Delta blocks"). */
enum write_plan {
    WRITE_BASE,        /* merged with the stored blocks into a new base */
    WRITE_DELTA,       /* as the next delta block */
    WRITE_ONE_DELTA,   /* merged with the stored deltas into delta 1 */
};

/* A segment's plan and delta number as plan_write found them, handed on
 * so that a commit reads each segment's census once. */
struct write_plan_of {
    enum write_plan plan;
    int seq;
};

/* Notes a segment to fold after the commit, once. */
static int fold_later(struct pending *p, const uint8_t *key)
{
    for (size_t i = 0; i < p->nfolds; i++)
        if (memcmp(p->folds[i], key, SEG_KEY_BYTES) == 0)
            return 0;
    if (p->nfolds == p->folds_cap) {
        size_t cap = p->folds_cap ? 2 * p->folds_cap : 64;
        uint8_t(*folds)[SEG_KEY_BYTES] = realloc(p->folds, cap * SEG_KEY_BYTES);
        if (!folds)
            return -1;
        p->folds = folds;
        p->folds_cap = cap;
    }
    memcpy(p->folds[p->nfolds++], key, SEG_KEY_BYTES);
    return 0;
}

/* The plan for an overlay and its delta number. A new base when the
 * segment is not stored yet; else a delta, the deltas merged into one when
 * their numbers run out, so that a stream of small commits costs what it
 * changes, not the base.
 *
 * Deltas holding more cells than the base (an ask reading the segment
 * then does more than twice the base's work) are folded into a new base
 * right after the commit, each segment in its own write transaction
 * (fold_after_commit): folded inside the batch, the decoded segment sat
 * beside the batch's overlays and the pages its transaction holds until it
 * commits, and that was ingest's peak under a stream of million-row
 * UPDATEs. A base block bigger than inline_fold_bytes takes deltas up to
 * twice its cells (three times the base's work) before that, left to the
 * idle compaction meanwhile: its fold decodes the whole segment (the
 * widest width's holds every row, 3.9 M value-count runs at full scale). */
static int plan_write(struct store *s, const struct cellmap *o, const uint8_t *key,
                      enum write_plan *plan, int *seq, struct store_error *err)
{
    MDB_txn *txn;
    bool own;
    *plan = WRITE_BASE;
    if (!o->overlay || s->bulk)
        return 0;
    if (batch_view(s, &txn, &own, err))
        return -1;
    int n;
    uint64_t base, deltas;
    MDB_val blocks[1 + STORE_MAX_DELTAS];
    int rc = segment_census(s, txn, key, &n, &base, &deltas, blocks);
    if (rc > 0) /* a commit of every segment would hold their headers' pages */
        segment_blocks_release(s, blocks, n);
    if (own)
        mdb_txn_abort(txn);
    if (rc < 0)
        return store_lmdb_error(err, -rc, "reading a segment");
    uint64_t room = rc == 1 && blocks[0].mv_size > s->inline_fold_bytes ? 2 * base : base;
    if (rc == 1) {
        *plan = n <= STORE_MAX_DELTAS ? WRITE_DELTA : WRITE_ONE_DELTA;
        *seq = n <= STORE_MAX_DELTAS ? n : 1;
        if (deltas + o->ncells > room && fold_later(s->pending, key))
            return store_fail(err, "out of memory");
    }
    return 0;
}

/* WRITE_ONE_DELTA: the stored deltas and the overlay, in one cellmap. */
static int merge_deltas(struct store *s, struct cellmap *o, const uint8_t *key,
                        struct cellmap **out, struct store_error *err)
{
    MDB_txn *txn;
    bool own;
    if (batch_view(s, &txn, &own, err))
        return -1;
    MDB_val blocks[1 + STORE_MAX_DELTAS];
    int n, rc = segment_blocks(s, txn, key, blocks, &n);
    *out = cellmap_new(o->view, o->types, o->view_index, o->width, o->span_start);
    if (rc)
        rc = store_lmdb_error(err, rc, "reading a segment");
    else if (!*out)
        rc = store_fail(err, "out of memory");
    else if (n > 1) /* deltas load like a base: nothing checks their signs */
        rc = load_blocks(s, *out, blocks + 1, n - 1, err);
    if (rc == 0)
        rc = cellmap_merge(*out, o, err);
    if (own)
        mdb_txn_abort(txn);
    return rc;
}

/* Encodes one dirty segment by its plan: known's when given, else worked
 * out here. */
static int encode_segment(struct store *s, struct bytemap_entry *e,
                          const struct write_plan_of *known, struct encoded *out,
                          struct store_error *err)
{
    memcpy(out->key, e->key, SEG_KEY_BYTES);
    out->key_len = SEG_KEY_BYTES;
    struct cellmap *o = e->ptr, *merged = NULL;
    enum write_plan plan = known ? known->plan : WRITE_BASE;
    int seq = known ? known->seq : 0;
    int rc = known ? 0 : plan_write(s, o, e->key, &plan, &seq, err);
    if (rc || plan == WRITE_BASE) {
        if (rc || materialize(s, e, err))
            return -1;
        /* A written segment is forgotten after the commit, and a failed
         * commit drops the whole batch: its runs can go as they are copied,
         * as in a fold (compact_segment). */
        struct cellmap *m = e->ptr;
        unhold(s->pending, m);
        m->bytes = 0;
        return cellmap_encode_consume(m, &out->block, &out->len, err);
    }
    if (plan == WRITE_ONE_DELTA && merge_deltas(s, o, e->key, &merged, err)) {
        cellmap_free(merged);
        return -1;
    }
    delta_key(out->key, e->key, seq);
    out->key_len = DELTA_KEY_BYTES;
    rc = cellmap_encode_delta(merged ? merged : o, &out->block, &out->len, err);
    cellmap_free(merged);
    if (rc == 0 && !out->block && plan == WRITE_DELTA)
        out->key_len = 0; /* the changes cancel out: nothing to write */
    return rc;
}

/* Deletes the delta blocks of a segment key from number `from` on (an
 * LMDB code). */
static int delete_deltas(MDB_txn *txn, MDB_dbi dbi, const uint8_t key[SEG_KEY_BYTES], int from)
{
    for (int seq = from; seq <= STORE_MAX_DELTAS; seq++) {
        uint8_t dk[DELTA_KEY_BYTES];
        delta_key(dk, key, seq);
        MDB_val k = {sizeof dk, dk};
        int rc = mdb_del(txn, dbi, &k, NULL);
        if (rc == MDB_NOTFOUND)
            return 0; /* deltas are numbered from 1 without gaps */
        if (rc)
            return rc;
    }
    return 0;
}

/* Writes one encoded block in txn (an LMDB code). A base replaces its
 * deltas; delta 1 replaces the deltas it merged. Deltas stay numbered
 * from 1 without gaps. */
static int put_encoded(struct store *s, MDB_txn *txn, const struct encoded *enc)
{
    if (enc->key_len == 0)
        return 0;
    MDB_val k = {enc->key_len, (void *)enc->key}, v = {enc->len, enc->block};
    bool delta = enc->key_len == DELTA_KEY_BYTES;
    if (delta && enc->key[SEG_KEY_BYTES] > 1)
        return mdb_put(txn, s->seg, &k, &v, 0);
    int rc = enc->block ? mdb_put(txn, s->seg, &k, &v, 0) : mdb_del(txn, s->seg, &k, NULL);
    if (rc && rc != MDB_NOTFOUND)
        return rc;
    return delete_deltas(txn, s->seg, enc->key, delta ? 2 : 1);
}

/* Whether a commit leaves this segment pending: one that keeps hot
 * segments, and this one was used since the last commit. */
static bool kept_hot(const struct pending *p, const struct cellmap *m, bool keep_hot)
{
    return keep_hot && m->last_used > p->committed_clock;
}

/* Encodes every dirty segment outside a load, each straight into the
 * batch's write transaction, and forgets it, so a commit holds a segment's
 * bytes once, as LMDB's dirty pages, rather than every overlay, its
 * encoding and the pages at once (a million-row UPDATE's commit was
 * ingest's peak). The segments that take a delta go first, then the new
 * segments' bases (and a damaged segment's merge, which names the damage);
 * folds of stored segments come after the commit (fold_after_commit). */
static int encode_dirty(struct store *s, struct store_error *err)
{
    struct pending *p = s->pending;
    for (int pass = 0; pass < 2; pass++) {
        BYTEMAP_EACH(&p->segments, e)
        {
            if (!((struct cellmap *)e->ptr)->dirty)
                continue;
            struct write_plan_of known = {WRITE_BASE, 0};
            if (pass == 0 && plan_write(s, e->ptr, e->key, &known.plan, &known.seq, err))
                return -1;
            if (pass == 0 && known.plan == WRITE_BASE)
                continue;
            if (spill_segment(s, e, pass == 0 ? &known : NULL, err)) /* it forgets e alone, or everything: leave */
                return -1;
        }
    }
    return 0;
}

/* Adds one value change to what the table holds. */
static int write_value(struct store *s, MDB_txn *txn, const struct bytemap_entry *e,
                       struct store_error *err)
{
    MDB_val k = {VALUE_KEY_BYTES, (void *)e->key}, v;
    int64_t rows = 0;
    int rc = mdb_get(txn, s->values, &k, &v);
    if (rc == 0 && v.mv_size == 8)
        memcpy(&rows, v.mv_data, 8);
    else if (rc && rc != MDB_NOTFOUND)
        return rc;
    rows += e->num;
    if (rows < 0)
        return store_fail(err, "view %u: a value's row count went negative; a delta took "
                               "away a value that was never added", get_u16be(e->key));
    v = (MDB_val){8, &rows};
    rc = rows ? mdb_put(txn, s->values, &k, &v, 0) : mdb_del(txn, s->values, &k, NULL);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

static int value_key_cmp(const void *a, const void *b)
{
    return memcmp((*(struct bytemap_entry *const *)a)->key,
                  (*(struct bytemap_entry *const *)b)->key, VALUE_KEY_BYTES);
}

/* The batch's value changes, in key order: LMDB fills the pages of keys
 * that come in ascending order, where keys in hash order split pages
 * about in half (the benchmark's 19,113 values took 217 pages, now 142:
 * a third of a MiB of the store file). */
static int write_values(struct store *s, MDB_txn *txn, struct store_error *err)
{
    size_t n = 0;
    struct bytemap_entry **es = malloc((s->pending->values.count + 1) * sizeof *es);
    if (!es)
        return store_fail(err, "out of memory");
    BYTEMAP_EACH(&s->pending->values, e)
    {
        if (e->num != 0)
            es[n++] = e;
    }
    qsort(es, n, sizeof *es, value_key_cmp);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = write_value(s, txn, es[i], err);
    free(es);
    return rc;
}

static int write_dict(struct store *s, MDB_txn *txn)
{
    BYTEMAP_EACH(&s->pending->dict, e)
    {
        uint8_t id[8], rev[DICT_REV_KEY_BYTES];
        put_i64key(id, e->num);
        triple_key(rev, get_u16be(e->key), get_u16be(e->key + 2), e->num);
        MDB_val k = {e->len, e->key}, v = {8, id};
        MDB_val rk = {sizeof rev, rev}, rv = {strlen(e->ptr), e->ptr};
        int rc = mdb_put(txn, s->dict, &k, &v, 0);
        if (!rc)
            rc = mdb_put(txn, s->dictrev, &rk, &rv, 0);
        if (rc)
            return rc;
    }
    return 0;
}

static int write_projections(struct store *s, MDB_txn *txn)
{
    for (size_t i = 0; i < s->pending->nproj; i++) {
        const struct proj_op *op = &s->pending->proj[i];
        uint8_t key[PROJ_KEY_BYTES];
        triple_key(key, op->view, op->join, op->key);
        MDB_val k = {sizeof key, key}, v = {op->row_len, op->row};
        int rc = op->kind == PROJ_PUT      ? mdb_put(txn, s->proj, &k, &v, 0)
                 : op->kind == PROJ_DELETE ? mdb_del(txn, s->proj, &k, NULL)
                                           : delete_prefix(txn, s->proj, key, 4);
        if (rc && rc != MDB_NOTFOUND)
            return rc;
    }
    return 0;
}

/* Empties, in txn, the segments and values of the views truncated in this
 * batch (an LMDB code). */
static int delete_truncated(struct store *s, MDB_txn *txn)
{
    for (int v = 0; v < s->views->nviews; v++) {
        if (!s->pending->truncated[v])
            continue;
        uint8_t prefix[2];
        put_u16be(prefix, (uint16_t)v);
        int rc = delete_prefix(txn, s->seg, prefix, 2);
        if (!rc)
            rc = delete_prefix(txn, s->values, prefix, 2);
        if (rc)
            return rc;
    }
    return 0;
}

/* One attempt at the write transaction: the batch's own when it spilled.
 * Each step returns 0, an LMDB code, or -1 with err set. Returns 0,
 * MDB_MAP_FULL to retry after growing the map, or -1 with err. */
static int write_batch(struct store *s, const struct store_position *pos,
                       struct store_error *err)
{
    MDB_txn *txn = s->pending->txn;
    s->pending->txn = NULL; /* committed or aborted below, either way */
    if (!txn && store_txn_begin(s, 0, &txn, err))
        return -1;
    int rc = delete_truncated(s, txn);
    if (!rc)
        rc = write_values(s, txn, err);
    if (!rc)
        rc = write_dict(s, txn);
    if (!rc)
        rc = write_projections(s, txn);
    if (!rc)
        rc = store_put_position(s, txn, pos);
    if (rc) {
        mdb_txn_abort(txn);
    } else {
        rc = mdb_txn_commit(txn);
    }
    if (rc == 0 || rc == MDB_MAP_FULL || rc == -1)
        return rc;
    return store_write_error(s, err, rc, "writing a batch");
}

static int grow_map(struct store *s, struct store_error *err)
{
    if (s->map_size >= s->max_map_size)
        return store_limit_error(s, err);
    size_t size = s->map_size * 2 < s->max_map_size ? s->map_size * 2 : s->max_map_size;
    int rc = mdb_env_set_mapsize(s->env, size);
    if (rc)
        return store_lmdb_error(err, rc, "growing the map");
    s->map_size = size;
    return 0;
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
static void evict(struct store *s)
{
    struct bytemap_entry *e;
    while (s->pending->bytes > s->cache_bytes && (e = oldest_segment(s->pending, false)))
        forget_segment(s->pending, e);
}

/* A batch that wrote into its transaction and then failed cannot be
 * retried in place: its spilled segments went with the transaction. */
static int batch_lost(struct store *s, int rc, struct store_error *err)
{
    struct pending *p = s->pending;
    if (p->txn) {
        mdb_txn_abort(p->txn);
        p->txn = NULL;
    }
    pending_reset(p, s->views);
    if (rc == MDB_MAP_FULL) {
        if (grow_map(s, err))
            return -1;
        store_fail(err, "the store's map filled up during a large batch; it has grown to %zu "
                        "MiB and the batch must be applied again from the stored position",
                   s->map_size >> 20);
        err->kind = STORE_ERR_REPLAY;
        return -1;
    }
    return rc == -1 ? -1 : store_write_error(s, err, rc, "writing a large batch");
}

static int truncate_in_txn(struct store *s, MDB_txn *txn, struct store_error *err)
{
    int rc = delete_truncated(s, txn);
    if (rc)
        return batch_lost(s, rc, err);
    memset(s->pending->truncated, 0, (size_t)s->views->nviews); /* the transaction holds it */
    return 0;
}

/* Opens the batch's write transaction, the map first grown to twice what
 * the store uses plus 1 GiB (address space only: the file grows as pages
 * are written), because an open transaction cannot grow it. */
static int open_batch_txn(struct store *s, struct store_error *err)
{
    MDB_envinfo info;
    MDB_stat st;
    if (mdb_env_info(s->env, &info) || mdb_env_stat(s->env, &st))
        return store_fail(err, "reading the store's size failed");
    size_t want = 2 * (size_t)(info.me_last_pgno + 1) * st.ms_psize + ((size_t)1 << 30);
    while (s->map_size < want && s->map_size < s->max_map_size)
        if (grow_map(s, err))
            return -1;
    if (store_txn_begin(s, 0, &s->pending->txn, err))
        return -1;
    return truncate_in_txn(s, s->pending->txn, err);
}

/* Turns an overlay into the whole segment: the stored block as this batch
 * last left it, plus the overlay's deltas. */
static int materialize(struct store *s, struct bytemap_entry *e, struct store_error *err)
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
    unhold(p, o);
    cellmap_free(o);
    e->ptr = m;
    return 0;
}

/* Writes one dirty segment into the batch's transaction, by its known
 * plan when given, and forgets it. */
static int spill_segment(struct store *s, struct bytemap_entry *e,
                         const struct write_plan_of *known, struct store_error *err)
{
    struct pending *p = s->pending;
    if (!p->txn && open_batch_txn(s, err))
        return -1;
    struct encoded enc = {0};
    if (encode_segment(s, e, known, &enc, err))
        return batch_lost(s, -1, err);
    int rc = put_encoded(s, p->txn, &enc);
    free(enc.block);
    if (rc)
        return batch_lost(s, rc, err);
    forget_segment(p, e);
    return 0;
}

/* Writes the least recently used segments into the batch's transaction
 * until what is held fits the cache budget: clean ones are dropped first,
 * they are in the store already. */
static int spill(struct store *s, struct store_error *err)
{
    struct pending *p = s->pending;
    evict(s);
    struct bytemap_entry *e;
    while (p->bytes > s->cache_bytes && (e = oldest_segment(p, true)))
        if (spill_segment(s, e, NULL, err))
            return -1;
    return 0;
}

/* Writes what a handed-off job encoded into the batch's transaction and
 * frees the job, the caller encoding beside it until it is done
 * (settle_load, a bulk store_commit). */
static int flush_job(struct store *s, struct store_error *err)
{
    struct pending *p = s->pending;
    struct encode_job *j = p->job;
    if (!j)
        return 0;
    p->job = NULL;
    size_t n;
    const struct encoded *enc = encode_job_blocks(j, &n);
    int rc = encode_job_finish(j, err);
    if (rc == 0 && !p->txn && open_batch_txn(s, err))
        rc = -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = put_encoded(s, p->txn, &enc[i]);
    encode_job_free(j);
    return rc ? batch_lost(s, rc, err) : 0;
}

/* Takes out of the writer, for an encode job, its dirty segments but
 * those kept hot: into *out (malloc'd), *n of them. An overlay is merged
 * with what is stored first (materialize). */
static int detach_dirty(struct store *s, bool keep_hot, struct cellmap ***out, size_t *n,
                        struct store_error *err)
{
    struct pending *p = s->pending;
    struct cellmap **maps = malloc((p->segments.count + 1) * sizeof *maps);
    if (!maps)
        return store_fail(err, "out of memory");
    *n = 0;
    BYTEMAP_EACH(&p->segments, e)
    {
        struct cellmap *m = e->ptr;
        if (!m->dirty || kept_hot(p, m, keep_hot))
            continue;
        if (materialize(s, e, err)) { /* an overlay of a stored segment, merged */
            while (*n > 0)
                cellmap_free(maps[--*n]);
            free(maps);
            return -1;
        }
        unhold(p, e->ptr);
        maps[(*n)++] = e->ptr;
        bytemap_remove(&p->segments, e);
    }
    *out = maps;
    return 0;
}

/* A load's dirty segments, but for those kept hot, leave the writer for an
 * encode job (encoder.c). Between partitions (keep_hot) the job runs on
 * while the load goes on, and the next hand-off or commit writes it; a
 * bulk store_commit writes it now, the caller encoding beside it. */
static int hand_off(struct store *s, bool keep_hot, struct store_error *err)
{
    struct pending *p = s->pending;
    struct cellmap **maps = NULL;
    size_t n = 0;
    if (detach_dirty(s, keep_hot, &maps, &n, err) ||
        !(p->job = encode_job_new(maps, n, err)))
        return -1;
    encode_job_start(p->job);
    return keep_hot ? 0 : flush_job(s, err);
}

/* ---- A load's partition, drained beside the next one ---------------------------- */

/* What store_hand_off_cold starts on a thread of its own while the caller
 * stages the next partition: the partition's staged rows drained into the
 * cellmaps. Until the job is joined (settle_load) it alone touches the
 * segments, their cellmaps, the held bytes, the clock and the value
 * deltas: the caller stages into the other staging set, and every writer
 * call that reaches those settles the job first. The job reads no LMDB,
 * whose write transaction belongs to the caller's thread: a late row for a
 * segment the encode job running beside it holds starts an overlay, which
 * the caller merges (materialize) only after settle_load wrote that job.
 * Every drain on the caller's thread comes after a settle_load too, so it
 * never meets a segment an encode job holds. */
struct load_job {
    struct store *s;
    struct bulk **staging;      /* per view: the partition's rows, drained here */
    pthread_t thread;
    bool threaded;              /* false: it ran on the caller's thread */
    atomic_bool drained;        /* the drain is over: a join will not wait */
    int rc;
    struct store_error err;
};

static void *run_load_job(void *arg)
{
    struct load_job *j = arg;
    j->rc = drain_set(j->s, j->staging, &j->err);
    atomic_store(&j->drained, true);
    return NULL;
}

/* Waits for the load job, if one runs, and takes its staging set back
 * (empty) as the spare. */
static int join_load(struct pending *p, int nviews, struct store_error *err)
{
    struct load_job *j = p->load;
    if (!j)
        return 0;
    p->load = NULL;
    if (j->threaded)
        pthread_join(j->thread, NULL);
    for (int v = 0; v < nviews; v++)
        if (j->staging[v]) /* drained already, but for a failure */
            bulk_clear(j->staging[v]);
    free(p->spare);
    p->spare = j->staging;
    int rc = j->rc;
    if (rc)
        *err = j->err;
    free(j);
    return rc;
}

/* Writes what the encode job beside the load job encoded (the caller
 * helping it finish), then joins the load job. In that order the caller
 * encodes while the drain runs rather than idling on it first (the drain
 * touches neither LMDB nor the job's segments). The drain may have started
 * overlays of segments that job holds: they are merged with the store only
 * after both (no segment is both pending and in a job once settled). A
 * failed write still joins the drain (batch_lost resets the batch). */
static int settle_load(struct store *s, struct store_error *err)
{
    return flush_job(s, err) || join_load(s->pending, s->views->nviews, err) ? -1 : 0;
}

/* Starts a load job on the staging set filled since the last one; the
 * writer stages into the spare meanwhile. A segment the job touches is hot
 * at the next hand-off. */
static int start_load(struct store *s, struct store_error *err)
{
    struct pending *p = s->pending;
    struct load_job *j = calloc(1, sizeof *j);
    struct bulk **fresh = p->spare ? p->spare : calloc((size_t)s->views->nviews, sizeof *fresh);
    if (!j || !fresh) {
        free(j);
        return store_fail(err, "out of memory");
    }
    j->s = s;
    atomic_init(&j->drained, false);
    j->staging = p->bulk;
    p->bulk = fresh;
    p->spare = NULL;
    p->committed_clock = p->clock;
    p->bytes_seen = p->bytes;
    p->load = j;
    j->threaded = pthread_create(&j->thread, NULL, run_load_job, j) == 0;
    if (!j->threaded) /* no thread to be had: the same work, now */
        run_load_job(j);
    return 0;
}

/* Folds the segments plan_write noted, each in its own write transaction,
 * once the batch's overlays and pages are gone. A fold changes no answer,
 * so it need not be atomic with the batch; one that fails is logged and
 * left to the idle compaction (store_compact), which finds the same
 * deltas, and the commit stands. */
static void fold_after_commit(struct store *s)
{
    struct pending *p = s->pending;
    for (size_t i = 0; i < p->nfolds; i++) {
        struct store_error err = {0};
        int rc;
        do { /* a full map grows, and the same segment goes again */
            MDB_txn *txn;
            rc = store_txn_begin(s, 0, &txn, &err);
            if (rc == 0) {
                rc = compact_segment(s, txn, p->folds[i], &err);
                rc = rc == 0 ? mdb_txn_commit(txn) : (mdb_txn_abort(txn), rc);
            }
        } while (rc == MDB_MAP_FULL && grow_map(s, &err) == 0);
        if (rc) {
            store_logf(STORE_LOG_WARN, "folding a segment after a commit failed (the idle "
                       "compaction will try again): %s", rc == -1 ? err.message : mdb_strerror(rc));
            break;
        }
    }
    p->nfolds = 0;
}

static int commit(struct store *s, const struct store_position *pos, bool keep_hot,
                  struct store_error *err)
{
    if (need_writer(s, err))
        return -1;
    struct pending *p = s->pending;
    if (drain_all(s, err)) {
        pending_reset(p, s->views);
        return -1;
    }
    if (keep_hot) { /* hot segments past twice the budget (where spills begin) are written after all */
        size_t hot = 0;
        BYTEMAP_EACH(&p->segments, e)
        {
            if (kept_hot(p, e->ptr, true))
                hot += ((struct cellmap *)e->ptr)->bytes;
        }
        keep_hot = hot <= 2 * s->cache_bytes;
    }
    /* A batch past the budget went through hundreds of MiB of decoded and
     * encoded segments; malloc would keep them for the next one, and a
     * follower then idles at that size. Give them back after it. */
    bool large = p->txn != NULL || p->bytes > s->cache_bytes;
    /* drain_all wrote the last job (settle_load): hand_off's merges read it. */
    int rc = s->bulk ? hand_off(s, keep_hot, err) : encode_dirty(s, err);
    bool spilled = p->txn != NULL; /* a retry would lose what went into it */
    while (rc == 0 && (rc = write_batch(s, pos, err)) == MDB_MAP_FULL && !spilled)
        rc = grow_map(s, err);
    if (rc == MDB_MAP_FULL)
        return batch_lost(s, rc, err);
    if (rc) {
        pending_reset(p, s->views); /* the cached cells no longer match the store */
        return -1;
    }
    BYTEMAP_EACH(&p->segments, e)
    {
        struct cellmap *m = e->ptr;
        if (kept_hot(p, m, keep_hot))
            continue;
        if (m->overlay || !s->bulk) /* outside bulk mode changes go to overlays only */
            forget_segment(p, e);
        else
            m->dirty = false;
    }
    p->committed_clock = p->clock;
    bytemap_clear(&p->values);
    BYTEMAP_EACH(&p->dict, e) free(e->ptr);
    bytemap_clear(&p->dict);
    for (size_t i = 0; i < p->nproj; i++)
        free(p->proj[i].row);
    p->nproj = 0;
    memset(p->truncated, 0, (size_t)s->views->nviews);
    recount(p);
    evict(s);
    if (large)
        malloc_trim(0);
    fold_after_commit(s);
    store_release_map(s);
    return 0;
}

int store_commit(struct store *s, const struct store_position *pos, struct store_error *err)
{
    return commit(s, pos, false, err);
}

int store_commit_cold(struct store *s, const struct store_position *pos, struct store_error *err)
{
    return commit(s, pos, s->bulk, err);
}

int store_hand_off_cold(struct store *s, struct store_error *err)
{
    if (need_writer(s, err))
        return -1;
    if (!s->bulk)
        return 0;
    struct pending *p = s->pending;
    /* An encode job still at work on the other core is left to it, with the
     * segments that went cold since, which the next hand-off takes: the
     * caller encodes beside it only while the drain runs, then goes back to
     * its rows (ingest's thread, the busier, spent a fifth of its time
     * waiting out jobs). Once in a row, so that cold segments do not pile
     * up. Otherwise the last job is written first, so that the overlays
     * among the segments handed off now merge with it. */
    bool leave = p->job && encode_job_busy(p->job) && !p->job_left;
    p->job_left = leave;
    while (leave && p->load && !atomic_load(&p->load->drained) && encode_job_help(p->job))
        ;
    int rc = leave ? join_load(p, s->views->nviews, err)
                   : settle_load(s, err) || hand_off(s, true, err);
    if (rc || start_load(s, err)) {
        pending_reset(p, s->views);
        return -1;
    }
    return 0;
}

void store_rollback(struct store *s)
{
    if (s->pending)
        pending_reset(s->pending, s->views);
}

/* ---- Compaction --------------------------------------------------------------------------- */

/* Whether a segment's deltas are worth folding when the writer is idle:
 * they hold an eighth of the base's cells, or half the delta numbers are
 * taken. Lighter ones cost an ask little, and folding re-encodes the whole
 * segment (the widest width's one segment holds every row). */
static bool heavy_deltas(struct store *s, MDB_txn *txn, const uint8_t key[SEG_KEY_BYTES])
{
    int n;
    uint64_t base, deltas;
    if (segment_census(s, txn, key, &n, &base, &deltas, NULL) != 1)
        return true; /* let the fold report it */
    return n - 1 >= STORE_MAX_DELTAS / 2 || deltas * 8 >= base;
}

/* The first segment key at or after `from` that has delta blocks (heavy
 * ones unless `all`); 1 found, 0 none, else an LMDB code. */
static int next_with_deltas(struct store *s, MDB_txn *txn, const uint8_t *from, size_t from_len,
                            bool all, uint8_t key[SEG_KEY_BYTES])
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, s->seg, &cur);
    if (rc)
        return rc;
    MDB_val k = {from_len, (void *)from}, v;
    for (rc = mdb_cursor_get(cur, &k, &v, from_len ? MDB_SET_RANGE : MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
        if (k.mv_size == DELTA_KEY_BYTES && (all || heavy_deltas(s, txn, k.mv_data))) {
            memcpy(key, k.mv_data, SEG_KEY_BYTES);
            break;
        }
    mdb_cursor_close(cur);
    return rc == 0 ? 1 : rc == MDB_NOTFOUND ? 0 : rc;
}

/* Folds one segment's deltas into its base in txn: 0, an LMDB code, or -1
 * with err. */
static int compact_segment(struct store *s, MDB_txn *txn, const uint8_t key[SEG_KEY_BYTES],
                           struct store_error *err)
{
    int view = get_u16be(key), width = key[2];
    if (view >= s->views->nviews || width >= s->views->views[view].nwidths)
        return store_fail(err, "a segment key names view %d, width %d, which do not exist",
                          view, width);
    MDB_val blocks[1 + STORE_MAX_DELTAS];
    int n, rc = segment_blocks(s, txn, key, blocks, &n);
    if (rc)
        return store_lmdb_error(err, rc, "reading a segment");
    if (n == 0)
        return store_fail(err, "view \"%s\": delta blocks without their base",
                          s->views->views[view].name);
    struct cellmap *m = cellmap_new(&s->views->views[view], s->types[view], view, width,
                                    get_i64key(key + 3));
    struct encoded enc = {.key_len = SEG_KEY_BYTES};
    memcpy(enc.key, key, SEG_KEY_BYTES);
    rc = m ? load_blocks(s, m, blocks, n, err) : store_fail(err, "out of memory");
    if (rc == 0) /* the fold's peak: its runs held once, not twice */
        rc = cellmap_encode_consume(m, &enc.block, &enc.len, err);
    cellmap_free(m);
    if (rc == 0)
        rc = put_encoded(s, txn, &enc);
    free(enc.block);
    return rc;
}

int store_compact(struct store *s, int64_t max_us, bool all, int *left, struct store_error *err)
{
    *left = 0;
    if (need_writer(s, err))
        return -1;
    bool changes = s->pending->load || s->pending->job; /* a load's, not yet written */
    for (int v = 0; v < s->views->nviews; v++)
        changes |= s->pending->bulk[v] && !bulk_empty(s->pending->bulk[v]);
    if (changes)
        return store_fail(err, "compaction between commits only: changes are pending");
    BYTEMAP_EACH(&s->pending->segments, e)
    {
        if (((struct cellmap *)e->ptr)->dirty)
            return store_fail(err, "compaction between commits only: changes are pending");
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint8_t from[DELTA_KEY_BYTES] = {0};
    size_t from_len = 0;
    for (;;) {
        MDB_txn *txn;
        if (store_txn_begin(s, 0, &txn, err))
            return -1;
        uint8_t key[SEG_KEY_BYTES];
        int rc = next_with_deltas(s, txn, from, from_len, all, key);
        clock_gettime(CLOCK_MONOTONIC, &t);
        int64_t spent = (t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000;
        if (rc != 1 || spent > max_us) { /* count what is left, and leave */
            for (; rc == 1; rc = next_with_deltas(s, txn, from, from_len, all, key)) {
                (*left)++;
                memcpy(from, key, SEG_KEY_BYTES);
                from[SEG_KEY_BYTES] = 0xff; /* past every delta of key, before the next key */
                from_len = DELTA_KEY_BYTES;
            }
            mdb_txn_abort(txn);
            store_release_map(s);
            return rc ? store_lmdb_error(err, rc, "finding delta blocks") : 0;
        }
        rc = compact_segment(s, txn, key, err);
        if (rc == 0)
            rc = mdb_txn_commit(txn);
        else
            mdb_txn_abort(txn);
        if (rc == MDB_MAP_FULL && grow_map(s, err) == 0)
            continue; /* the same segment again, in a bigger map */
        if (rc)
            return rc == -1 ? -1 : store_write_error(s, err, rc, "compacting a segment");
        memcpy(from, key, SEG_KEY_BYTES);
        from_len = SEG_KEY_BYTES;
    }
}
