/* writer.c -- the store's writer: a batch (struct pending) from its first
 * change to its commit, its settings, and the dictionaries and projections
 * it changes.
 *
 * Everything a batch changes is held in memory until store_commit
 * (commit.c): segments (cellmaps and overlays, apply.c), value-dictionary
 * deltas, new dictionary entries and projection operations in order.
 * store_commit writes it all with the position in one LMDB write
 * transaction: a source transaction is either wholly in the store or not
 * at all, and so is the position that says so. This file owns the batch's
 * life (pending_new, pending_reset, pending_free), the held bytes that the
 * cache budget counts, and the calls that need no segment: new dictionary
 * ids (one past the largest stored, so ids of a dropped batch are reused)
 * and projection puts and deletes, kept in order because a later one
 * overrides an earlier one of the same key, each applied at once to the
 * dense dim columns' chunks the batch holds (dense.c). The invariants the writer's
 * files share are in internal.h ("The writer"). */
#include "store/internal.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

int pending_new(struct store *s, struct store_error *err)
{
    s->pending = calloc(1, sizeof *s->pending);
    if (!s->pending ||
        !(s->pending->truncated = calloc((size_t)s->views->nviews, sizeof *s->pending->truncated)) ||
        !(s->pending->staging = calloc((size_t)s->views->nviews, sizeof *s->pending->staging)) ||
        !(s->pending->spare = calloc((size_t)s->views->nviews, sizeof *s->pending->spare)) ||
        !(s->pending->memo_first = calloc((size_t)s->views->nviews, sizeof *s->pending->memo_first)))
        return store_fail(err, "out of memory");
    hashtab_init(&s->pending->values, 2, sizeof(int64_t));
    int widths = 0;
    for (int v = 0; v < s->views->nviews; v++) {
        s->pending->memo_first[v] = widths;
        widths += s->views->views[v].nwidths * SEGMENT_MEMO_SPANS;
    }
    if (!(s->pending->memo = calloc((size_t)widths + 1, sizeof *s->pending->memo)))
        return store_fail(err, "out of memory");
    return 0;
}

/* Takes a segment's decoded bytes off what the batch holds. */
void pending_unhold(struct pending *p, const struct cellmap *m)
{
    p->bytes -= m->bytes < p->bytes ? m->bytes : p->bytes;
}

void pending_forget(struct pending *p, struct bytemap_entry *e)
{
    struct cellmap *m = e->ptr;
    pending_unhold(p, m);
    cellmap_free(m);
    bytemap_remove(&p->segments, e);
}

/* The held bytes, counted afresh (encoding drops dead cells). */
void pending_recount(struct pending *p)
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
            pending_forget(p, e);
    }
}

/* Forgets the batch: everything not yet committed. */
void pending_clear_truncated(struct pending *p, int nviews)
{
    for (int v = 0; v < nviews; v++)
        atomic_store_explicit(&p->truncated[v], false, memory_order_relaxed);
}

void pending_reset(struct pending *p, const struct sql_view_list *views)
{
    struct store_error ignored; /* the batch goes either way */
    load_join(p, views->nviews, &ignored);
    if (p->txn) {
        mdb_txn_abort(p->txn);
        p->txn = NULL;
    }
    encode_job_free(p->job);
    p->job = NULL;
    drop_segments(p, true);
    p->bytes = 0;
    hashtab_clear(&p->values);
    BYTEMAP_EACH(&p->dict, e) free(e->ptr);
    bytemap_clear(&p->dict);
    bytemap_clear(&p->dict_next); /* re-read from the store: ids of a dropped batch are reused */
    dense_forget(p);
    pending_clear_truncated(p, views->nviews);
    for (int v = 0; v < views->nviews; v++) {
        if (p->staging[v])
            staging_clear(p->staging[v]);
        if (p->spare[v])
            staging_clear(p->spare[v]);
    }
    p->nfolds = 0;
}

