/* physical.c -- `--wal physical`: following a physical replication slot,
 * decoding the followed tables' heap records into the same store deltas
 * logical mode applies.
 *
 * The path of a byte: START_REPLICATION SLOT s PHYSICAL sends the server's
 * WAL in XLogData frames; the reader (pgwal.h) assembles records; every
 * record goes through the heap mirror (heap_mirror.h), which keeps the
 * followed tables' pages and reports each row change with its old and new
 * tuple; a change waits in its transaction's spool (spool.h: memory, then a
 * temporary file) until the transaction's commit record, where its tuples
 * are taken apart (heap_tuple.h) into the columns rows.c applies. An abort
 * drops the spool.
 *
 * Invariants (SPEC.md §5.4 argues them):
 *   1. Reading starts at a checkpoint's redo pointer (the slot's
 *      restart_lsn, which ingest only ever moves to such a pointer), so the
 *      mirror holds every page a record needs (heap_mirror.h invariant 1).
 *   2. The store's pending changes hold whole transactions only; its
 *      position is the end of the last record whose transaction ends were
 *      all handled, so a commit that ends at or before the stored position
 *      has been applied, and one after it has not.
 *   3. The slot is told (as its flush position, which a physical slot takes
 *      as restart_lsn) only the redo pointer of a checkpoint at or before
 *      both the stored position and the first change of every transaction
 *      still open: a restart reads every change it may still need.
 *   4. After a load, commits the load's snapshot sees are in the store
 *      already and are not applied; the store keeps position 0 (not loaded)
 *      until its first commit at or past the snapshot's WAL position, after
 *      which invariant 2 holds.
 *   5. What the follower cannot follow exactly (a table rewritten, a file
 *      switched under it before a restart, a TOASTed value it reads, a
 *      page whose image it missed) stops it with a message saying what to
 *      run; nothing is guessed. */
#include "base/error.h"
#include "base/hashtab.h"
#include "ingest/heap_mirror.h"
#include "ingest/heap_tuple.h"
#include "ingest/internal.h"
#include "ingest/metrics.h"
#include "ingest/pgoutput.h"
#include "ingest/spool.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The heap mirror's bound: the live rows of the pages changed between two
 * checkpoints are what it holds (heap_mirror.h invariants 3 and 4), at most
 * about 1.3 times those pages' size on the server. 4 GiB is some 400,000
 * pages of live rows changed between checkpoints (the default
 * checkpoint_timeout of 5 min at 1,300 distinct pages a second); past it
 * ingest stops with a message rather than take the machine's memory.
 * STRAUM_MIRROR_MAX_MB overrides it. */
#define MIRROR_MAX_BYTES ((size_t)4 << 30)

/* Checkpoint redo pointers remembered for feedback (invariant 3): one per
 * checkpoint read; a transaction open longer than this many checkpoints
 * holds the slot at the oldest one kept. */
#define MAX_REDOS 64

/* A transaction with changes to followed tables, waiting for its end. */
struct ptxn {
    uint32_t xid;             /* top-level, or a subtransaction whose top is not known yet */
    uint64_t first_lsn;       /* its first change: where a restart must read from */
    struct spool spool;
    uint32_t *subs;           /* subtransactions known to be its own */
    int nsubs, capsubs;
    uint32_t *aborted;        /* subtransactions rolled back (their changes are skipped) */
    int naborted, capaborted;
    int at;                   /* its place in the follower's txns */
    bool unordered;           /* holds a subtransaction's spool appended late:
                                 its entries are not in LSN order */
    bool gathered;            /* taken into an ending transaction's parts */
};

/* A relation file created lately (smgr CREATE): a followed table's file
 * switched at a TRUNCATE or rewrite is one of these. */
struct created_file {
    struct pgwal_relfilenode node;
    uint64_t lsn;
    bool written;             /* a record wrote a block of it before its commit */
};

struct pfollower {
    const struct ingest_options *opt;
    struct source *src;
    struct store *st;
    struct physical_start *ps;
    PGconn *repl, *catalog;
    struct receiver *rx;       /* reads repl from START_REPLICATION on */
    bool standby;             /* the source is a hot standby: its catalog may
                                 stand behind the WAL it sends */
    char *err;
    size_t errlen;

    struct pgwal_reader rd;
    struct heap_mirror *mirror;
    uint32_t seg_size, tli;
    uint64_t sysid;
    uint64_t start_lsn;       /* where this reading began (the slot's restart_lsn) */
    uint64_t read_lsn;        /* end of the last record handled */
    uint64_t received;        /* end of the WAL received */
    uint64_t server_lsn;
    uint64_t flushed;         /* the restart point last told the slot */

    struct ptxn **txns;       /* open transactions, in no order */
    int ntxns, captxns;
    struct hashtab index;     /* xid -> struct xid_entry (below) */
    struct spool spare_spool; /* the memory of a dropped transaction's spool,
                                 for the next one (spool_recycle) */
    struct ptxn *merging;     /* txn_assign: the spool appended to */
    size_t index_dead;
    uint64_t redos[MAX_REDOS];
    int nredos;
    struct created_file *created;
    int ncreated, capcreated;
    struct hashtab created_index; /* node -> its place in created (one lookup
                                     a block of every record: note_writes) */

    uint32_t *switch_xid;     /* per table: the transaction that made its
                                 current file, met at a restart (on_smgr) */
    uint64_t applied_lsn;     /* end of the last transaction applied */
    int64_t applied_time;
    struct pace_group g;      /* applied, and what the store holds */
    bool loading;             /* invariant 4: the store is at position 0 */
    int64_t last_feedback, last_data, last_check;
    uint64_t target_lsn;

    /* One change's columns, reused (rows.c takes them per row). */
    struct heap_datum *datums;
    struct heap_value *values;
    struct arena {
        uint8_t *bytes;
        size_t cap;
    } old_arena, new_arena;   /* the send format of values that are not in the tuple */
    struct row_value *old_row, *new_row;
    int maxatts, maxcols;
};

