/* internal.h -- what the store's files share: the environment handle, key
 * encodings and the in-memory segment ("cellmap"). Private to store/. */
#ifndef STRAUM_STORE_INTERNAL_H
#define STRAUM_STORE_INTERNAL_H

#include "base/runs.h"
#include "base/bytes.h"
#include "base/hashtab.h"
#include "store/bytemap.h"
#include "store/store.h"

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

/* ---- Keys (SPEC.md "Key layout") ------------------------------------------
 * Integers in keys are big-endian, signed ones with the sign bit flipped,
 * so LMDB's bytewise order is numeric order. */

enum { STORE_ID_BYTES = 16 }; /* the catalog's store_id: random, at create */

enum { SEG_KEY_BYTES = 11, DELTA_KEY_BYTES = 12, DENSE_KEY_BYTES = 12, VALUE_KEY_BYTES = 12, DICT_REV_KEY_BYTES = 12 };

void put_i64key(uint8_t *p, int64_t v); /* sign-flipped big-endian */
int64_t get_i64key(const uint8_t *p);

void seg_key(uint8_t out[SEG_KEY_BYTES], int view, int width, int64_t span_start);
/* A delta block's key: its segment's key, then its number 1..STORE_MAX_DELTAS. */
void delta_key(uint8_t out[DELTA_KEY_BYTES], const uint8_t seg[SEG_KEY_BYTES], int seq);

/* Long texts cannot be LMDB keys (511 bytes at most): their dictionary key is
 * a prefix and a hash, and both lookups and interning confirm the text
 * through the reverse map. Texts whose keys collide take the next probe: the
 * same key with a u8 probe number 1..DICT_MAX_PROBES after the hash, so a
 * collision is never silent and costs one more lookup (SPEC.md §4.2). */
enum { DICT_INLINE_BYTES = 400, DICT_PREFIX_BYTES = 384, DICT_MAX_PROBES = 255,
       DICT_KEY_MAX_BYTES = 4 + DICT_INLINE_BYTES + 16 };
/* The dict key of (view, fact column, text) at a probe (0 for every inline
 * text; 0..DICT_MAX_PROBES for a long one); returns its length. */
size_t dict_key(uint8_t *out, int view, int col, const char *text, size_t len, int probe);
/* The 64-bit hash of a long text in its dict key: XXH64, seed 0. A variable
 * so that a test can force collisions (tests/unit/test_store_dict.c). */
extern uint64_t (*dict_text_hash)(const void *text, size_t len);
/* (view, a, code) keys: dense chunks (a = slot, code = chunk number),
 * values (a = vc), dict reverse (a = fact column). */
void triple_key(uint8_t out[12], int view, int a, int64_t code);

/* ---- The environment ------------------------------------------------------ */

struct cellmap;
struct pending;

struct store_read {
    struct store *s;
    MDB_txn *txn;
    struct store_read *next_free;
};

struct store {
    char *dir;
    enum store_mode mode;
    MDB_env *env;
    MDB_dbi catalog, dict, dictrev, dense, seg, values;
    size_t map_size, max_map_size;

    struct sql_view_list *views;
    struct store_column_type **types; /* [view][fact column] */

    pthread_mutex_t read_lock;        /* guards free_reads */
    struct store_read *free_reads;

    struct pending *pending;          /* writer only */
    bool bulk;                        /* store_set_bulk */
    size_t cache_bytes;
    size_t inline_fold_bytes;         /* store_set_inline_fold_bytes */
    int64_t fold_budget_us;           /* store_set_fold_budget_us */
    bool keep_heap;                   /* store_set_keep_heap */
    bool heap_owed;                   /* a commit kept the heap: trim it when let go */
    /* The identity of the store this process opened (env.c): data.mdb's
     * device and inode, and the catalog's random id (none in a store made
     * by a build that wrote none). */
    char *data_path;
    dev_t data_dev;
    ino_t data_ino;
    uint8_t id[STORE_ID_BYTES];
    bool has_id;
    _Atomic int64_t identity_seen_us; /* env.c store_replaced: data.mdb's last stat, */
    atomic_bool replaced;             /* and whether one found another file (sticky) */
    uintptr_t map_lo, map_hi;         /* where data.mdb is mapped (pages.c), */
    size_t map_seen_size;             /* as found at this map size */
    uintptr_t release_lo, release_hi; /* pages.c: decoded blocks' span not yet dropped, */
    size_t release_bytes;             /* and the bytes of those blocks */
};

