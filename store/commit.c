/* commit.c -- store_commit: each segment's plan, its base or delta
 * written, the values, dictionaries, projections and the position, in one
 * LMDB write transaction; map growth, and a batch lost to a failed write.
 *
 * Outside a load the commit writes each segment into the transaction as
 * soon as it is encoded and forgets it, as a spill does (segment_spill),
 * to hold each segment's bytes once: segments that take a delta first,
 * new segments' bases last (encode_dirty). A load's commit hands its
 * segments to an encode job (load.c) and writes what it encoded. Folds of
 * deltas into new bases come after the commit (fold.c).
 *
 * The map is the store's size limit from open on and never grows (env.c,
 * SPEC.md §4.5): a batch that fills it fails with STORE_ERR_LIMIT, and one
 * that wrote into its transaction first is lost with it (batch_lost). A
 * failed commit writes nothing: LMDB writes the meta page last. */
#include "store/internal.h"

#include <stdlib.h>
#include <string.h>

/* Deletes every key of a database that starts with prefix. */
int store_delete_prefix(MDB_txn *txn, MDB_dbi dbi, const uint8_t *prefix, size_t plen)
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

/* A stored segment's blocks (base and deltas: *n) and their cells, from
 * the blocks' headers. 1 when all is there, 0 when it is not stored or a
 * block does not open (merging will name the damage), -(LMDB code).
 * blocks[] gets the blocks when not NULL. */
int segment_census(struct store *s, MDB_txn *txn, const uint8_t *key, int *n,
                          uint64_t *base, uint64_t *deltas, MDB_val *blocks_out,
                          uint64_t *cells_out)
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
        if (cells_out)
            cells_out[i] = b.info.ncells;
    }
    return *n > 0;
}