static int fail(struct pfollower *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct pfollower *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vfmt(f->err, f->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

void physical_start_free(struct physical_start *ps)
{
    free(ps->xip);
    *ps = (struct physical_start){0};
}

/* ---- Tables by file --------------------------------------------------------------- */

/* WAL the server holds past what the follower read, as the walsender
 * last said. */
static uint64_t behind(const struct pfollower *f)
{
    return f->server_lsn > f->read_lsn ? f->server_lsn - f->read_lsn : 0;
}

static bool same_node(struct pgwal_relfilenode a, struct pgwal_relfilenode b)
{
    return a.rel == b.rel && a.db == b.db && a.spc == b.spc;
}

static struct source_table *table_of(struct pfollower *f, struct pgwal_relfilenode node)
{
    for (int i = 0; i < f->src->ntables; i++)
        if (same_node(f->src->tables[i].node, node))
            return &f->src->tables[i];
    return NULL;
}

/* ---- Files created lately ----------------------------------------------------------- */

static void node_key(struct pgwal_relfilenode n, uint64_t key[2])
{
    key[0] = (uint64_t)n.db << 32 | n.rel;
    key[1] = n.spc;
}

/* The file created lately at node, or NULL. */
static struct created_file *created_of(struct pfollower *f, struct pgwal_relfilenode node)
{
    if (!f->ncreated)
        return NULL;
    uint64_t key[2];
    node_key(node, key);
    int *at = hashtab_find(&f->created_index, key, hashtab_hash(&f->created_index, key));
    return at ? &f->created[*at] : NULL;
}

/* Indexes created[i] by its node. 0, or -1 out of memory. */
static int created_index_put(struct pfollower *f, int i)
{
    uint64_t key[2];
    node_key(f->created[i].node, key);
    bool added;
    int *at = hashtab_upsert(&f->created_index, key, hashtab_hash(&f->created_index, key),
                             &added);
    if (!at)
        return -1;
    *at = i;
    return 0;
}

/* ---- Transactions ------------------------------------------------------------------ */

/* The index's entry of an xid: the transaction holding its own spool (a
 * top-level one, or a subtransaction whose owner was not known when it
 * made its first change) and the owner it is known to belong to. A
 * dropped transaction leaves its entries dead (both NULL) rather than
 * removed (base/hashtab.h removes nothing): the index is rebuilt from the
 * live transactions once the dead outnumber them. So every lookup is
 * O(1), even for a transaction of a million subtransactions (a PL/pgSQL
 * loop with an exception block makes one per iteration). */
struct xid_entry {
    struct ptxn *own, *owner;
};

static struct xid_entry *xid_entry(struct pfollower *f, uint32_t xid, bool create)
{
    uint64_t key = xid;
    uint64_t h = hashtab_hash(&f->index, &key);
    if (!create)
        return hashtab_find(&f->index, &key, h);
    bool added;
    struct xid_entry *e = hashtab_upsert(&f->index, &key, h, &added);
    if (e && added)
        *e = (struct xid_entry){NULL, NULL};
    return e;
}

static struct ptxn *txn_find(struct pfollower *f, uint32_t xid)
{
    struct xid_entry *e = xid_entry(f, xid, false);
    return e ? e->own : NULL;
}

/* The transaction a subtransaction is known to belong to. */
static struct ptxn *txn_owning(struct pfollower *f, uint32_t sub)
{
    struct xid_entry *e = xid_entry(f, sub, false);
    return e ? e->owner : NULL;
}

/* Builds the index again from the live transactions. 0, or -1 out of
 * memory. */
static int index_rebuild(struct pfollower *f)
{
    hashtab_clear(&f->index);
    f->index_dead = 0;
    for (int i = 0; i < f->ntxns; i++) {
        struct ptxn *t = f->txns[i];
        struct xid_entry *e = xid_entry(f, t->xid, true);
        if (!e)
            return -1;
        e->own = t;
        for (int k = 0; k < t->nsubs; k++) {
            if (!(e = xid_entry(f, t->subs[k], true)))
                return -1;
            e->owner = t;
        }
    }
    return 0;
}

static struct ptxn *txn_get(struct pfollower *f, uint32_t xid, uint64_t lsn)
{
    struct xid_entry *e = xid_entry(f, xid, true);
    if (!e)
        return NULL;
    if (e->owner)
        return e->owner;
    if (e->own)
        return e->own;
    if (f->ntxns == f->captxns) {
        int cap = f->captxns ? f->captxns * 2 : 16;
        struct ptxn **n = realloc(f->txns, sizeof *n * (size_t)cap);
        if (!n)
            return NULL;
        f->txns = n;
        f->captxns = cap;
    }
    struct ptxn *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->xid = xid;
    t->first_lsn = lsn;
    spool_reuse(&t->spool, &f->spare_spool);
    t->at = f->ntxns;
    f->txns[f->ntxns++] = t;
    e->own = t;
    return t;
}

static int push_xid(uint32_t **arr, int *n, int *cap, uint32_t xid)
{
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 8;
        uint32_t *a = realloc(*arr, sizeof *a * (size_t)c);
        if (!a)
            return -1;
        *arr = a;
        *cap = c;
    }
    (*arr)[(*n)++] = xid;
    return 0;
}

/* Drops transaction t (and its spool); its index entries die. Returns 0,
 * or -1 when the index could not be rebuilt (out of memory). */
static int txn_drop(struct pfollower *f, struct ptxn *t)
{
    struct xid_entry *e = xid_entry(f, t->xid, false);
    if (e && e->own == t) {
        e->own = NULL;
        f->index_dead++;
    }
    for (int k = 0; k < t->nsubs; k++)
        if ((e = xid_entry(f, t->subs[k], false)) && e->owner == t) {
            e->owner = NULL;
            f->index_dead++;
        }
    f->txns[t->at] = f->txns[--f->ntxns];
    f->txns[t->at]->at = t->at;
    spool_recycle(&t->spool, &f->spare_spool);
    free(t->subs);
    free(t->aborted);
    free(t);
    if (f->index_dead > 1024 && f->index_dead > (size_t)f->index.count / 2)
        return index_rebuild(f);
    return 0;
}

static int append_message(void *ctx, const uint8_t *msg, size_t len)
{
    struct pfollower *f = ctx;
    return spool_append(&f->merging->spool, msg, len, f->err, f->errlen);
}

/* Records that sub belongs to top (a record's top-level xid, an
 * assignment, a prepare's list): its later changes go to top's spool, and
 * a spool it made of its own before (under wal_level replica a
 * subtransaction's owner is named only every 64 subtransactions, by
 * XLOG_XACT_ASSIGNMENT) is appended to top's, which is then out of LSN
 * order (apply_spools orders its dim changes). So a transaction holds at
 * most 64 spools of unnamed subtransactions besides its own, whatever
 * their number: a spool's memory part starts at 64 KiB. */
static int txn_assign(struct pfollower *f, uint32_t top, uint32_t sub, uint64_t lsn)
{
    if (top == sub || txn_owning(f, sub))
        return 0;
    struct ptxn *t = txn_get(f, top, lsn);
    if (!t || push_xid(&t->subs, &t->nsubs, &t->capsubs, sub))
        return fail(f, "out of memory");
    struct ptxn *own = txn_find(f, sub);
    if (own) {
        f->merging = t;
        if (spool_replay(&own->spool, append_message, f, f->err, f->errlen))
            return -1;
        if (own->first_lsn < t->first_lsn)
            t->first_lsn = own->first_lsn;
        t->unordered = true;
        if (txn_drop(f, own))
            return fail(f, "out of memory");
    }
    struct xid_entry *e = xid_entry(f, sub, true);
    if (!e)
        return fail(f, "out of memory");
    e->owner = t;
    return 0;
}

/* ---- Spooled changes -----------------------------------------------------------------
 * An entry: u64 lsn, u32 xid, u8 kind, u16 table index, then the old tuple
 * (DELETE, UPDATE) and the new one (INSERT, UPDATE), each u16 infomask2,
 * u16 infomask, u8 hoff, u32 length and its bytes. Host order: a spool never
 * leaves the process. */

enum { ENTRY_HEAD = 8 + 4 + 1 + 2, TUPLE_HEAD = 2 + 2 + 1 + 4 };

static size_t put_tuple(uint8_t *p, const struct heap_mirror_tuple *t)
{
    memcpy(p, &t->infomask2, 2);
    memcpy(p + 2, &t->infomask, 2);
    p[4] = t->hoff;
    memcpy(p + 5, &t->len, 4);
    memcpy(p + TUPLE_HEAD, t->data, t->len);
    return TUPLE_HEAD + t->len;
}

static size_t get_tuple(const uint8_t *p, size_t left, struct heap_mirror_tuple *t)
{
    if (left < TUPLE_HEAD)
        return 0;
    memcpy(&t->infomask2, p, 2);
    memcpy(&t->infomask, p + 2, 2);
    t->hoff = p[4];
    memcpy(&t->len, p + 5, 4);
    if (left - TUPLE_HEAD < t->len)
        return 0;
    t->data = p + TUPLE_HEAD;
    return TUPLE_HEAD + t->len;
}

struct entry {
    uint64_t lsn;
    uint32_t xid;
    enum heap_change_kind kind;
    int table;
    struct heap_mirror_tuple old_tuple, new_tuple;
};

static bool entry_parse(const uint8_t *p, size_t len, struct entry *e)
{
    if (len < ENTRY_HEAD)
        return false;
    uint16_t table;
    memcpy(&e->lsn, p, 8);
    memcpy(&e->xid, p + 8, 4);
    e->kind = (enum heap_change_kind)p[12];
    memcpy(&table, p + 13, 2);
    e->table = table;
    size_t at = ENTRY_HEAD, n;
    if (e->kind != HEAP_CHANGE_INSERT) {
        if (!(n = get_tuple(p + at, len - at, &e->old_tuple)))
            return false;
        at += n;
    }
    if (e->kind != HEAP_CHANGE_DELETE) {
        if (!(n = get_tuple(p + at, len - at, &e->new_tuple)))
            return false;
        at += n;
    }
    return at == len;
}

/* The mirror's callback: a change to a followed table waits in its
 * transaction's spool. */
static int on_heap_change(void *ctx, const struct heap_change *c)
{
    struct pfollower *f = ctx;
    struct source_table *t = table_of(f, c->node);
    if (!t)
        return 0;
    if (c->xid == 0)
        return fail(f, "a change to %s at %X/%08X has no transaction id", t->qualified,
                    (unsigned)(c->lsn >> 32), (unsigned)c->lsn);
    struct ptxn *x = txn_get(f, c->xid, c->lsn);
    if (!x)
        return fail(f, "out of memory");
    size_t len = ENTRY_HEAD;
    if (c->kind != HEAP_CHANGE_INSERT)
        len += TUPLE_HEAD + c->old_tuple.len;
    if (c->kind != HEAP_CHANGE_DELETE)
        len += TUPLE_HEAD + c->new_tuple.len;
    uint8_t small[1024], *buf = len <= sizeof small ? small : malloc(len);
    if (!buf)
        return fail(f, "out of memory");
    uint16_t table = (uint16_t)(t - f->src->tables);
    memcpy(buf, &c->lsn, 8);
    memcpy(buf + 8, &c->xid, 4);
    buf[12] = (uint8_t)c->kind;
    memcpy(buf + 13, &table, 2);
    size_t at = ENTRY_HEAD;
    if (c->kind != HEAP_CHANGE_INSERT)
        at += put_tuple(buf + at, &c->old_tuple);
    if (c->kind != HEAP_CHANGE_DELETE)
        put_tuple(buf + at, &c->new_tuple);
    int rc = spool_append(&x->spool, buf, len, f->err, f->errlen);
    if (buf != small)
        free(buf);
    f->last_data = now_usec();
    return rc;
}

/* ---- Applying a change ------------------------------------------------------------------ */

static int grow_scratch(struct pfollower *f, const struct source_table *t)
{
    if (t->heap_natts > f->maxatts) {
        free(f->datums);
        free(f->values);
        f->datums = calloc((size_t)t->heap_natts, sizeof *f->datums);
        f->values = calloc((size_t)t->heap_natts, sizeof *f->values);
        if (!f->datums || !f->values)
            return fail(f, "out of memory");
        f->maxatts = t->heap_natts;
    }
    if (t->ncols + 1 > f->maxcols) {
        free(f->old_row);
        free(f->new_row);
        f->old_row = calloc((size_t)t->ncols + 1, sizeof *f->old_row);
        f->new_row = calloc((size_t)t->ncols + 1, sizeof *f->new_row);
        if (!f->old_row || !f->new_row)
            return fail(f, "out of memory");
        f->maxcols = t->ncols + 1;
    }
    return 0;
}

/* The largest send-format arena a tuple may take here: a compressed text
 * decompresses to at most 1 GiB (heap_tuple.h), but a row of a followed
 * table past this is refused rather than allocated. */
#define TUPLE_ARENA_MAX ((size_t)256 << 20)

/* Takes a tuple apart into the table's columns, in row (send format;
 * values converted or decompressed go to arena). A column Straum reads
 * that is out of line in TOAST is refused (invariant 5). */
static int tuple_columns(struct pfollower *f, const struct source_table *t,
                         const struct heap_mirror_tuple *tup, struct row_value *row,
                         struct arena *arena)
{
    struct heap_desc d = {t->heap_natts, t->heap_attrs};
    struct heap_tuple_header h = {tup->infomask2, tup->infomask, tup->hoff};
    char why[300];
    if (heap_tuple_deform(&d, &h, tup->data, tup->len, f->datums, why, sizeof why))
        return fail(f, "a row of %s in the WAL does not decode: %s", t->qualified, why);
    size_t need = 0;
    for (int c = 0; c < t->ncols; c++) {
        const struct heap_attr *a = &t->heap_attrs[t->col_attr[c]];
        need += heap_datum_send_size(a, &f->datums[t->col_attr[c]]);
    }
    if (need > TUPLE_ARENA_MAX)
        return fail(f, "a row of %s needs %zu bytes decompressed, past the %zu a row may take",
                    t->qualified, need, TUPLE_ARENA_MAX);
    if (need > arena->cap) {
        size_t cap = arena->cap ? arena->cap : 4096;
        while (cap < need)
            cap *= 2;
        uint8_t *a = realloc(arena->bytes, cap);
        if (!a)
            return fail(f, "out of memory");
        arena->bytes = a;
        arena->cap = cap;
    }
    size_t used = 0;
    for (int c = 0; c < t->ncols; c++) {
        int at = t->col_attr[c];
        const struct heap_attr *a = &t->heap_attrs[at];
        struct heap_value *v = &f->values[at];
        if (heap_datum_send(a, &f->datums[at], arena->bytes, arena->cap, &used, v, why,
                            sizeof why))
            return fail(f, "a row of %s in the WAL does not decode: %s", t->qualified, why);
        if (v->external)
            return fail(f, "column \"%s\" of %s holds a value stored out of line (TOAST), which "
                           "the physical WAL does not carry; --wal physical cannot follow it: "
                           "follow this table with --wal logical",
                        t->cols[c].name, t->qualified);
        if (v->unsupported)
            return fail(f, "column \"%s\" of %s is of a type --wal physical does not decode "
                           "(OID %u); follow this table with --wal logical",
                        t->cols[c].name, t->qualified, a->type_oid);
        row[c] = (struct row_value){v->is_null, false, true, v->data, (uint32_t)v->len};
    }
    return 0;
}

/* Applies one change: its fact deltas (facts) and its dim projection rows
 * (dims), as the caller orders them (apply_spools). */
static int apply_entry(struct pfollower *f, const struct entry *e, bool facts, bool dims)
{
    if (e->table < 0 || e->table >= f->src->ntables)
        return fail(f, "a spooled change names table %d of %d", e->table, f->src->ntables);
    struct source_table *t = &f->src->tables[e->table];
    if (grow_scratch(f, t))
        return -1;
    facts &= t->nfacts > 0;
    dims &= t->ndims > 0;
    if (!facts && !dims)
        return 0;
    bool has_old = e->kind != HEAP_CHANGE_INSERT, has_new = e->kind != HEAP_CHANGE_DELETE;
    if (has_old && tuple_columns(f, t, &e->old_tuple, f->old_row, &f->old_arena))
        return -1;
    if (has_new && tuple_columns(f, t, &e->new_tuple, f->new_row, &f->new_arena))
        return -1;
    int rc = 0;
    if (facts)
        rc = rows_apply_fact_change(f->st, t, has_old ? f->old_row : NULL,
                                    has_new ? f->new_row : NULL, f->err, f->errlen);
    if (rc == 0 && dims) {
        bool drop_old = e->kind == HEAP_CHANGE_DELETE ||
                        (e->kind == HEAP_CHANGE_UPDATE &&
                         rows_dim_key_changed(t, f->old_row, f->new_row));
        if (drop_old)
            rc = rows_delete_dim(f->st, t, f->old_row, f->err, f->errlen);
        if (rc == 0 && has_new)
            rc = rows_put_dim(f->st, t, f->new_row, f->err, f->errlen);
    }
    if (!facts && t->nfacts)
        return rc; /* counted when its facts were applied */
    f->g.rows++;
    f->g.batch.changes[e->kind == HEAP_CHANGE_INSERT   ? CHANGE_INSERT
                       : e->kind == HEAP_CHANGE_UPDATE ? CHANGE_UPDATE
                                                       : CHANGE_DELETE]++;
    return rc;
}

/* ---- A transaction's end ------------------------------------------------------------------ */

/* Replaying the spools of one ending transaction. Fact deltas add up the
 * same in any order, so each spool is applied as it is read; a dim's
 * projection rows are put and deleted, which does not commute, so with
 * more than one spool or one out of LSN order (subtransactions whose owner
 * was learnt late) the dim changes are gathered and applied in LSN order. */
struct gather {
    struct pfollower *f;
    const uint32_t *skip;     /* rolled-back subtransactions */
    int nskip;
    bool order_dims;
    struct dim_entry {
        uint64_t lsn;
        uint8_t *bytes;
        size_t len;
    } *dims;
    size_t ndims, capdims;
};

static int replay_entry(void *ctx, const uint8_t *msg, size_t len)
{
    struct gather *g = ctx;
    struct entry e;
    if (!entry_parse(msg, len, &e))
        return fail(g->f, "a spooled change of %zu bytes does not parse", len);
    for (int i = 0; i < g->nskip; i++)
        if (g->skip[i] == e.xid)
            return 0;
    if (g->order_dims && e.table < g->f->src->ntables && g->f->src->tables[e.table].ndims) {
        if (g->ndims == g->capdims) {
            size_t cap = g->capdims ? g->capdims * 2 : 64;
            struct dim_entry *d = realloc(g->dims, sizeof *d * cap);
            if (!d)
                return fail(g->f, "out of memory");
            g->dims = d;
            g->capdims = cap;
        }
        uint8_t *copy = malloc(len);
        if (!copy)
            return fail(g->f, "out of memory");
        memcpy(copy, msg, len);
        g->dims[g->ndims++] = (struct dim_entry){e.lsn, copy, len};
        /* a table that is both: its fact deltas now, its dim rows in order */
        return apply_entry(g->f, &e, true, false);
    }
    return apply_entry(g->f, &e, true, true);
}

static int by_lsn(const void *a, const void *b)
{
    const struct dim_entry *x = a, *y = b;
    return x->lsn < y->lsn ? -1 : x->lsn > y->lsn;
}

/* Applies the changes of the spools (of one transaction) in parts. */
static int apply_spools(struct pfollower *f, struct ptxn **parts, int nparts, const uint32_t *skip,
                        int nskip)
{
    bool unordered = nparts > 1;
    for (int i = 0; i < nparts; i++)
        unordered |= parts[i]->unordered;
    struct gather g = {f, skip, nskip, unordered, NULL, 0, 0};
    int rc = 0;
    for (int i = 0; i < nparts && rc == 0; i++)
        rc = spool_replay(&parts[i]->spool, replay_entry, &g, f->err, f->errlen);
    if (rc == 0 && g.ndims)
        qsort(g.dims, g.ndims, sizeof *g.dims, by_lsn);
    for (size_t i = 0; i < g.ndims; i++) {
        struct entry e;
        if (rc == 0 && entry_parse(g.dims[i].bytes, g.dims[i].len, &e))
            rc = apply_entry(f, &e, false, true);
        free(g.dims[i].bytes);
    }
    free(g.dims);
    return rc;
}

/* Whether the load's snapshot sees xid committed (invariant 4). xid is
 * 32-bit; the snapshot's are full: xid is taken in the epoch that puts it
 * nearest the snapshot's xmax. */
static bool snapshot_sees(const struct physical_start *ps, uint32_t xid)
{
    uint64_t full = (ps->xmax & ~(uint64_t)0xFFFFFFFF) | xid;
    if (full > ps->xmax + 0x80000000ULL)
        full -= 1ULL << 32;
    else if (full + 0x80000000ULL < ps->xmax)
        full += 1ULL << 32;
    if (full >= ps->xmax)
        return false;
    for (int i = 0; i < ps->nxip; i++)
        if (ps->xip[i] == full)
            return false;
    return true; /* below xmax and not running: ended before the snapshot */
}

/* The catalog connection sees what transaction xid committed, at the
 * commit record ending at end. Reading the record is not enough: a primary
 * flushes a commit record (and its walsender may send it) before the
 * transaction leaves the proc array, so for a moment a query still sees
 * the catalog from before (found by test_ingest_physical: a TRUNCATE read
 * as a rewrite, the old file still named). So on a primary the xid must
 * be visible in a snapshot taken now; a standby sends WAL it has received
 * before replaying it, and there replay must pass end. Polled every 10 ms
 * for at most 60 s, then a retry from the slot. 0, or 1 with err. */
static int catalog_at(struct pfollower *f, uint64_t end, uint32_t xid)
{
    int64_t until = now_usec() + 60000000;
    char lsn[32], id[16];
    lsn_text(end, lsn);
    snprintf(id, sizeof id, "%u", xid);
    const char *params[2] = {lsn, id};
    for (;;) {
        /* xid's epoch: the one that puts it below the snapshot's xmax */
        PGresult *r = PQexecParams(
            f->catalog,
            f->standby ? "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn"
                       : "SELECT pg_visible_in_snapshot((CASE WHEN x >= m THEN x - 4294967296 "
                         "ELSE x END)::text::xid8, s) FROM (SELECT s, m, (m >> 32 << 32) | "
                         "$1::bigint AS x FROM (SELECT s, pg_snapshot_xmax(s)::text::bigint AS "
                         "m FROM pg_current_snapshot() s) a) b",
            1, NULL, f->standby ? params : params + 1, NULL, NULL, 0);
        bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
        bool there = ok && PQgetvalue(r, 0, 0)[0] == 't';
        PQclear(r);
        if (!ok)
            return (fail(f, "asking the catalog whether it has %s: %s", lsn,
                         PQerrorMessage(f->catalog)), 1);
        if (there)
            return 0;
        if (now_usec() > until || ingest_stop_requested)
            return (fail(f, "the catalog does not show transaction %u, committed at %s, after "
                            "60 s", xid, lsn), 1);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* SharedInvalidationMessage (storage/sinval.h): 16 bytes, an int8 id
 * first; a relcache one (id -2) names dbId at 4 and relId at 8 (0: every
 * relation). */
#define INVAL_RELCACHE_ID (-2)

/* A commit that invalidated a followed table's relcache entry (ALTER
 * TABLE, and statistics updates too) may have changed its columns: the
 * catalog is asked before anything after the commit is applied, and a
 * layout that changed stops ingest (invariant 5). */
static int check_layouts(struct pfollower *f, const struct pgwal_record *rec,
                         const struct pgwal_xact *x)
{
    bool checked_any = false;
    for (uint32_t i = 0; i < x->nmsgs; i++) {
        const uint8_t *m = x->msgs + (size_t)i * PGWAL_INVAL_MSG_SIZE;
        if ((int8_t)m[0] != INVAL_RELCACHE_ID)
            continue;
        uint32_t rel = pgwal_u32_at(m + 8, 0);
        for (int k = 0; k < f->src->ntables; k++) {
            struct source_table *t = &f->src->tables[k];
            if (rel != 0 && rel != t->relid)
                continue;
            if (!checked_any && catalog_at(f, rec->end, x->xid))
                return 1;
            checked_any = true;
            int rc = source_check_physical(f->catalog, t, f->err, f->errlen);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* A followed table's file dropped by a commit: a TRUNCATE gave it a new,
 * empty file, which is followed from here; a rewrite (VACUUM FULL, CLUSTER,
 * ALTER TABLE ... TYPE) or a TRUNCATE written to in its own transaction
 * filled the new file before the commit, which the follower did not read:
 * it stops (invariant 5). applied: the commit's changes are applied (not
 * in the load). */
static int file_switched(struct pfollower *f, struct source_table *t,
                         const struct pgwal_record *rec, uint32_t xid, bool applied)
{
    struct pgwal_relfilenode now;
    char why[400];
    uint64_t commit_lsn = rec->lsn;
    if (catalog_at(f, rec->end, xid))
        return 1;
    if (source_relfilenode_now(f->catalog, t, &now, why, sizeof why))
        return fail(f, "the file of table %s was dropped at %X/%08X and its new one could not "
                       "be read from the catalog (%s); if the table was dropped, change the "
                       "views and rerun with --rebuild",
                    t->qualified, (unsigned)(commit_lsn >> 32), (unsigned)commit_lsn, why);
    struct created_file *cf = created_of(f, now);
    if (cf && cf->lsn >= commit_lsn)
        cf = NULL;
    if (!cf || cf->written)
        return fail(f, "table %s was %s at %X/%08X: its rows moved to a new file that the "
                       "physical WAL fills without row changes, which --wal physical cannot "
                       "follow; rerun with --rebuild to load it again (or follow it with --wal "
                       "logical)",
                    t->qualified,
                    !cf ? "given a new file more than once before Straum read it"
                        : "rewritten (VACUUM FULL, CLUSTER, ALTER TABLE, or TRUNCATE and new "
                          "rows in one transaction)",
                    (unsigned)(commit_lsn >> 32), (unsigned)commit_lsn);
    if (applied) {
        struct store_error serr;
        for (int k = 0; k < t->nfacts; k++)
            if (store_truncate_view(f->st, t->facts[k].view, &serr))
                return fail(f, "%s", serr.message);
        for (int k = 0; k < t->ndims; k++)
            if (store_projection_truncate(f->st, t->dims[k].view, t->dims[k].join, &serr))
                return fail(f, "%s", serr.message);
        f->g.batch.changes[CHANGE_TRUNCATE]++;
        log_info("TRUNCATE of %s applied", t->qualified);
    }
    t->node = now;
    if (heap_mirror_follow(f->mirror, now))
        return fail(f, "out of memory");
    return 0;
}

/* The end of transaction xid (with subtransactions subs): applied when
 * commit and not already in the store, else dropped. */
static int switch_ended(struct pfollower *f, const uint32_t *xids, int nxids, bool commit,
                        const struct pgwal_record *rec);

static int txn_end(struct pfollower *f, const struct pgwal_record *rec,
                   const struct pgwal_xact *x, bool commit)
{
    uint32_t xid = x->xid;
    /* A known subtransaction (ROLLBACK TO SAVEPOINT) or a top-level one (or
     * a subtransaction whose owner was never named: its own spool is all
     * of it) */
    struct ptxn *owner = txn_owning(f, xid), *top = owner ? NULL : txn_find(f, xid);
    bool is_sub = owner != NULL;
    /* Every spool this end covers: the transaction's own, its known
     * subtransactions', and those the record lists. */
    int cap = 1 + (int)x->nsubxacts + (top ? top->nsubs : 0);
    struct ptxn **parts = malloc(sizeof *parts * (size_t)cap);
    uint32_t *ids = malloc(sizeof *ids * (size_t)cap);
    if (!parts || !ids) {
        free(parts);
        free(ids);
        return fail(f, "out of memory");
    }
    int nids = 0, nparts = 0;
    ids[nids++] = xid;
    for (uint32_t i = 0; i < x->nsubxacts; i++)
        ids[nids++] = pgwal_u32_at(x->subxacts, i);
    for (int i = 0; top && i < top->nsubs; i++)
        ids[nids++] = top->subs[i];
    int rc = 0;
    if (is_sub && !commit) {
        /* ROLLBACK TO SAVEPOINT: the subtransaction and its children are
         * undone within a transaction that goes on. */
        for (int i = 0; i < nids && rc == 0; i++)
            if (push_xid(&owner->aborted, &owner->naborted, &owner->capaborted, ids[i]))
                rc = fail(f, "out of memory");
    }
    /* gather (own spools of listed subtransactions included) */
    for (int i = 0; i < nids; i++) {
        struct ptxn *p = txn_find(f, ids[i]);
        if (p && !p->gathered) {
            p->gathered = true;
            parts[nparts++] = p;
        }
    }
    bool skip = !commit || rec->end <= f->g.stored_lsn ||
                (f->loading && f->ps && snapshot_sees(f->ps, xid));
    if (rc == 0 && !is_sub)
        rc = switch_ended(f, ids, nids, commit, rec);
    if (rc == 0 && commit && is_sub)
        rc = fail(f, "a commit record at %X/%08X ends transaction %u, known as a subtransaction",
                  (unsigned)(rec->lsn >> 32), (unsigned)rec->lsn, xid);
    if (rc == 0 && !skip && nparts) {
        if (!f->g.dirty)
            f->last_data = now_usec();
        pace_applying(&f->g, f->st, behind(f));
        rc = apply_spools(f, parts, nparts, top ? top->aborted : NULL, top ? top->naborted : 0);
    }
    /* Files the commit dropped (a TRUNCATE, a rewrite, a DROP). */
    for (uint32_t i = 0; rc == 0 && commit && i < x->nrels; i++) {
        struct source_table *t = table_of(f, pgwal_relfilenode_at(x->rels, i));
        if (t && rec->end > f->g.stored_lsn)
            rc = file_switched(f, t, rec, xid, !skip);
    }
    if (rc == 0 && commit && x->nmsgs && rec->end > f->g.stored_lsn)
        rc = check_layouts(f, rec, x);
    /* The rows the transaction deleted or updated away are dead to every
     * record to come once it commits (heap_mirror.h invariant 4). */
    heap_mirror_end(f->mirror, ids, nids, commit);
    /* drop the spools (each looked up again: a drop may rebuild the index) */
    for (int i = 0; i < nids; i++) {
        struct ptxn *p = txn_find(f, ids[i]);
        if (p && txn_drop(f, p) && rc == 0)
            rc = fail(f, "out of memory");
    }
    free(parts);
    free(ids);
    if (rc == 0 && commit && !skip) {
        f->applied_lsn = rec->end;
        f->applied_time = x->time + PG_EPOCH_OFFSET_US;
        f->g.dirty = true;
        f->g.batch.txns++;
        imetrics_applied_lsn(rec->end);
    }
    return rc;
}

/* ---- Records ------------------------------------------------------------------------------ */

static int on_xact(struct pfollower *f, const struct pgwal_record *rec)
{
    struct pgwal_xact x;
    char why[300];
    if (pgwal_xact_parse(rec, &x, why, sizeof why))
        return fail(f, "%s", why);
    switch (x.op) {
    case PGWAL_XACT_COMMIT:
    case PGWAL_XACT_COMMIT_PREPARED:
        return txn_end(f, rec, &x, true);
    case PGWAL_XACT_ABORT:
    case PGWAL_XACT_ABORT_PREPARED:
        return txn_end(f, rec, &x, false);
    case PGWAL_XACT_PREPARE:
        /* The prepared transaction stays open until COMMIT PREPARED or
         * ROLLBACK PREPARED, which other sessions log under its xid. */
        for (uint32_t i = 0; i < x.nsubxacts; i++)
            if (txn_assign(f, x.xid, pgwal_u32_at(x.subxacts, i), rec->lsn))
                return -1;
        return 0;
    case PGWAL_XACT_ASSIGNMENT:
        for (uint32_t i = 0; i < x.nsubxacts; i++)
            if (txn_assign(f, x.xtop, pgwal_u32_at(x.subxacts, i), rec->lsn))
                return -1;
        return 0;
    default:
        return 0;
    }
}

static int remember_redo(struct pfollower *f, uint64_t redo)
{
    if (f->nredos && f->redos[f->nredos - 1] >= redo)
        return 0;
    if (f->nredos == MAX_REDOS) {
        memmove(f->redos, f->redos + 1, sizeof f->redos[0] * (MAX_REDOS - 1));
        f->nredos--;
    }
    f->redos[f->nredos++] = redo;
    return 0;
}

static int on_xlog(struct pfollower *f, const struct pgwal_record *rec)
{
    struct pgwal_xlog x;
    char why[300];
    if (pgwal_xlog_parse(rec, &x, why, sizeof why))
        return fail(f, "%s", why);
    if (x.op == PGWAL_XLOG_FPW_CHANGE && !x.fpw)
        return fail(f, "full_page_writes was turned off on the server at %X/%08X; --wal "
                       "physical rebuilds pages from full-page images: turn it on again and "
                       "rerun with --rebuild",
                    (unsigned)(rec->lsn >> 32), (unsigned)rec->lsn);
    if (x.op != PGWAL_XLOG_CHECKPOINT_ONLINE && x.op != PGWAL_XLOG_CHECKPOINT_SHUTDOWN)
        return 0;
    if (!x.checkpoint.full_page_writes)
        return fail(f, "the server runs with full_page_writes off (checkpoint at %X/%08X); "
                       "--wal physical rebuilds pages from full-page images: turn it on and "
                       "rerun with --rebuild",
                    (unsigned)(rec->lsn >> 32), (unsigned)rec->lsn);
    remember_redo(f, x.checkpoint.redo);
    /* heap_mirror.h invariant 3: pages untouched since redo come back
     * whole with their next change. */
    if (heap_mirror_forget_before(f->mirror, x.checkpoint.redo) < 0)
        return fail(f, "out of memory");
    /* Files created before the oldest redo pointer remembered and not
     * switched to by now belong to something else (indexes, other tables):
     * a transaction that makes a file and commits after MAX_REDOS
     * checkpoints is not one that truncates a followed table. */
    if (f->nredos < MAX_REDOS || !f->ncreated || f->created[0].lsn >= f->redos[0])
        return 0;
    int k = 0;
    for (int i = 0; i < f->ncreated; i++)
        if (f->created[i].lsn >= f->redos[0])
            f->created[k++] = f->created[i];
    f->ncreated = k;
    hashtab_clear(&f->created_index);
    for (int i = 0; i < f->ncreated; i++)
        if (created_index_put(f, i))
            return fail(f, "out of memory");
    return 0;
}

static int switched_while_stopped(struct pfollower *f, const struct source_table *t,
                                  uint64_t lsn)
{
    return fail(f, "table %s was given a new file (TRUNCATE or a rewrite) at %X/%08X, after the "
                   "store's position, before straum-ingest last stopped: the changes made to its "
                   "old file since are not known; rerun with --rebuild",
                t->qualified, (unsigned)(lsn >> 32), (unsigned)lsn);
}

/* The end of a transaction (xids: it and its subtransactions) that made a
 * followed table's current file, met at a restart (on_smgr): a commit
 * after the store's position switched the table while ingest was stopped
 * (an ALTER TABLE or VACUUM FULL in progress when it stopped, or run
 * since), and the rows of the old file between are unknown. */
static int switch_ended(struct pfollower *f, const uint32_t *xids, int nxids, bool commit,
                        const struct pgwal_record *rec)
{
    for (int k = 0; k < f->src->ntables; k++) {
        bool ended = false;
        for (int i = 0; i < nxids && f->switch_xid[k] && !ended; i++)
            ended = f->switch_xid[k] == xids[i];
        if (!ended)
            continue;
        f->switch_xid[k] = 0;
        if (commit && rec->end > f->g.stored_lsn)
            return switched_while_stopped(f, &f->src->tables[k], rec->lsn);
    }
    return 0;
}

static int on_smgr(struct pfollower *f, const struct pgwal_record *rec)
{
    struct pgwal_smgr s;
    char why[300];
    if (pgwal_smgr_parse(rec, &s, why, sizeof why))
        return fail(f, "%s", why);
    if (s.op != PGWAL_SMGR_CREATE || s.fork != PGWAL_FORK_MAIN)
        return 0;
    /* Invariant 5 at a restart: the file the catalog names for a followed
     * table was made in the WAL read again. Whether the commit that
     * switched the table to it lies before the store's position (then it
     * was applied, and all is well) is known at the end of the
     * transaction that made it (switch_ended); one whose xid the record
     * does not give is judged now, by the record's own place. */
    struct source_table *t = table_of(f, s.node);
    if (t && !f->loading) {
        if (rec->xid)
            f->switch_xid[t - f->src->tables] = rec->xid;
        else if (rec->end > f->g.stored_lsn)
            return switched_while_stopped(f, t, rec->lsn);
    }
    if (f->ncreated == f->capcreated) {
        int cap = f->capcreated ? f->capcreated * 2 : 16;
        struct created_file *c = realloc(f->created, sizeof *c * (size_t)cap);
        if (!c)
            return fail(f, "out of memory");
        f->created = c;
        f->capcreated = cap;
    }
    f->created[f->ncreated] = (struct created_file){s.node, rec->lsn, false};
    /* a file number used again (OIDs wrap) names its newest file */
    if (created_index_put(f, f->ncreated++))
        return fail(f, "out of memory");
    return 0;
}

/* A block written in a file created lately, before any commit switched a
 * table to it: a rewrite or a TRUNCATE written to (file_switched). */
static void note_writes(struct pfollower *f, const struct pgwal_record *rec)
{
    if (!f->ncreated || rec->rmid == PGWAL_RM_SMGR)
        return;
    for (int b = 0; b <= rec->max_block_id; b++) {
        const struct pgwal_block *blk = &rec->blocks[b];
        if (!blk->in_use || blk->fork != PGWAL_FORK_MAIN)
            continue;
        struct created_file *cf = created_of(f, blk->node);
        if (cf)
            cf->written = true;
    }
}

static int on_record(struct pfollower *f, const struct pgwal_record *rec)
{
    if (rec->toplevel_xid && rec->xid && txn_assign(f, rec->toplevel_xid, rec->xid, rec->lsn))
        return -1;
    note_writes(f, rec);
    int rc = heap_mirror_replay(f->mirror, rec, on_heap_change, f, f->err, f->errlen);
    if (rc)
        return rc;
    switch (rec->rmid) {
    case PGWAL_RM_XACT:
        rc = on_xact(f, rec);
        break;
    case PGWAL_RM_XLOG:
        rc = on_xlog(f, rec);
        break;
    case PGWAL_RM_SMGR:
        rc = on_smgr(f, rec);
        break;
    default:
        break;
    }
    if (rc == 0)
        f->read_lsn = rec->end;
    return rc;
}

/* ---- Store commits and feedback ----------------------------------------------------------- */

/* A failed store write wrote nothing (pace_failed). */
static int store_failed(struct pfollower *f, const struct store_error *serr)
{
    return pace_failed(&f->g, serr, f->opt, f->err, f->errlen);
}

/* The restart point (invariant 3): the newest checkpoint's redo pointer at
 * or before the stored position and every open transaction's first change;
 * never behind what the slot was told already. */
static uint64_t restart_point(const struct pfollower *f)
{
    uint64_t bound = f->loading ? f->start_lsn : f->g.stored_lsn;
    for (int i = 0; i < f->ntxns; i++)
        if (f->txns[i]->first_lsn < bound)
            bound = f->txns[i]->first_lsn;
    uint64_t best = f->flushed;
    for (int i = 0; i < f->nredos; i++)
        if (f->redos[i] <= bound && f->redos[i] > best)
            best = f->redos[i];
    return best;
}

/* A standby status update: written = the WAL received; flushed (and
 * applied) = the restart point (invariant 3), which a physical slot takes
 * as its restart_lsn. Except in answer to the server's ping (answer): a
 * walsender shutting down waits until its client's flush position, or the
 * written one where no flush position is given, equals what it sent
 * (WalSndDone), and the restart point stays behind by design; so a ping
 * is answered with no flush position (0, which leaves the slot where it
 * is: PhysicalConfirmReceivedLocation is only called for a valid one) and
 * the server can stop. Found by test_ingest_physical: pg_ctl stop timed
 * out under a following ingest. */
static int send_feedback(struct pfollower *f, bool answer)
{
    uint8_t msg[WAL_STATUS_BYTES];
    f->flushed = restart_point(f);
    uint64_t flush = answer ? 0 : f->flushed;
    wal_status_encode(msg, f->received, flush, flush, now_usec() - PG_EPOCH_OFFSET_US, false);
    char why[300];
    if (!f->rx)
        return 0; /* not streaming yet: nothing to tell */
    if (receiver_send(f->rx, msg, sizeof msg, why, sizeof why))
        return fail(f, "sending feedback: %s", why);
    f->last_feedback = now_usec();
    return 0;
}

static int store_at(struct pfollower *f, uint64_t lsn, int64_t commit_time)
{
    struct store_position pos = {lsn, commit_time, now_usec(),
                                 f->server_lsn > lsn ? f->server_lsn - lsn : 0};
    if (pace_commit(&f->g, f->st, &pos, f->opt, f->err, f->errlen))
        return -1;
    if (f->loading) {
        char text[32];
        log_info("the load is consistent with the WAL at %s; following", lsn_text(lsn, text));
        f->loading = false;
        if (f->ps)
            f->ps->loaded = false;
    }
    return 0;
}

/* Group commit as logical mode does it (stream.c, pace_group_ready): whole
 * transactions, spaced by the last commit's time, at once when the stream
 * went idle (idle: nothing arrived over the loop's last wait). With
 * nothing applied, the position still moves to the last record read, once
 * a second (or at once when a caller waits for it), so the store's lag and
 * the slot's restart point follow an idle server. While loading, nothing
 * is stored before the snapshot's WAL position. */
static int maybe_store(struct pfollower *f, bool force, bool idle)
{
    uint64_t at = f->read_lsn;
    if (at <= f->g.stored_lsn || (f->loading && at < f->ps->after))
        return 0;
    int64_t now = now_usec();
    bool ready;
    if (f->g.dirty) {
        ready = pace_group_ready(&f->g, now, f->opt->commit_interval_us, behind(f), idle);
    } else { /* the position alone: spaced from the last commit of any kind */
        int64_t every = pace_group_interval(f->opt->commit_interval_us, f->g.last_commit_us,
                                            behind(f));
        if (!f->loading && !f->opt->exit_when_caught_up)
            every = every > 1000000 ? every : 1000000;
        ready = now >= f->g.last_store + every;
    }
    if (!force && !ready)
        return 0;
    if (store_at(f, at, f->applied_time ? f->applied_time : now))
        return -1;
    return send_feedback(f, false);
}

/* ---- The connection ------------------------------------------------------------------------ */

static int parse_seg_size(const char *text, uint32_t *out)
{
    char *end;
    unsigned long long n = strtoull(text, &end, 10);
    unsigned long long mul = strcmp(end, "kB") == 0   ? 1024ULL
                             : strcmp(end, "MB") == 0 ? 1024ULL * 1024
                             : strcmp(end, "GB") == 0 ? 1024ULL * 1024 * 1024
                             : *end == '\0'           ? 1ULL
                                                      : 0;
    if (!mul || n == 0 || n * mul > PGWAL_SEG_MAX)
        return -1;
    *out = (uint32_t)(n * mul);
    return 0;
}

static int identify(struct pfollower *f)
{
    PGresult *r = PQexec(f->repl, "IDENTIFY_SYSTEM");
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 || PQnfields(r) < 3) {
        fail(f, "IDENTIFY_SYSTEM failed: %s", PQerrorMessage(f->repl));
        PQclear(r);
        return 1;
    }
    f->sysid = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
    f->tli = (uint32_t)strtoul(PQgetvalue(r, 0, 1), NULL, 10);
    PQclear(r);
    r = PQexec(f->repl, "SHOW wal_segment_size");
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
                     parse_seg_size(PQgetvalue(r, 0, 0), &f->seg_size) == 0
                 ? 0
                 : fail(f, "reading wal_segment_size failed: %s", PQerrorMessage(f->repl));
    PQclear(r);
    return rc ? 1 : 0;
}

/* The slot's restart_lsn: where this reading starts. */
static int slot_start(struct pfollower *f, uint64_t *out)
{
    const char *params[1] = {f->opt->slot};
    PGresult *r = PQexecParams(f->catalog,
                               "SELECT restart_lsn, slot_type FROM pg_replication_slots "
                               "WHERE slot_name = $1",
                               1, NULL, params, NULL, NULL, 0);
    int rc = 0;
    char lsn[32];
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = (fail(f, "reading the slot: %s", PQerrorMessage(f->catalog)), 1);
    else if (PQntuples(r) != 1)
        rc = fail(f, "the replication slot \"%s\" does not exist any more, so the changes since "
                     "%s are lost to Straum; rerun with --rebuild to load the tables again",
                  f->opt->slot, lsn_text(f->g.stored_lsn, lsn));
    else if (strcmp(PQgetvalue(r, 0, 1), "physical") != 0)
        rc = fail(f, "the replication slot \"%s\" is a %s slot; the store was made with --wal "
                     "physical: rerun with the same --wal, or with --rebuild",
                  f->opt->slot, PQgetvalue(r, 0, 1));
    else if (PQgetisnull(r, 0, 0) || !lsn_parse(PQgetvalue(r, 0, 0), out))
        rc = fail(f, "the replication slot \"%s\" holds no WAL (its restart_lsn is not set); "
                     "rerun with --rebuild",
                  f->opt->slot);
    PQclear(r);
    return rc;
}

static int start(struct pfollower *f)
{
    if (!(f->catalog = source_connect(f->opt->source, false, f->err, f->errlen)))
        return 1;
    if (!(f->repl = source_connect(f->opt->source, true, f->err, f->errlen)))
        return 1;
    int rc = identify(f);
    if (rc)
        return rc;
    PGresult *rr = PQexec(f->catalog, "SELECT pg_is_in_recovery()");
    if (PQresultStatus(rr) != PGRES_TUPLES_OK || PQntuples(rr) != 1) {
        fail(f, "asking whether the server is a standby: %s", PQerrorMessage(f->catalog));
        PQclear(rr);
        return 1;
    }
    f->standby = PQgetvalue(rr, 0, 0)[0] == 't';
    PQclear(rr);
    uint64_t start;
    if ((rc = slot_start(f, &start)))
        return rc;
    if (f->loading && start != f->ps->start)
        return fail(f, "the slot's restart point moved during the load (%X/%08X, not "
                       "%X/%08X); rerun with --rebuild",
                    (unsigned)(start >> 32), (unsigned)start, (unsigned)(f->ps->start >> 32),
                    (unsigned)f->ps->start);
    if (!f->loading && start > f->g.stored_lsn)
        return fail(f, "the replication slot \"%s\" starts at %X/%08X, past the store's "
                       "position %X/%08X: the store went back (a copy restored, another "
                       "store); rerun with --rebuild",
                    f->opt->slot, (unsigned)(start >> 32), (unsigned)start,
                    (unsigned)(f->g.stored_lsn >> 32), (unsigned)f->g.stored_lsn);
    char why[300];
    if (pgwal_reader_init(&f->rd, f->seg_size, start, f->sysid, why, sizeof why))
        return fail(f, "%s", why);
    f->start_lsn = f->read_lsn = f->flushed = f->received = start;
    size_t max_bytes = MIRROR_MAX_BYTES;
    const char *env = getenv("STRAUM_MIRROR_MAX_MB");
    if (env && *env) {
        char *end;
        unsigned long long mb = strtoull(env, &end, 10);
        if (*end || mb == 0 || mb > ((size_t)1 << 44) || env[0] == '-')
            return fail(f, "STRAUM_MIRROR_MAX_MB=%s: give a whole number of MiB from 1 to 2^44 "
                           "(or leave it unset for 4096)", env);
        max_bytes = (size_t)mb << 20;
    }
    if (!(f->mirror = heap_mirror_new(max_bytes)))
        return fail(f, "out of memory");
    for (int i = 0; i < f->src->ntables; i++)
        if (heap_mirror_follow(f->mirror, f->src->tables[i].node))
            return fail(f, "out of memory");
    char sql[300], lsn[32], q[200];
    snprintf(q, sizeof q, "\"%s\"", f->opt->slot);
    snprintf(sql, sizeof sql, "START_REPLICATION SLOT %s PHYSICAL %s TIMELINE %u", q,
             lsn_text(start, lsn), f->tli);
    PGresult *r = PQexec(f->repl, sql);
    if (PQresultStatus(r) != PGRES_COPY_BOTH) {
        fail(f, "START_REPLICATION failed: %s", PQerrorMessage(f->repl));
        PQclear(r);
        return strstr(f->err, "does not exist") || strstr(f->err, "permission denied") ? -1 : 1;
    }
    PQclear(r);
    if (!(f->rx = receiver_start(f->repl, RECEIVER_PHYSICAL_MAX_BYTES, f->err, f->errlen)))
        return -1;
    log_info("streaming the physical WAL from %s (timeline %u, segments of %u MiB)", lsn,
             f->tli, f->seg_size >> 20);
    imetrics_state(INGEST_FOLLOWING);
    return 0;
}

static int on_frame(struct pfollower *f, const uint8_t *buf, size_t len)
{
    struct wal_frame fr;
    char why[300];
    if (wal_frame_decode(buf, len, &fr, why, sizeof why))
        return fail(f, "decoding the replication stream: %s", why);
    if (fr.wal_end > f->server_lsn) {
        f->server_lsn = fr.wal_end;
        imetrics_source_lsn(fr.wal_end);
    }
    if (fr.kind == 'k')
        return fr.reply_requested ? send_feedback(f, true) : 0;
    if (fr.wal_start + fr.payload_len > f->received)
        f->received = fr.wal_start + fr.payload_len;
    if (pgwal_reader_feed(&f->rd, fr.wal_start, fr.payload, fr.payload_len, why, sizeof why))
        return fail(f, "%s", why);
    for (;;) {
        struct pgwal_record rec;
        int n = pgwal_reader_next(&f->rd, &rec, why, sizeof why);
        if (n < 0)
            return fail(f, "reading the WAL: %s", why);
        if (n == 0)
            return 0;
        int rc = on_record(f, &rec);
        if (rc)
            return rc;
        /* whole transactions only: a batch is stored between records */
        if (f->g.dirty && f->g.rows >= pace_group_rows(&f->g, behind(f)) && maybe_store(f, true, false))
            return -1;
    }
}

/* Folds delta blocks once the stream is idle (internal.h, FOLD_IDLE_US). */
static int compact_when_idle(struct pfollower *f, int64_t now)
{
    if (!f->g.compact || f->g.dirty || now - f->last_data < FOLD_IDLE_US)
        return 0;
    struct store_error serr;
    return pace_fold_slice(f->st, f->rx, &f->g.compact, &serr) ? store_failed(f, &serr) : 0;
}

static int loop(struct pfollower *f)
{
    for (;;) {
        if (ingest_stop_requested ||
            (f->opt->exit_when_caught_up && !f->g.dirty && !f->loading &&
             f->g.stored_lsn >= f->target_lsn))
            return 0;
        char *buf, why[600];
        size_t len;
        int n = receiver_next(f->rx, FOLLOW_WAIT_MS, &buf, &len, why, sizeof why);
        if (n > 0) {
            int rc = on_frame(f, (const uint8_t *)buf, len);
            PQfreemem(buf);
            if (rc)
                return rc > 0 || strstr(f->err, "sending feedback") ? 1 : -1;
        } else if (n < 0) {
            fail(f, "the replication stream ended: %s", why);
            return 1;
        }
        if (maybe_store(f, false, n == 0))
            return strstr(f->err, "sending feedback") ? 1 : -1;
        int64_t now = now_usec();
        if (compact_when_idle(f, now))
            return -1;
        if (now - f->last_feedback > 1000000 && send_feedback(f, false))
            return 1;
    }
}

int physical_follow(const struct ingest_options *opt, struct source *src, struct store *st,
                    struct physical_start *ps, char *err, size_t errlen)
{
    struct pfollower f = {.opt = opt, .src = src, .st = st, .ps = ps, .err = err,
                          .errlen = errlen};
    pace_begin(&f.g);
    hashtab_init(&f.index, 1, sizeof(struct xid_entry));
    if (!(f.switch_xid = calloc((size_t)src->ntables + 1, sizeof *f.switch_xid))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    hashtab_init(&f.created_index, 2, sizeof(int));
    struct store_read *r;
    struct store_catalog cat;
    struct store_error serr;
    if (store_read_begin(st, &r, &serr) || store_read_catalog(r, &cat, &serr)) {
        snprintf(err, errlen, "%s", serr.message);
        return -1;
    }
    store_read_end(r);
    f.g.stored_lsn = f.applied_lsn = cat.position.lsn;
    f.applied_time = cat.position.commit_time;
    f.loading = cat.position.lsn == 0;
    if (f.loading && (!ps || !ps->loaded)) {
        snprintf(err, errlen, "the store at %s was loaded but never caught up with the WAL; "
                              "rerun to load it again", opt->store_dir);
        return -1;
    }
    imetrics_position(&cat.position);
    f.g.last_store = f.last_feedback = f.last_data = now_usec();
    int rc = start(&f);
    if (rc == 0 && opt->exit_when_caught_up && !(f.target_lsn = source_wal_end(f.catalog)))
        rc = (fail(&f, "reading the server's WAL position: %s", PQerrorMessage(f.catalog)), 1);
    if (rc == 0)
        rc = loop(&f);
    /* A stop keeps what is whole; a failure may have left a transaction
     * half applied, and drops the batch: the slot still holds it all. */
    if (rc != 0)
        store_rollback(st);
    else if (maybe_store(&f, true, false) && !strstr(err, "sending feedback"))
        rc = -1;
    else if (f.rx && !receiver_ended(f.rx))
        send_feedback(&f, false);
    receiver_stop(f.rx);
    while (f.ntxns)
        txn_drop(&f, f.txns[f.ntxns - 1]);
    /* A full filesystem may get room back: the slot resends from the
     * restart point (run.c waits, then follows again). */
    if (rc < 0 && f.g.failure == STORE_ERR_NO_SPACE && !opt->exit_when_caught_up)
        rc = 2;
    hashtab_free(&f.index);
    spool_free(&f.spare_spool);
    free(f.txns);
    free(f.created);
    free(f.switch_xid);
    hashtab_free(&f.created_index);
    free(f.datums);
    free(f.values);
    free(f.old_arena.bytes);
    free(f.new_arena.bytes);
    free(f.old_row);
    free(f.new_row);
    heap_mirror_free(f.mirror);
    pgwal_reader_free(&f.rd);
    PQfinish(f.repl);
    PQfinish(f.catalog);
    return rc;
}