void pending_free(struct store *s)
{
    if (!s->pending)
        return;
    pending_reset(s->pending, s->views);
    bytemap_clear(&s->pending->segments);
    free(s->pending->folds);
    free(s->pending->truncated);
    for (int v = 0; v < s->views->nviews; v++) {
        staging_free(s->pending->staging ? s->pending->staging[v] : NULL);
        staging_free(s->pending->spare ? s->pending->spare[v] : NULL);
    }
    free(s->pending->staging);
    free(s->pending->spare);
    free(s->pending->memo);
    free(s->pending->memo_first);
    hashtab_free(&s->pending->values);
    free(s->pending);
    s->pending = NULL;
}

void store_set_cache_bytes(struct store *s, size_t bytes) { s->cache_bytes = bytes; }
size_t store_cache_bytes(const struct store *s) { return s->cache_bytes; }

void pending_give_heap_back(struct store *s)
{
    for (int v = 0; v < s->views->nviews; v++) {
        if (s->pending->staging[v])
            staging_release(s->pending->staging[v]);
        if (s->pending->spare && s->pending->spare[v])
            staging_release(s->pending->spare[v]);
    }
    malloc_trim(0);
    s->heap_owed = false;
}

void store_set_keep_heap(struct store *s, bool keep)
{
    s->keep_heap = keep;
    if (!keep && s->heap_owed && s->pending)
        pending_give_heap_back(s);
}

void store_set_inline_fold_bytes(struct store *s, size_t bytes) { s->inline_fold_bytes = bytes; }
void store_set_fold_budget_us(struct store *s, int64_t us) { s->fold_budget_us = us; }