/* How a dirty overlay is written (SPEC.md "Delta blocks"). */
enum write_plan {
    WRITE_BASE,        /* merged with the stored blocks into a new base */
    WRITE_DELTA,       /* as the next delta block */
    WRITE_MERGED_DELTA, /* merged with the newest stored deltas into the first of them */
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

/* The first delta merged when the numbers run out: the newest deltas, back
 * to the first that outweighs the rest of them and the overlay (cells[i]
 * is delta i's; n - 1 of them stored) more than twice. Merged that way
 * the deltas keep sizes that at least halve from delta 1 on, and a cell is
 * merged again only when what came after it has doubled: a segment that a
 * stream of small overlays keeps coming back to costs each cell a few
 * merges, where merging every delta into delta 1 cost all the deltas at
 * every eighth overlay (a load's 64-day segment of millions of cells). */
static int merged_delta_from(const uint64_t *cells, int n, uint64_t overlay)
{
    int k = n - 1;
    uint64_t acc = overlay + cells[k];
    while (k > 1 && cells[k - 1] <= 2 * acc)
        acc += cells[--k];
    return k;
}

/* The plan for an overlay and its delta number. A new base when the
 * segment is not stored yet; else a delta, the newest deltas merged into
 * one when their numbers run out (merged_delta_from), so that a stream of
 * small commits costs what it changes, not the base.
 *
 * Deltas holding more cells than the base (an ask reading the segment
 * then does more than twice the base's work) are folded into a new base
 * right after the commit (or after the next ones, past its time budget),
 * each segment in its own write transaction (fold_after_commit): folded
 * inside the batch, the decoded segment sat beside the batch's overlays
 * and the pages its transaction holds until it commits, and that was
 * ingest's peak under a stream of million-row UPDATEs. A base block bigger than inline_fold_bytes takes deltas up to
 * twice its cells (three times the base's work) before that, left to the
 * idle compaction meanwhile: its fold decodes the whole segment (the
 * widest width's holds every row, 3.9 M value-count runs at full scale). */
static int plan_write(struct store *s, const struct cellmap *o, const uint8_t *key,
                      enum write_plan *plan, int *seq, struct store_error *err)
{
    MDB_txn *txn;
    bool own;
    *plan = WRITE_BASE;
    if (!o->overlay)
        return 0;
    if (batch_view(s, &txn, &own, err))
        return -1;
    int n;
    uint64_t base, deltas, cells[1 + STORE_MAX_DELTAS];
    MDB_val blocks[1 + STORE_MAX_DELTAS];
    int rc = segment_census(s, txn, key, &n, &base, &deltas, blocks, cells);
    if (rc > 0) /* a commit of every segment would hold their headers' pages */
        segment_blocks_release(s, blocks, n);
    if (own)
        mdb_txn_abort(txn);
    if (rc < 0)
        return store_lmdb_error(err, -rc, "reading a segment");
    uint64_t room = rc == 1 && blocks[0].mv_size > s->inline_fold_bytes ? 2 * base : base;
    if (rc == 1) {
        *plan = n <= STORE_MAX_DELTAS ? WRITE_DELTA : WRITE_MERGED_DELTA;
        *seq = n <= STORE_MAX_DELTAS ? n : merged_delta_from(cells, n, o->ncells);
        if (deltas + o->ncells > room && fold_later(s->pending, key))
            return store_fail(err, "out of memory");
    }
    return 0;
}

/* WRITE_MERGED_DELTA: the stored deltas from number `from` on and the
 * overlay, in one cellmap. */
static int merge_deltas(struct store *s, struct cellmap *o, const uint8_t *key, int from,
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
    else if (n > from) /* deltas load like a base: nothing checks their signs */
        rc = segment_load_blocks(s, *out, blocks + from, n - from, err);
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
        if (rc || overlay_materialize(s, e, err))
            return -1;
        /* A written segment is forgotten after the commit, and a failed
         * commit drops the whole batch: its runs can go as they are copied,
         * as in a fold (compact_segment). */
        struct cellmap *m = e->ptr;
        pending_unhold(s->pending, m);
        m->bytes = 0;
        return cellmap_encode_consume(m, &out->block, &out->len, err);
    }
    if (plan == WRITE_MERGED_DELTA && merge_deltas(s, o, e->key, seq, &merged, err)) {
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
 * deltas; delta k replaces the deltas after it, which it merged (none
 * after a new one). Deltas stay numbered from 1 without gaps. */
int encoded_put(struct store *s, MDB_txn *txn, const struct encoded *enc)
{
    if (enc->key_len == 0)
        return 0;
    MDB_val k = {enc->key_len, (void *)enc->key}, v = {enc->len, enc->block};
    bool delta = enc->key_len == DELTA_KEY_BYTES;
    /* A merge whose changes cancel out leaves no block: its number must
     * then go too, else the deltas after it would leave a gap. */
    int rc = enc->block ? mdb_put(txn, s->seg, &k, &v, 0) : mdb_del(txn, s->seg, &k, NULL);
    if (rc && rc != MDB_NOTFOUND)
        return rc;
    return delete_deltas(txn, s->seg, enc->key, delta ? enc->key[SEG_KEY_BYTES] + 1 : 1);
}

/* Whether a commit leaves this segment pending: one that keeps hot
 * segments, and this one was used since the last commit. */
bool pending_kept_hot(const struct pending *p, const struct cellmap *m, bool keep_hot)
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
            if (segment_spill(s, e, pass == 0 ? &known : NULL, err)) /* it forgets e alone, or everything: leave */
                return -1;
        }
    }
    return 0;
}

/* One value change of the batch, keyed as the values table keys it. */
struct value_change {
    uint8_t key[VALUE_KEY_BYTES];
    int64_t rows;
};