/* n rounded up to a multiple of a, a power of two. */
static inline size_t align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

/* Sets err from an LMDB return code with what was being done. */
int store_lmdb_error(struct store_error *err, int rc, const char *doing);
int store_fail(struct store_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A store that cannot grow (space.c): data.mdb at its size limit
 * (STORE_ERR_LIMIT), or a write failure from LMDB told apart as a full
 * filesystem (STORE_ERR_NO_SPACE) from the rest. Both return -1. */
int store_limit_error(struct store *s, struct store_error *err);
int store_write_error(struct store *s, struct store_error *err, int rc, const char *doing);

/* Catalog keys. */
#define CATALOG_VERSION "format_version"
#define CATALOG_VIEWS "views"
#define CATALOG_CREATED "created_at"
#define CATALOG_POSITION "position"
#define CATALOG_TYPES "types"
#define CATALOG_ID "store_id"

/* Encodes / decodes the column types of every view (SPEC.md). */
size_t types_encode(const struct sql_view_list *views, struct store_column_type *const *types,
                    uint8_t *out, size_t cap);
int types_decode(const struct sql_view_list *views, const uint8_t *p, size_t len,
                 struct store_column_type ***out, struct store_error *err);
void types_free(const struct sql_view_list *views, struct store_column_type **types);

void position_encode(const struct store_position *pos, uint8_t out[32]);
void position_decode(const uint8_t in[32], struct store_position *pos);

/* Writes the position inside the writer's transaction (an LMDB code). */
int store_put_position(struct store *s, MDB_txn *txn, const struct store_position *pos);

/* Begins a transaction (flags as mdb_txn_begin); -1 with err. Never
 * remaps: MDB_MAP_RESIZED (a writer with a larger map) is an error. */
int store_txn_begin(struct store *s, unsigned flags, MDB_txn **txn, struct store_error *err);

/* ---- Cellmap: one segment's cells, decoded --------------------------------
 * A hash table of cells keyed by (bucket index, cell keys). Each cell holds
 * its accumulators and its value counts as runs sorted by code. */

struct vc_runs {
    int64_t *codes;
    int64_t *rows;   /* in a cell, in codes' allocation (at codes + cap), or
                        one[1] while its one run sits in one */
    uint32_t n, cap;
    uint32_t sorted; /* in a cell, runs [sorted, n) are appended, not yet merged (cellmap.c) */
    int64_t one[2];  /* in a cell of cap 1: its run's code and rows, codes
                        and rows pointing here (cellmap.c runs_reserve) */
};

/* A cell's header. Its keys follow it, then its counts, sums (16-aligned)
 * and value-count runs at the offsets of its cellmap's layout: derived
 * rather than pointed at, since four pointers were a quarter of a cell and
 * a row's cells are what an apply waits on (cellmap.c). */
struct cell {
    uint32_t bucket;           /* index within the span */
    uint32_t unused;           /* 0: the keys start 8-aligned */
};

/* Where a view's cells hold their parts, from the cell's start; stride,
 * the cells' spacing in their slab. */
struct cell_layout {
    size_t counts, sums, vcs, total, stride;
};

struct cellmap {
    const struct sql_view *view;
    const struct store_column_type *types;
    int view_index, width;
    int64_t span_start;
    struct cell_layout layout; /* of the view's cells */
    struct hashtab table;      /* (bucket, keys) -> struct cell * (cellmap.c) */
    uint32_t ncells;
    struct cell_slab *slabs;   /* the cells' memory, freed with the cellmap */
    size_t bytes;              /* approximate heap held */
    bool dirty;
    bool overlay;              /* holds only this batch's deltas: the stored
                                  block is not loaded (cellmap_merge) */
    uint64_t last_used;
    struct cellmap *next;      /* in the cache's chain */
};

struct cellmap *cellmap_new(const struct sql_view *view, const struct store_column_type *types,
                            int view_index, int width, int64_t span_start);
void cellmap_free(struct cellmap *m);
/* Columns whose checksum this thread checked in a snapshot (checked.c). */
bool store_column_was_checked(uint64_t snapshot, const uint8_t *bytes, uint32_t length,
                              uint64_t checksum);
void store_column_mark_checked(uint64_t snapshot, const uint8_t *bytes, uint32_t length,
                               uint64_t checksum);

/* Fills an empty cellmap from a stored block. */
int cellmap_load(struct cellmap *m, const void *block, size_t len, struct store_error *err);
/* Adds every cell of an overlay (counts, sums and runs that may be
 * negative) into the base, which then holds both; -1 on overflow or out of
 * memory. */
int cellmap_merge(struct cellmap *base, struct cellmap *overlay, struct store_error *err);
/* Adds one cell's worth of counts, sums and sorted value-count runs (as
 * cellmap_merge adds an overlay's cell) to the cell at bucket index b,
 * creating it; -1 on overflow or out of memory. runs[k].n of them are
 * read; they must be sorted by code, each code once. */
int cellmap_add_cell(struct cellmap *m, uint32_t bucket, const int64_t *keys,
                     const int64_t *counts, const struct store_sum *sums,
                     const struct vc_runs *runs, struct store_error *err);
/* Whether counts or sums (a delta's or an overlay cell's) change anything:
 * a count or an exact sum not zero, or a float sum not +0 or -0. */
bool accumulators_change(const struct sql_view *v, const int64_t *counts,
                         const struct store_sum *sums);
/* Adds counts and sums (one row's or one cell's) to a cell's accumulators;
 * -1 with err when a count or an exact sum overflows. */
int cell_accumulate(const struct sql_view *v, const struct store_column_type *types,
                    int64_t *counts, struct store_sum *sums, const int64_t *add_counts,
                    const struct store_sum *add_sums, struct store_error *err);
/* Encodes the live cells (row count non-zero) to a block, cells sorted by
 * (bucket, keys). *out is malloc'd; *len 0 when no cell is left. Fails when
 * a cell's counts went negative or a cell without rows kept other values. */
int cellmap_encode(struct cellmap *m, void **out, size_t *len, struct store_error *err);
/* cellmap_encode for a cellmap about to be freed (a fold of a stored
 * segment): each cell's runs are let go as they are copied into the
 * block's columns, so the fold holds one copy of them, not two (the 7-day
 * segment's runs are about 70 MB decoded). Only cellmap_free may follow. */
int cellmap_encode_consume(struct cellmap *m, void **out, size_t *len, struct store_error *err);
/* Encodes an overlay as a delta block: every cell with a non-zero count,
 * sum or run, whatever its sign, and the rollups of those cells (sums are
 * sums: a delta's rollups fold like a base's). *len 0 when nothing
 * changed. */
int cellmap_encode_delta(struct cellmap *m, void **out, size_t *len, struct store_error *err);
/* Loads a stored segment whole: the base block, then each delta merged in.
 * blocks[0] is the base; m must be empty. */
int cellmap_load_segment(struct cellmap *m, const MDB_val *blocks, int nblocks,
                         struct store_error *err);
/* Reads the base and delta blocks of a segment key in txn: *n 0 when the
 * segment does not exist. blocks point into txn's snapshot. An LMDB code. */
int segment_blocks(struct store *s, MDB_txn *txn, const uint8_t key[SEG_KEY_BYTES],
                   MDB_val blocks[1 + STORE_MAX_DELTAS], int *n);
/* Allocates a rows' tables (per key, count, sum and value count: the
 * column pointers, vc_n and sum_real) zeroed, in one block at r->keys that
 * store_rows_free frees: decoding a segment costs one allocation for them,
 * not nine, where serve's threads share one malloc arena (base/scratch.h)
 * and each allocation past a thread's cache takes its lock. 0, or -1 out of
 * memory (past the ask's budget). */
int store_rows_tables(const struct sql_view *v, struct store_rows *r);
/* Drops blocks read from the map, decoded now, out of this process's page
 * tables (pages.c): at the latest once RELEASE_BATCH_BYTES of them wait. */
void segment_blocks_release(struct store *s, const MDB_val *blocks, int n);
/* Drops every page of the map out of this process's page tables; only
 * when no write transaction is open. */
void store_release_map(struct store *s);

/* ---- Block columns and rollups (rollup.c) -------------------------------- */

/* The columns of a block being encoded; the arrays are owned here. */
struct block_columns {
    struct format_column *cols;
    void **arrays;             /* arrays[i] is cols[i].values */
    int ncols, cap;
};

/* Appends an uninitialized column of n elements; NULL when out of memory. */
void *block_column_add(struct block_columns *bc, uint16_t role, uint16_t index,
                       enum format_type type, uint32_t n);
void block_columns_free(struct block_columns *bc);
/* Adds (role, index 1): the first of the n rows of each bucket index
 * 0..span, from rows sorted by bucket index. */
int block_add_bucket_starts(struct block_columns *bc, uint16_t role, int span,
                            const int64_t *bucket, uint32_t n);
/* Appends the rollup families of the ncells cells already in bc (roles 1-7,
 * sorted by bucket then keys). -1 when out of memory. */
int rollup_build(const struct sql_view *v, const struct store_column_type *types, int width,
                 struct block_columns *bc, uint32_t ncells);

/* ---- Run lists (runs.c) ------------------------------------------------- */

/* code_runs_merge (base/runs.h): how many runs are left, or -1 with err when
 * out of memory or a sum overflows. */
int64_t store_runs_merge(struct code_run *runs, size_t n, struct store_error *err);

/* ---- Packed order (order.c) ----------------------------------------------
 * Up to ORDER_MAX_FIELDS int64 fields packed into one code whose order is
 * theirs, the first most significant: a bucket and the keys (16 keys and
 * a bucket already take a bit each at the least; wider orders compare).
 * Use: order_packing_init, order_packing_see every field of every item,
 * order_packing_fits, then each item's code by order_packing_push of its
 * fields in order from 0, sorted with code_runs_sort (base/runs.h). */
enum { ORDER_MAX_FIELDS = 17 };
struct order_packing {
    int n;
    int64_t lo[ORDER_MAX_FIELDS], hi[ORDER_MAX_FIELDS];
    int bits[ORDER_MAX_FIELDS]; /* set by order_packing_fits */
};

/* No field seen yet. Cannot fail. */
void order_packing_init(struct order_packing *p, int nfields);

/* Notes field f's value v of one item (f < ORDER_MAX_FIELDS). */
static inline void order_packing_see(struct order_packing *p, int f, int64_t v)
{
    p->lo[f] = v < p->lo[f] ? v : p->lo[f];
    p->hi[f] = v > p->hi[f] ? v : p->hi[f];
}

/* Whether the fields' ranges fit 63 bits together (and there are at most
 * ORDER_MAX_FIELDS of them); sets each field's bits when they do. */
bool order_packing_fits(struct order_packing *p);

/* code with field f's value v appended below it: fold an item's fields in
 * order from a code of 0. Only after order_packing_fits said true, for
 * values it saw. */
static inline int64_t order_packing_push(const struct order_packing *p, int64_t code, int f,
                                         int64_t v)
{
    return (int64_t)(((uint64_t)code << p->bits[f]) | ((uint64_t)v - (uint64_t)p->lo[f]));
}

/* ---- Staging (staging.c) ------------------------------------------------
 * A batch's rows of one view, summed per finest-width cell before they
 * reach the cellmaps (apply.c drains them; in a load, the load job). */

struct staging;

/* Where a drain sends what it summed: each cell of the finest width (its
 * bucket start, keys, counts, sums and one sorted run list per value
 * count, none of zero rows), then each (value count, code) whose rows
 * changed. Either returns -1 with err to stop the drain. */
struct staging_sink {
    void *ctx;
    int (*cell)(void *ctx, int64_t time, const int64_t *keys, const int64_t *counts,
                const struct store_sum *sums, const struct vc_runs *runs,
                struct store_error *err);
    int (*value)(void *ctx, int vc, int64_t code, int64_t rows, struct store_error *err);
};

struct staging *staging_new(const struct sql_view *view, const struct store_column_type *types);
void staging_free(struct staging *b);
/* Stages a row whose finest bucket starts at time. */
int staging_add(struct staging *b, int64_t time, const struct store_delta *d, struct store_error *err);
/* Sends everything staged to the sink and empties the staging. */
int staging_drain(struct staging *b, const struct staging_sink *sink, struct store_error *err);
void staging_clear(struct staging *b);
/* staging_clear, and the memory it keeps for the next rows given back
 * (after a batch past the cache budget, with malloc_trim). */
void staging_release(struct staging *b);
bool staging_empty(const struct staging *b);
size_t staging_bytes(const struct staging *b);

/* ---- Encode jobs (encoder.c) --------------------------------------------
 * A load's segments encoded on another core while the caller goes on. */

/* A block ready to write: a base (it replaces the segment and its deltas;
 * NULL deletes them all) or a delta (added after the stored ones). */
struct encoded {
    uint8_t key[DELTA_KEY_BYTES];
    size_t key_len;           /* SEG_KEY_BYTES or DELTA_KEY_BYTES */
    void *block;
    size_t len;
};

struct encode_job;

/* A job encoding n whole segments (no overlays) as bases. It owns maps
 * (malloc'd) and the cellmaps in it from here on, also on failure (NULL
 * with err). */
struct encode_job *encode_job_new(struct cellmap **maps, size_t n, struct store_error *err);
/* Starts encoding on a thread of its own. */
void encode_job_start(struct encode_job *j);
/* Whether its thread is still encoding a segment or has one left to take. */
bool encode_job_busy(const struct encode_job *j);
/* Encodes one segment on the caller's thread, if one is left to take:
 * false when none was (or it failed: encode_job_finish reports it). */
bool encode_job_help(struct encode_job *j);
/* Encodes on the caller's thread too until no segment is left to take,
 * then waits for the job's thread: 0, or -1 with the first failure. */
int encode_job_finish(struct encode_job *j, struct store_error *err);
/* The encoded blocks, after encode_job_finish: *n of them, owned by j. */
const struct encoded *encode_job_blocks(const struct encode_job *j, size_t *n);
/* Waits for the thread, then frees everything the job holds. */
void encode_job_free(struct encode_job *j);

/* ---- The writer: a batch, pending until its commit --------------------------
 * Five files share the batch (struct pending), each one job:
 *   writer.c  the batch's life (new, reset, free), its settings, what it
 *             holds, dictionaries and projections;
 *   apply.c   rows into cells: overlays, the cache budget and its spills;
 *   commit.c  the commit: each segment's plan (plan_write), bases and
 *             deltas written, the position, map growth and a lost batch;
 *   fold.c    deltas folded into bases: after a commit and when idle;
 *   load.c    a load's rows drained into cellmaps, and its hand-offs to
 *             the encode job (encoder.c) and the load job beside it.
 * Invariants, held between any two writer calls on the caller's thread:
 *   1. Outside a load job (load.c), no segment is both in p->segments and
 *      in p->job: the drains on the caller's thread come after load_settle.
 *   2. While p->load runs it alone touches p->segments, their cellmaps,
 *      p->bytes, p->clock and p->values; every writer call reaching those
 *      calls load_settle (or load_join) first.
 *   3. p->txn, once open, holds what spilled of this batch: a batch that
 *      fails then is lost whole (batch_lost), never retried in place.
 *   4. p->bytes is the decoded bytes of the segments held (approximate
 *      between recounts), the figure the cache budget is held to. */

struct pending {
    /* Read for every row store_apply stages (apply.c), so apart from the
     * fields a load job writes beside the caller (the segments, the value
     * deltas, the clock, the held bytes): sharing a cache line with those
     * cost the row a miss (perf). */
    struct staging **staging; /* per view: the rows staged (staging.c), NULL until one */
    struct staging **spare;   /* the other staging set, which a load job drains */
    char apart[64];
    struct bytemap segments;  /* seg key -> struct cellmap * */
    /* Per view and width, SEGMENT_MEMO_SPANS entries (from memo_first[view]
     * + width * SEGMENT_MEMO_SPANS), the one for a span by its number's low
     * bits: the entry pending_segment found for it, good while
     * segments.removals is still theirs. A row finds its segment there
     * without hashing and comparing its key: that lookup was a tenth of an
     * apply of rows spread over the buckets (perf: bytemap_find under
     * store_apply, 2 views of 3 widths). */
    struct segment_memo {
        struct bytemap_entry *e;
        int64_t span;
        uint64_t removals;
    } *memo;
    int *memo_first;
    struct hashtab values;    /* pending_value_key -> int64_t rows: the batch's value-count
                                 deltas (a view truncated in the batch has its zeroed:
                                 the table removes nothing) */
    struct bytemap dict;      /* dict key -> num: id; ptr: the text (malloc'd) */
    struct bytemap dict_next; /* (view, column) -> num: next id */
    struct bytemap dense;     /* dense chunk key -> its FORMAT_DENSE_CHUNK entries
                                 (uint32_t, malloc'd) as this batch leaves them */
    struct bytemap dense_emptied; /* (view, slot) -> nothing: truncated in this
                                     batch, the stored chunks deleted at commit */
    /* Per view: emptied in this batch. Atomic (relaxed): a load job's drain
     * reads it (pending_segment) while the writer's thread may open the
     * batch's transaction, which clears it (batch_truncate); either reading
     * is right, since the transaction has by then deleted what the view
     * kept, so an overlay finds nothing stored to merge with. */
    atomic_bool *truncated;
    struct load_job *load;    /* a load's partition being drained and encoded
                                 (store_hand_off_cold), or NULL */
    size_t bytes_seen;        /* bytes when the load job started (store_cached_bytes) */
    uint64_t clock;
    uint64_t committed_clock; /* the clock at the last commit: a segment used
                                 since is hot (store_commit_cold) */
    size_t bytes;             /* decoded bytes of the segments held */
    MDB_txn *txn;             /* the batch's write transaction, once it spilled */
    uint8_t (*folds)[SEG_KEY_BYTES]; /* segments to fold after a commit (plan_write), oldest first */
    size_t nfolds, folds_cap;
    struct encode_job *job;   /* a load's segments handed off (encoder.c), written
                                 by the next load_settle or commit (flush_job):
                                 outside a load job, no segment is both pending
                                 and in it */
    bool job_left;            /* the last hand-off left job at work unwritten */
};

/* apply.c. Drains a staging set (the writer's, or a load job's on its
 * thread) into the cellmaps; -1 with err (a count or sum that overflowed,
 * out of memory), the batch then broken: the caller resets it, as after
 * any failed store_apply. */
int pending_drain_set(struct store *s, struct staging **set, struct store_error *err);
/* Settles the load (load_settle), then drains the writer's staging:
 * before anything reads or writes the batch's segments whole (a commit,
 * a compaction). -1 with err as pending_drain_set. */
int pending_drain(struct store *s, struct store_error *err);

/* Spans a width's segment memo holds (a power of two). A finest width's
 * span is 64 buckets: at the hour, 2.7 days, so 16 would cover six weeks,
 * and rows spread over the benchmark's half year would hash and compare a
 * segment key at most of their widths (bytemap_find was 8% of an apply of
 * such rows at 16). 256 cover 682 days of hours at 24 bytes an entry:
 * 6 KiB a width. */
#define SEGMENT_MEMO_SPANS 256
int pending_new(struct store *s, struct store_error *err);
/* After a batch past the cache budget (or once store_set_keep_heap lets
 * it): the staging's memory and malloc's free memory given back, so that
 * a follower does not idle at a backlog's size. Cannot fail. */
void pending_give_heap_back(struct store *s);
void pending_free(struct store *s);

/* writer.c. */
/* -1 with err when the store is open read-only, else 0. */
int store_need_writer(struct store *s, struct store_error *err);
/* Forgets the batch: everything not yet committed, a load job joined and
 * an encode job freed, the spilled transaction aborted. Cannot fail. */
void pending_reset(struct pending *p, const struct sql_view_list *views);
/* Every view's truncated flag false (relaxed stores: see pending). */
void pending_clear_truncated(struct pending *p, int nviews);
/* Takes a segment's decoded bytes off what the batch holds. */
void pending_unhold(struct pending *p, const struct cellmap *m);
/* Frees the segment of e and removes e from p->segments. */
void pending_forget(struct pending *p, struct bytemap_entry *e);
/* Counts p->bytes afresh from the segments held (encoding drops dead cells). */
void pending_recount(struct pending *p);

/* dense.c: dense dim columns (SPEC.md §4.2). A view's dense columns are
 * numbered by slot, join by join (store_dense_columns each); a slot's
 * dictionary is the `dict` column DENSE_DICT_BASE + slot, fact columns
 * keeping those below. */
enum { DENSE_DICT_BASE = 0x8000 };
int dense_slot(const struct sql_view *v, int join, int col);
/* Refuses views with more fact or dim columns than the dictionaries number. */
int dense_check_views(const struct sql_view_list *views, struct store_error *err);
/* A projection change, applied to the batch's decoded chunks at once (the
 * texts interned into the columns' dictionaries). 0, or -1 with err. */
int dense_put(struct store *s, int view, int join, int64_t key,
              const struct store_dim_value *values, struct store_error *err);
int dense_delete(struct store *s, int view, int join, int64_t key, struct store_error *err);
int dense_truncate(struct store *s, int view, int join, struct store_error *err);
/* Writes the batch's chunks into txn (truncated joins emptied first; a
 * chunk left without entries deleted): 0 or an LMDB (errno) code. */
int dense_write(struct store *s, MDB_txn *txn);
/* Forgets the batch's chunks. Cannot fail. */
void dense_forget(struct pending *p);

/* commit.c: deletes every key of a database that starts with prefix (an
 * LMDB code). */
int store_delete_prefix(MDB_txn *txn, MDB_dbi dbi, const uint8_t *prefix, size_t plen);

/* apply.c. */
/* The start of t's bucket of the given width; t within STORE_MIN_TIME ..
 * STORE_MAX_TIME, where it cannot overflow. */
int64_t store_bucket_of(const struct sql_view *v, int width, int64_t t);
/* The transaction that sees the store as this batch last left it: the
 * batch's own once it spilled, else a fresh read one (*own set: the
 * caller aborts it). -1 with err when none opens. */
int batch_view(struct store *s, MDB_txn **txn, bool *own, struct store_error *err);
/* Loads stored blocks (base first) into the empty m, then gives their
 * pages back; -1 with err when a block is damaged or memory runs out. */
int segment_load_blocks(struct store *s, struct cellmap *m, const MDB_val *blocks, int n,
                        struct store_error *err);
/* The batch's segment (view, width, span), a new overlay when it is not
 * held (or an empty whole segment when the view was truncated in this
 * batch); its use clock advanced. NULL with err when out of memory. */
struct cellmap *pending_segment(struct store *s, int view, int width, int64_t span,
                                struct store_error *err);
/* The batch's key of (view, value count, code): two words, not the
 * values table's 12 bytes (triple_key), so that the writer's one
 * open-addressing table holds it: one slot a lookup, where a chained map
 * hashes, walks a chain and compares bytes (bytemap_find was 4% of the
 * physical follower's deletes). */
static inline void pending_value_key(uint64_t key[2], int view, int vc, int64_t code)
{
    key[0] = (uint64_t)(uint32_t)view << 32 | (uint32_t)vc;
    key[1] = (uint64_t)code;
}
/* Adds rows to the batch's change of (view, value count, code); -1 with
 * err when out of memory. */
int pending_add_value_rows(struct pending *p, int view, int vc, int64_t code, int64_t rows,
                           struct store_error *err);
/* Turns e's overlay into the whole segment (the stored blocks as this
 * batch last left them plus the overlay); nothing when e holds a whole
 * segment. -1 with err on damage, overflow or out of memory, e unchanged. */
int overlay_materialize(struct store *s, struct bytemap_entry *e, struct store_error *err);
/* Drops clean segments, oldest first, until the batch holds at most the
 * cache budget or no clean one is left. Cannot fail. */
void cache_evict(struct store *s);
/* Drops clean segments, then writes the least recently used dirty ones
 * into the batch's transaction, until the batch fits the cache budget.
 * -1 with err, the batch then lost (batch_lost). */
int cache_spill(struct store *s, struct store_error *err);

/* commit.c. */
/* A stored segment's blocks (*n: base and deltas) and their cells, from
 * the blocks' headers: 1 when all is there, 0 when it is not stored or a
 * block does not open, -(LMDB code). blocks_out gets the blocks and
 * cells_out each block's cells, unless NULL. */
int segment_census(struct store *s, MDB_txn *txn, const uint8_t *key, int *n,
                   uint64_t *base, uint64_t *deltas, MDB_val *blocks_out,
                   uint64_t *cells_out);
/* Writes one encoded block in txn; a base replaces the segment's deltas,
 * delta k the deltas after it, which it merged. 0 or an LMDB code. */
int encoded_put(struct store *s, MDB_txn *txn, const struct encoded *enc);
/* Whether a commit that keeps hot segments (keep_hot) leaves m pending:
 * it was used since the last commit. */
bool pending_kept_hot(const struct pending *p, const struct cellmap *m, bool keep_hot);
/* Resets a batch that failed after writing into its transaction (rc: an
 * LMDB code, or -1 with err set); a full map is the size limit, reported
 * as STORE_ERR_LIMIT. Returns -1. */
int batch_lost(struct store *s, int rc, struct store_error *err);
/* Empties in txn the views truncated in this batch; -1 with err, the batch
 * then lost. */
int batch_truncate(struct store *s, MDB_txn *txn, struct store_error *err);
/* Opens the batch's write transaction (p->txn); -1 with err. */
int batch_txn_open(struct store *s, struct store_error *err);
struct write_plan_of;
/* Writes e's dirty segment into the batch's transaction, by its plan when
 * known (NULL: worked out here), and forgets it. -1 with err, the batch
 * then lost (every segment forgotten). */
int segment_spill(struct store *s, struct bytemap_entry *e, const struct write_plan_of *known,
                  struct store_error *err);
/* An overlay of a stored segment (e) written into the batch's transaction
 * as a delta block by its plan (plan_write: a delta, the deltas merged
 * into one, a fold noted for after the commit) and forgotten: *written.
 * A segment not stored is left as it is, *written false, for a base. -1
 * with err, the batch then lost. */
int overlay_spill_delta(struct store *s, struct bytemap_entry *e, bool *written,
                        struct store_error *err);

/* env.c. Microseconds of the monotonic clock (time spent, never the date). */
int64_t store_monotonic_us(void);

/* fold.c. */
/* Folds the segments plan_write noted (p->folds), oldest first, each in
 * its own write transaction: a quarter of them, then more for
 * s->fold_budget_us (the rest wait in p->folds for the next commits); one
 * that fails is logged and left to the idle compaction. Cannot fail: the
 * commit before it stands. */
void fold_after_commit(struct store *s);

/* load.c. */
/* Hands the dirty segments but those kept hot (keep_hot) to an encode job;
 * without keep_hot the job is written into the batch's transaction now.
 * -1 with err. */
int load_hand_off(struct store *s, bool keep_hot, struct store_error *err);
/* Writes the encode job into the batch's transaction, then joins the load
 * job (invariant 1 holds after). -1 with err: a failed write has lost the
 * batch; the load job is joined either way. */
int load_settle(struct store *s, struct store_error *err);
/* Waits for the load job, if one runs, and takes its staging set back as
 * the spare; -1 with the drain's error when it failed. */
int load_join(struct pending *p, int nviews, struct store_error *err);

#endif