int store_set_bulk(struct store *s, bool bulk, struct store_error *err)
{
    /* A load's work still in flight goes into the batch's transaction
     * first, so that reads outside bulk mode need not look for it; the
     * next commit commits it. */
    if (s->pending && load_settle(s, err)) {
        pending_reset(s->pending, s->views);
        return -1;
    }
    s->bulk = bulk;
    if (!bulk && s->pending) /* decoded segments would take changes whole: drop the clean ones */
        BYTEMAP_EACH(&s->pending->segments, e)
        {
            if (!((struct cellmap *)e->ptr)->dirty)
                pending_forget(s->pending, e);
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
        if (s->pending->staging[v])
            bytes += staging_bytes(s->pending->staging[v]);
    return bytes;
}

int store_need_writer(struct store *s, struct store_error *err)
{
    if (!s->pending)
        return store_fail(err, "the store at %s is open read-only", s->dir);
    return 0;
}

/* ---- Dictionaries -------------------------------------------------------------------- */

/* The next id of a dictionary: one past the largest stored id. */
static int dict_next_id(struct store *s, MDB_txn *txn, int view, int col, int64_t *next,
                        struct store_error *err)
{
    uint8_t key[4];
    be_store_u16(key, (uint16_t)view);
    be_store_u16(key + 2, (uint16_t)col);
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

/* Whether a long text's key at one probe holds this very text: in the
 * batch (pending), else in the store (found). 0 free, 1 this text's (id
 * set), 2 another text's, -1 an error. */
static int dict_probe(struct store *s, MDB_txn *txn, int view, int col, const uint8_t *key,
                      size_t klen, const char *text, size_t len, int64_t *id,
                      struct store_error *err)
{
    struct bytemap_entry *e = bytemap_find(&s->pending->dict, key, klen);
    if (e) {
        *id = e->num;
        return len <= DICT_INLINE_BYTES ||
                       (strlen(e->ptr) == len && memcmp(e->ptr, text, len) == 0)
                   ? 1
                   : 2;
    }
    MDB_val k = {klen, (void *)key}, v;
    int rc = mdb_get(txn, s->dict, &k, &v);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc || v.mv_size != 8)
        return store_lmdb_error(err, rc ? rc : MDB_CORRUPTED, "reading a dictionary");
    *id = get_i64key(v.mv_data);
    if (len <= DICT_INLINE_BYTES)
        return 1;
    uint8_t rev[DICT_REV_KEY_BYTES];
    triple_key(rev, view, col, *id);
    MDB_val rk = {sizeof rev, rev}, rv;
    if ((rc = mdb_get(txn, s->dictrev, &rk, &rv)))
        return store_lmdb_error(err, rc, "reading a dictionary text");
    return rv.mv_size == len && memcmp(rv.mv_data, text, len) == 0 ? 1 : 2;
}

int store_dict_intern(struct store *s, int view, int col, const char *text, size_t len,
                      int64_t *id, struct store_error *err)
{
    if (store_need_writer(s, err))
        return -1;
    uint8_t key[DICT_KEY_MAX_BYTES];
    size_t klen = dict_key(key, view, col, text, len, 0);
    struct bytemap_entry *e = bytemap_find(&s->pending->dict, key, klen);
    if (e && len <= DICT_INLINE_BYTES) { /* the common case, without a transaction */
        *id = e->num;
        return 0;
    }
    MDB_txn *txn;
    if (store_txn_begin(s, MDB_RDONLY, &txn, err))
        return -1;
    int probes = len <= DICT_INLINE_BYTES ? 0 : DICT_MAX_PROBES, found = 2;
    for (int probe = 0; found == 2 && probe <= probes; probe++) {
        klen = dict_key(key, view, col, text, len, probe);
        found = dict_probe(s, txn, view, col, key, klen, text, len, id, err);
    }
    int rc = found == 0   ? dict_next_id(s, txn, view, col, id, err)
             : found == 2 ? store_fail(err, "%d texts of %zu bytes or more share the "
                                            "dictionary key of a %zu-byte text (its first %d "
                                            "bytes and hash)",
                                       DICT_MAX_PROBES + 1, (size_t)DICT_INLINE_BYTES + 1, len,
                                       DICT_PREFIX_BYTES)
                          : found == 1 ? 0 : -1;
    mdb_txn_abort(txn);
    if (rc)
        return -1;
    if (found == 1) {
        /* Stored already: remembered for the batch without its text (ptr
         * NULL: write_dict skips it), so that the next put of the same text
         * (85,196 storage locations retyped to a few types) finds it
         * without a read transaction. Only a short text, whose key is the
         * text itself: a long one's probe compares the text. */
        if (len <= DICT_INLINE_BYTES) {
            klen = dict_key(key, view, col, text, len, 0);
            if ((e = bytemap_upsert(&s->pending->dict, key, klen))) {
                e->ptr = NULL;
                e->num = *id;
            }
        }
        return 0;
    }
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

static int check_join(struct store *s, int view, int join, struct store_error *err)
{
    if (store_need_writer(s, err))
        return -1;
    if (view < 0 || view >= s->views->nviews || join < 0 ||
        join >= s->views->views[view].njoins)
        return store_fail(err, "join %d of view %d does not exist", join, view);
    return 0;
}

/* A dim row is its entries in the join's dense columns (dense.c), nothing
 * else: SPEC.md §4.2. */
int store_projection_put(struct store *s, int view, int join, int64_t key,
                         const struct store_dim_value *values, struct store_error *err)
{
    return check_join(s, view, join, err) ? -1 : dense_put(s, view, join, key, values, err);
}

int store_projection_delete(struct store *s, int view, int join, int64_t key,
                            struct store_error *err)
{
    return check_join(s, view, join, err) ? -1 : dense_delete(s, view, join, key, err);
}

int store_projection_truncate(struct store *s, int view, int join, struct store_error *err)
{
    return check_join(s, view, join, err) ? -1 : dense_truncate(s, view, join, err);
}

void store_rollback(struct store *s)
{
    if (s->pending)
        pending_reset(s->pending, s->views);
}