/* Adds one value change to what the table holds. */
static int write_value(struct store *s, MDB_txn *txn, const struct value_change *c,
                       struct store_error *err)
{
    MDB_val k = {VALUE_KEY_BYTES, (void *)c->key}, v;
    int64_t rows = 0;
    int rc = mdb_get(txn, s->values, &k, &v);
    if (rc == 0 && v.mv_size == 8)
        memcpy(&rows, v.mv_data, 8);
    else if (rc && rc != MDB_NOTFOUND)
        return rc;
    rows += c->rows;
    if (rows < 0)
        return store_fail(err, "view %u: a value's row count went negative; a delta took "
                               "away a value that was never added", be_load_u16(c->key));
    v = (MDB_val){8, &rows};
    rc = rows ? mdb_put(txn, s->values, &k, &v, 0) : mdb_del(txn, s->values, &k, NULL);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

static int value_key_cmp(const void *a, const void *b)
{
    return memcmp(((const struct value_change *)a)->key, ((const struct value_change *)b)->key,
                  VALUE_KEY_BYTES);
}

/* The batch's value changes, in key order: LMDB fills the pages of keys
 * that come in ascending order, where keys in hash order split pages
 * about in half (the benchmark's 19,113 values took 217 pages, now 142:
 * a third of a MiB of the store file). */
static int write_values(struct store *s, MDB_txn *txn, struct store_error *err)
{
    struct hashtab *t = &s->pending->values;
    size_t n = 0;
    struct value_change *cs = malloc((t->count + 1) * sizeof *cs);
    if (!cs)
        return store_fail(err, "out of memory");
    uint32_t at = 0;
    for (uint64_t *slot; (slot = hashtab_next(t, &at));) {
        int64_t rows = *(int64_t *)hashtab_value_of(t, slot);
        const uint64_t *key = hashtab_key_of(slot);
        if (rows == 0)
            continue;
        triple_key(cs[n].key, (int)(key[0] >> 32), (int)(uint32_t)key[0], (int64_t)key[1]);
        cs[n++].rows = rows;
    }
    qsort(cs, n, sizeof *cs, value_key_cmp);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = write_value(s, txn, &cs[i], err);
    free(cs);
    return rc;
}

static int write_dict(struct store *s, MDB_txn *txn)
{
    BYTEMAP_EACH(&s->pending->dict, e)
    {
        if (!e->ptr)
            continue; /* a stored text the batch looked up (store_dict_intern) */
        uint8_t id[8], rev[DICT_REV_KEY_BYTES];
        put_i64key(id, e->num);
        triple_key(rev, be_load_u16(e->key), be_load_u16(e->key + 2), e->num);
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

/* Empties, in txn, the segments and values of the views truncated in this
 * batch (an LMDB code). */
static int delete_truncated(struct store *s, MDB_txn *txn)
{
    for (int v = 0; v < s->views->nviews; v++) {
        if (!atomic_load_explicit(&s->pending->truncated[v], memory_order_relaxed))
            continue;
        uint8_t prefix[2];
        be_store_u16(prefix, (uint16_t)v);
        int rc = store_delete_prefix(txn, s->seg, prefix, 2);
        if (!rc)
            rc = store_delete_prefix(txn, s->values, prefix, 2);
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
        rc = dense_write(s, txn);
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

/* A batch that wrote into its transaction and then failed cannot be
 * retried in place: its spilled segments went with the transaction. */
int batch_lost(struct store *s, int rc, struct store_error *err)
{
    struct pending *p = s->pending;
    if (p->txn) {
        mdb_txn_abort(p->txn);
        p->txn = NULL;
    }
    pending_reset(p, s->views);
    if (rc == MDB_MAP_FULL) /* the map is the size limit from open on (env.c) */
        return store_limit_error(s, err);
    return rc == -1 ? -1 : store_write_error(s, err, rc, "writing a large batch");
}

int batch_truncate(struct store *s, MDB_txn *txn, struct store_error *err)
{
    int rc = delete_truncated(s, txn);
    if (rc)
        return batch_lost(s, rc, err);
    pending_clear_truncated(s->pending, s->views->nviews); /* the transaction holds it */
    return 0;
}

/* Opens the batch's write transaction. The map is the store's size limit
 * from open on (env.c), so the transaction can fill the store to it. */
int batch_txn_open(struct store *s, struct store_error *err)
{
    if (store_txn_begin(s, 0, &s->pending->txn, err))
        return -1;
    return batch_truncate(s, s->pending->txn, err);
}

/* Writes one dirty segment into the batch's transaction, by its known
 * plan when given, and forgets it. */
int segment_spill(struct store *s, struct bytemap_entry *e,
                         const struct write_plan_of *known, struct store_error *err)
{
    struct pending *p = s->pending;
    if (!p->txn && batch_txn_open(s, err))
        return -1;
    struct encoded enc = {0};
    if (encode_segment(s, e, known, &enc, err))
        return batch_lost(s, -1, err);
    int rc = encoded_put(s, p->txn, &enc);
    free(enc.block);
    if (rc)
        return batch_lost(s, rc, err);
    pending_forget(p, e);
    return 0;
}

int overlay_spill_delta(struct store *s, struct bytemap_entry *e, bool *written,
                        struct store_error *err)
{
    struct write_plan_of known = {WRITE_BASE, 0};
    *written = false;
    if (plan_write(s, e->ptr, e->key, &known.plan, &known.seq, err))
        return batch_lost(s, -1, err);
    if (known.plan == WRITE_BASE)
        return 0;
    *written = true;
    return segment_spill(s, e, &known, err);
}

static int commit(struct store *s, const struct store_position *pos, bool keep_hot,
                  struct store_error *err)
{
    if (store_need_writer(s, err))
        return -1;
    struct pending *p = s->pending;
    if (pending_drain(s, err)) {
        pending_reset(p, s->views);
        return -1;
    }
    if (keep_hot) { /* hot segments past twice the budget (where spills begin) are written after all */
        size_t hot = 0;
        BYTEMAP_EACH(&p->segments, e)
        {
            if (pending_kept_hot(p, e->ptr, true))
                hot += ((struct cellmap *)e->ptr)->bytes;
        }
        keep_hot = hot <= 2 * s->cache_bytes;
    }
    /* A batch past the budget went through hundreds of MiB of decoded and
     * encoded segments; malloc would keep them for the next one, and a
     * follower then idles at that size. Give them back after it, unless
     * the next batch is coming (store_set_keep_heap). */
    bool large = p->txn != NULL || p->bytes > s->cache_bytes;
    /* pending_drain wrote the last job (load_settle): load_hand_off's merges read it. */
    int rc = s->bulk ? load_hand_off(s, keep_hot, err) : encode_dirty(s, err);
    bool spilled = p->txn != NULL; /* a retry would lose what went into it */
    if (rc == 0)
        rc = write_batch(s, pos, err);
    if (rc == MDB_MAP_FULL && !spilled) { /* the size limit (the map is it, env.c) */
        store_limit_error(s, err);
        rc = -1;
    }
    if (rc == MDB_MAP_FULL)
        return batch_lost(s, rc, err);
    if (rc) {
        pending_reset(p, s->views); /* the cached cells no longer match the store */
        return -1;
    }
    BYTEMAP_EACH(&p->segments, e)
    {
        struct cellmap *m = e->ptr;
        if (pending_kept_hot(p, m, keep_hot))
            continue;
        if (m->overlay || !s->bulk) /* outside bulk mode changes go to overlays only */
            pending_forget(p, e);
        else
            m->dirty = false;
    }
    p->committed_clock = p->clock;
    hashtab_clear(&p->values);
    BYTEMAP_EACH(&p->dict, e) free(e->ptr);
    bytemap_clear(&p->dict);
    dense_forget(p);
    pending_clear_truncated(p, s->views->nviews);
    pending_recount(p);
    cache_evict(s);
    if (large && s->keep_heap)
        s->heap_owed = true;
    else if (large)
        pending_give_heap_back(s);
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
