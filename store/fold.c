/* fold.c -- delta blocks folded into their bases: right after a commit
 * for the segments plan_write noted (fold_after_commit), and when the
 * writer is idle (store_compact).
 *
 * A fold loads a segment's base and deltas, encodes them as a new base and
 * deletes the deltas, each segment in its own write transaction: it
 * changes no answer, so it need not be atomic with the batch, and a fold
 * that fails is logged and left to the next compaction, which finds the
 * same deltas. Readers between the commit and the fold read the deltas.
 * A fold lets each cell's runs go as they are copied into the new block
 * (cellmap_encode_consume), so it holds the segment's runs once. */
#include "base/logfmt.h"
#include "store/internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- Compaction --------------------------------------------------------------------------- */

/* Whether a segment's deltas are worth folding when the writer is idle:
 * they hold an eighth of the base's cells. Lighter ones cost an ask little
 * (a delta block carries its own rollups; past STORE_MAX_DELTAS the newest
 * merge into one at a commit, at the cost of what they hold), while a fold
 * re-encodes the whole segment and a transaction that arrives meanwhile
 * waits for it (store_compact_until stops between segments, not inside
 * one). Folded also for the delta numbers they took, the segments a few
 * hundred small commits touch held each transaction after them 10 to
 * 170 ms under the wide view at full scale (`taxi wide`; without idle
 * folds, 2 ms). */
static bool heavy_deltas(struct store *s, MDB_txn *txn, const uint8_t key[SEG_KEY_BYTES])
{
    int n;
    uint64_t base, deltas;
    if (segment_census(s, txn, key, &n, &base, &deltas, NULL, NULL) != 1)
        return true; /* let the fold report it */
    return deltas * 8 >= base;
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
    int view = be_load_u16(key), width = key[2];
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
    if (n == 1)
        return 0; /* folded already (a fold noted after a commit, done by the idle compaction) */
    struct cellmap *m = cellmap_new(&s->views->views[view], s->types[view], view, width,
                                    get_i64key(key + 3));
    struct encoded enc = {.key_len = SEG_KEY_BYTES};
    memcpy(enc.key, key, SEG_KEY_BYTES);
    rc = m ? segment_load_blocks(s, m, blocks, n, err) : store_fail(err, "out of memory");
    if (rc == 0) /* the fold's peak: its runs held once, not twice */
        rc = cellmap_encode_consume(m, &enc.block, &enc.len, err);
    cellmap_free(m);
    if (rc == 0)
        rc = encoded_put(s, txn, &enc);
    free(enc.block);
    return rc;
}

/* Folds the segments plan_write noted, each in its own write transaction,
 * once the batch's overlays and pages are gone, oldest first: a quarter of
 * those waiting (rounded up), then more while s->fold_budget_us lasts
 * (store_set_fold_budget_us says why). The quarter keeps the line from
 * growing without end under a stream whose folds outrun the time: waiting
 * segments take merged deltas commit after commit, and asks read them. A
 * fold changes no answer, so it need not be atomic with the batch; one
 * that fails is logged and left to the idle compaction (store_compact),
 * which finds the same deltas, and the commit stands. A segment the idle
 * compaction folded meanwhile has no deltas left and is passed over. */
void fold_after_commit(struct store *s)
{
    struct pending *p = s->pending;
    int64_t start = store_monotonic_us();
    size_t i = 0, quarter = (p->nfolds + 3) / 4;
    while (i < p->nfolds) {
        struct store_error err = {0};
        MDB_txn *txn;
        int rc = store_txn_begin(s, 0, &txn, &err);
        if (rc == 0) {
            rc = compact_segment(s, txn, p->folds[i++], &err);
            rc = rc == 0 ? mdb_txn_commit(txn) : (mdb_txn_abort(txn), rc);
        }
        if (rc) {
            logfmt_msg(LOGFMT_WARN, "folding a segment after a commit failed (the idle "
                       "compaction will try again): %s", rc == -1 ? err.message : mdb_strerror(rc));
            i = p->nfolds;
            break;
        }
        if (i >= quarter && store_monotonic_us() - start >= s->fold_budget_us)
            break;
    }
    if (i > 0) {
        memmove(p->folds, p->folds + i, (p->nfolds - i) * SEG_KEY_BYTES);
        p->nfolds -= i;
    }
}

int store_compact(struct store *s, int64_t max_us, bool all, int *left, struct store_error *err)
{
    return store_compact_until(s, max_us, all, NULL, NULL, left, err);
}

int store_compact_until(struct store *s, int64_t max_us, bool all, bool (*stop)(void *ctx),
                        void *stop_ctx, int *left, struct store_error *err)
{
    *left = 0;
    if (store_need_writer(s, err))
        return -1;
    /* a load's, not yet written, or rows staged (staging.c) */
    bool changes = s->pending->load || s->pending->job;
    for (int v = 0; v < s->views->nviews; v++)
        changes |= s->pending->staging[v] && !staging_empty(s->pending->staging[v]);
    if (changes)
        return store_fail(err, "compaction between commits only: changes are pending");
    BYTEMAP_EACH(&s->pending->segments, e)
    {
        if (((struct cellmap *)e->ptr)->dirty)
            return store_fail(err, "compaction between commits only: changes are pending");
    }
    int64_t t0 = store_monotonic_us();
    uint8_t from[DELTA_KEY_BYTES] = {0};
    size_t from_len = 0;
    for (;;) {
        MDB_txn *txn;
        if (store_txn_begin(s, 0, &txn, err))
            return -1;
        uint8_t key[SEG_KEY_BYTES];
        int rc = next_with_deltas(s, txn, from, from_len, all, key);
        if (rc != 1 || store_monotonic_us() - t0 > max_us ||
            (stop && stop(stop_ctx))) { /* count what is left, and leave */
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
        if (rc == MDB_MAP_FULL)
            return store_limit_error(s, err);
        if (rc)
            return rc == -1 ? -1 : store_write_error(s, err, rc, "compacting a segment");
        memcpy(from, key, SEG_KEY_BYTES);
        from_len = SEG_KEY_BYTES;
    }
}
