/* store.h -- the front door of the store: Straum's LMDB environment.
 *
 * The store is the only contract between ingest (one writer process) and
 * serve (any number of reader processes). It holds, in one LMDB environment
 * directory:
 *
 *   catalog   format version, the views' source text, column types, the
 *             applied source position and lag figures, creation time
 *   dict      text dictionaries: (view, fact column, text) -> id, and back
 *   dense     dense dim columns: (view, dim column slot, chunk) -> the dim
 *             value id of each join key of the chunk, read by position:
 *             a join's dim rows, held nowhere else
 *   seg       segment blocks (format/): (view, width, span start) -> block,
 *             ordered so a range over one width is one cursor walk in time;
 *             each base block followed by its delta blocks, if any
 *   values    per-view sorted value dictionaries of value-counted columns
 *
 * SPEC.md "The store" documents every key and value byte for byte.
 *
 * Values are *codes*: every key, value-count entry and dictionary lookup is
 * an int64 whose order is the value's order (integers and dates as
 * themselves, numerics scaled to their column's scale, floats through an
 * order-preserving bit map, booleans 0/1); text is a dictionary id, whose
 * order is arrival order. NULL is STORE_NULL.
 *
 * Writer: apply deltas (a row's contribution added or taken away) to cells
 * of every width at once, projection changes and the new source position,
 * all committed in one LMDB write transaction, so a crash can neither lose
 * nor double-apply a source transaction. Hot segments stay decoded in
 * memory between commits.
 *
 * Reader: cheap read transactions (a snapshot; reset and renewed, never
 * blocking the writer) that hand out segment blocks straight from the map.
 */
#ifndef STRAUM_STORE_H
#define STRAUM_STORE_H

#include "format/format.h"
#include "sql/sql.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_FORMAT_VERSION 12 /* 12: segment blocks of format 6 (GFOR: rollups' codes and running rows by group); 11: no proj database (a dim row is its dense entries); 10: span cells (STORE_ROLLUP_SPAN_CELLS) at the widest width; 9: dense dim columns (the dense database, dim value dictionaries); 8: rollup value counts hold their running rows (STORE_VC_CUMULATIVE) and codes read by position; 7: segment blocks of format 5 (Rice widths per block); 6: segment blocks of format 4 (Rice codes, PFOR sums); 5: segment blocks of format 3 (codecs PFOR, DPFOR); 4: delta blocks; 3: segment blocks of format 2 (a directory checksum) */
#define STORE_NULL INT64_MIN

/* The times a row's bucket column may hold, in usec since 1970:
 * PostgreSQL's first day (4713-11-24 BC) up to 100000-01-01. Within them,
 * and with widths of at most SQL_MAX_WIDTH_USEC, bucket and span arithmetic
 * from any origin fits in int64; near INT64_MAX (year 294247, which ingest
 * could decode) it overflowed (fuzz_view). store_apply refuses the rest. */
#define STORE_MIN_TIME (-210866803200000000LL)
#define STORE_MAX_TIME 3093527980800000000LL

struct store;
struct store_read;

/* Why a store call failed, for callers that act on it: a full store is
 * not a broken one. Every error has a message; most are STORE_ERR_OTHER. */
enum store_error_kind {
    STORE_ERR_OTHER = 0,
    STORE_ERR_LIMIT,      /* data.mdb reached its size limit (store_set_max_size,
                             STRAUM_STORE_MAX_MAP_MB): raise it, then retry */
    STORE_ERR_NO_SPACE,   /* the filesystem refused to grow data.mdb (ENOSPC,
                             EDQUOT, EFBIG): retry once space is freed */
    STORE_ERR_NO_MEMORY,  /* an allocation failed: nothing is wrong with the store */
    STORE_ERR_REPLACED,   /* the store was replaced (rebuilt, restored) since
                             this process opened it: open it again */
};

struct store_error {
    char message[320];
    enum store_error_kind kind;
};

/* ---- Column types ------------------------------------------------------ */

/* How a fact or dim column's values become codes and come back. */
enum store_type {
    STORE_TYPE_INT = 1,       /* int2, int4, int8: the value */
    STORE_TYPE_NUMERIC = 2,   /* numeric(p,s): value * 10^scale, exact */
    STORE_TYPE_FLOAT = 3,     /* float4, float8: order-preserving bits */
    STORE_TYPE_TEXT = 4,      /* text, varchar: dictionary id */
    STORE_TYPE_BOOL = 5,      /* 0 or 1 */
    STORE_TYPE_DATE = 6,      /* days since 1970-01-01 */
    STORE_TYPE_TIMESTAMP = 7, /* usec since the Unix epoch */
};

struct store_column_type {
    enum store_type type;
    int16_t scale;            /* NUMERIC only */
    uint32_t pg_oid;          /* the source type, for messages; 0 if unknown */
};

/* The types of one view's fact columns, in view->fact_columns order. */
struct store_view_types {
    const struct store_column_type *fact; /* nfact_columns entries */
};

/* ---- Opening ----------------------------------------------------------- */

enum store_mode {
    STORE_READ_ONLY,  /* serve and tools: many processes at once */
    STORE_READ_WRITE, /* ingest: one process (LMDB serializes writers) */
};

/* Creates a new store in dir (created if missing, must hold no store) for
 * these views, with the types of their fact columns. */
int store_create(const char *dir, const char *views_text,
                 const struct store_view_types *types, struct store **out,
                 struct store_error *err);

/* Opens an existing store. A store of another format version, or a
 * directory without a store, is refused with a message saying so. */
int store_open(const char *dir, enum store_mode mode, struct store **out,
               struct store_error *err);
void store_close(struct store *s);

/* The largest a store's data.mdb can be: 1 TiB. Every process maps the
 * file once over this much address space (a writer over its cap) and never
 * maps it again, so a reader never meets a map that grew under it
 * (SPEC.md §4.5). Address space, not memory or disk: 1 TiB of the 128 TiB
 * a 64-bit Linux process has. */
#define STORE_MAP_BYTES ((size_t)1 << 40)
_Static_assert(sizeof(size_t) >= 8, "the store maps 1 TiB: a 64-bit build only");

/* Caps data.mdb at bytes (rounded down to whole pages): a commit that would
 * grow it past the cap fails with STORE_ERR_LIMIT and writes nothing. A
 * writer's call, after open or create, before any other thread uses the
 * store; refused when the store already uses more than bytes, or when bytes
 * is over STORE_MAP_BYTES. */
int store_set_max_size(struct store *s, uint64_t bytes, struct store_error *err);

/* The compiled views of the store (parsed from the catalog at open). */
const struct sql_view_list *store_views(const struct store *s);
const struct store_column_type *store_fact_types(const struct store *s, int view);
const char *store_dir(const struct store *s);

/* ---- Cells -------------------------------------------------------------- */

/* Roles of the columns in a segment block (format_column.role). */
enum store_role {
    STORE_ROLE_BUCKET = 1,    /* [0] bucket index within the span; [1] the
                                 first row of each bucket index 0..64 (65
                                 entries, [64] = rows): a reader decodes just
                                 the rows of the buckets it wants */
    STORE_ROLE_KEY = 2,       /* index: cell key number */
    STORE_ROLE_COUNT = 3,     /* index: view->counts number */
    STORE_ROLE_SUM = 4,       /* index: view->sums number; I128 or F64 */
    STORE_ROLE_VC_OFFSETS = 5,/* index: value-count number; ncells+1 run offsets */
    STORE_ROLE_VC_VALUES = 6, /* value codes of the runs, ascending per cell */
    STORE_ROLE_VC_COUNTS = 7, /* rows of each run */
    /* Per-bucket totals: every cell of a bucket rolled into one row (the
     * star-tree's apex), so that asks without keys read one row per bucket.
     * Each total column's role is its cell column's role + STORE_ROLE_TOTAL. */
    STORE_ROLE_TOTAL = 7,
    STORE_ROLE_TOTAL_BUCKET = STORE_ROLE_BUCKET + STORE_ROLE_TOTAL,
};

/* Rollup families (SPEC.md "Rollups"): the cells summed over every key but
 * `key` (-1: every key), per bucket or over the whole span (one row per key
 * value). A family's column roles are the cell roles (1-7) plus its base;
 * the bucket totals' base is STORE_ROLE_TOTAL. Keys past the first
 * STORE_ROLLUP_MAX_KEYS have no marginals. Span rows have bucket index 0. */
#define STORE_ROLLUP_MAX_KEYS 16
static inline uint16_t store_rollup_base(bool span, int key)
{
    return (uint16_t)(STORE_ROLE_TOTAL * ((span ? 2 + STORE_ROLLUP_MAX_KEYS : 1) + 1 + key));
}
/* The span cells: the cells of a view of two or more keys summed over the
 * span, one row per distinct key (every key kept), at the widest width:
 * asks that read two keys or more over whole spans fold these rather than
 * every bucket's cells (SPEC.md §4.3). Its key k's column is role
 * STORE_ROLLUP_SPAN_CELLS + STORE_ROLE_KEY, index k, as the cells'. */
#define STORE_ROLLUP_SPAN_CELLS ((uint16_t)(STORE_ROLE_TOTAL * (2 * STORE_ROLLUP_MAX_KEYS + 3)))

/* A rollup family's value count k also holds its runs' rows as running
 * sums, each row's from its first run: column (base + STORE_ROLE_VC_COUNTS,
 * STORE_VC_CUMULATIVE + k), with the runs' codes, in RAW, BITPACK or GFOR, so that
 * a percentile finds the rows at or below a value in a row by a binary
 * search, reading neither list whole (SPEC.md §4.3). */
#define STORE_VC_CUMULATIVE 256

/* A sum accumulator's value: exact (numeric and integer columns, scaled by
 * the column's scale) or a double (float columns). */
struct store_sum {
    __int128 exact;
    double real;
};

/* One value-count change: `delta` rows of value `code` in value count `vc`. */
struct store_vc_delta {
    int vc;
    int64_t code;
    int64_t delta;
};

/* A row's contribution to the cells of one view, at every width: added when
 * the counts are positive, taken away when negative. */
struct store_delta {
    int view;
    int64_t time;              /* the row's bucket column, usec; from
                                  STORE_MIN_TIME to before STORE_MAX_TIME */
    const int64_t *keys;       /* view->ncell_keys codes */
    const int64_t *counts;     /* view->ncounts deltas */
    const struct store_sum *sums; /* view->nsums deltas */
    const struct store_vc_delta *vcs;
    int nvcs;
};

/* ---- Writer ------------------------------------------------------------- */

/* Cell and projection changes collect in memory until store_commit writes
 * them, with the position, in one LMDB transaction. A delta that changes
 * nothing (every count and sum zero, no value count) touches no cell. Rows
 * are staged and drained into their cells later (store/staging.c): a
 * failure of a row staged earlier (a count or sum that overflowed) may be
 * reported by a later store_apply or by store_commit: after any failure
 * the batch is to be dropped (store_rollback). */
int store_apply(struct store *s, const struct store_delta *d, struct store_error *err);

/* Empties every cell of a view (TRUNCATE of its fact table). */
int store_truncate_view(struct store *s, int view, struct store_error *err);

/* Dictionary id of a text value of a view's fact column, created if new. */
int store_dict_intern(struct store *s, int view, int fact_column, const char *text,
                      size_t len, int64_t *id, struct store_error *err);

/* A dim row: one value per join->dim_columns entry after the key (so
 * ndim_columns - 1), each NULL or a text rendering. Dim columns are shown,
 * filtered and grouped by; their text is what asks compare with. */
struct store_dim_value {
    bool is_null;
    const char *text;
    size_t len;
};

int store_projection_put(struct store *s, int view, int join, int64_t key,
                         const struct store_dim_value *values, struct store_error *err);
int store_projection_delete(struct store *s, int view, int join, int64_t key,
                            struct store_error *err);
int store_projection_truncate(struct store *s, int view, int join, struct store_error *err);

/* Where the source stands, written with every commit. */
struct store_position {
    uint64_t lsn;            /* LSN of the last applied source commit */
    int64_t commit_time;     /* its commit time, usec; 0 unknown */
    int64_t contact_time;    /* last contact with the source, usec */
    uint64_t bytes_behind;   /* server WAL end minus lsn at last contact */
};

/* Writes every pending change and the position in one LMDB transaction.
 * Segments go into the transaction as they are encoded; the map is the
 * size limit (SPEC.md §4.5). On failure nothing is written and the
 * pending changes are dropped (the caller replays from the last position);
 * err->kind tells a full store (STORE_ERR_LIMIT, STORE_ERR_NO_SPACE) from
 * other failures. */
int store_commit(struct store *s, const struct store_position *pos, struct store_error *err);

/* A commit between the partitions of a load in time order (bulk mode): it
 * writes the segments not used since the last commit, which the load is
 * done with, and keeps the others decoded and pending for the next commit,
 * so that the widest width's segment, which every partition touches, is
 * encoded once rather than at every commit. Those it keeps are written
 * after all when they hold more than twice the cache budget. Outside bulk mode,
 * store_commit. */
int store_commit_cold(struct store *s, const struct store_position *pos, struct store_error *err);

/* Between the partitions of a load in time order (bulk mode): the rows
 * staged since the last hand-off are drained, and the segments the drain
 * before did not touch, which the load is done with, encoded, on other
 * threads while the caller stages the next partition; the next hand-off or
 * commit writes them into the batch's transaction (a hand-off that finds
 * the encode job still at work leaves it, and the newly cold segments, to
 * the next one). No LMDB commit: cheap enough
 * for every partition. The store is still one writer's: calls on it stay
 * on the caller's thread. Outside bulk mode, nothing. On failure (this
 * one's or the last job's) the pending batch is dropped. */
int store_hand_off_cold(struct store *s, struct store_error *err);

/* Drops pending changes without writing them. */
void store_rollback(struct store *s);

/* Bulk mode (an initial load): commits write new segments whole, encoded
 * on another core while the caller goes on (store_hand_off_cold,
 * store_commit_cold) or on two (store_commit); a segment written already
 * takes what the load adds to it later as delta blocks, by the rule below,
 * rather than being decoded and encoded whole again. Leaving it writes segments
 * still being encoded into the pending batch: -1 with err when that fails,
 * the batch dropped. In it and out of it (following changes, the
 * default), a commit writes the changes of a stored segment as a delta
 * block (past STORE_MAX_DELTAS, the newest deltas are merged into one), and folds
 * them into a new base, right after the commit (or a later one: see
 * store_set_fold_budget_us) in a transaction of its own, only when the
 * deltas hold more cells than the base, or, for a base block of more than
 * store_set_inline_fold_bytes, twice its cells (store_compact folds it
 * sooner, when the writer idles). */
int store_set_bulk(struct store *s, bool bulk, struct store_error *err);

/* The largest base block a commit folds as soon as its deltas outgrow it,
 * after the commit (default 2 MiB, or STRAUM_STORE_INLINE_FOLD_BYTES when
 * the store opens); see store_set_bulk. */
void store_set_inline_fold_bytes(struct store *s, size_t bytes);

/* How long a commit goes on folding, after it has committed, the segments
 * its deltas brought to a fold (default STORE_FOLD_AFTER_COMMIT_US): a
 * quarter of those waiting (rounded up) always, then more while the time
 * lasts; the rest wait, oldest first, for the next commits or
 * store_compact, and read as base and deltas meanwhile. A stream of small
 * transactions spread over the buckets brings every segment to its fold
 * at about the same commit: folded all at once, they held a busy follower
 * 1 to 5 s a commit (the folds' CPU, not their fsyncs: `taxi stream`,
 * ingest's debug log and strace), and its lag with it. With group commits
 * at most 0.5 s apart (ingest's pace), 100 ms gives the folds a sixth or
 * more of a busy writer's time and all of an idle one's; the quarter
 * keeps the line from growing when they need more. */
#define STORE_FOLD_AFTER_COMMIT_US 100000
void store_set_fold_budget_us(struct store *s, int64_t us);

/* Folds the deltas of segments into their bases, in key order, each
 * segment in its own write transaction, until none is left or max_us has
 * passed; answers do not change. Only heavy deltas unless `all`
 * (store_compact_until says which). *left:
 * segments still to fold. Only between commits (no pending changes). */
int store_compact(struct store *s, int64_t max_us, bool all, int *left,
                  struct store_error *err);
/* store_compact that also asks stop(stop_ctx), when stop is not NULL,
 * before each segment, and leaves once it says true: a follower's idle
 * compaction stops as soon as a transaction waits, which then waits for
 * one segment's fold at most. Only segments whose deltas hold an eighth of
 * the base's cells, unless `all` (fold.c heavy_deltas). */
int store_compact_until(struct store *s, int64_t max_us, bool all, bool (*stop)(void *ctx),
                        void *stop_ctx, int *left, struct store_error *err);

/* Bounds the decoded segments kept between commits, and what a batch holds
 * decoded before it spills (twice this: store_apply). */
#define STORE_CACHE_BYTES ((size_t)64 << 20) /* the default */
void store_set_cache_bytes(struct store *s, size_t bytes);
/* The cache budget now, in bytes. Cannot fail. */
size_t store_cache_bytes(const struct store *s);
/* Whether a commit of a batch past the cache budget gives the heap it
 * freed back to the system (keep false, the default: a writer then idles
 * at its cached size) or keeps it for the next batch (true: a follower
 * behind a backlog, whose next batch of the same size would fault every
 * page of it in afresh, the kernel zeroing each: a quarter of a second
 * million-row batch's time, measured). Setting false gives back what the
 * commits kept. Cannot fail. */
void store_set_keep_heap(struct store *s, bool keep);
/* Bytes the writer holds decoded now, pending or cached: a loader commits
 * when this passes its budget, so that commits can evict. */
size_t store_cached_bytes(struct store *s);

/* ---- Reader ------------------------------------------------------------- */

/* A read snapshot. Cheap: the LMDB read transaction is reset on end and
 * renewed on the next begin, one per thread. */
/* A read snapshot. Fails with STORE_ERR_REPLACED when the store in the
 * directory is no longer the one this handle opened (data.mdb unlinked or
 * replaced, as --rebuild does, or another store's catalog in its place):
 * a snapshot never reads a deleted store (SPEC.md §4.5). */
int store_read_begin(struct store *s, struct store_read **out, struct store_error *err);
void store_read_end(struct store_read *r);
/* The snapshot's id: that of the last commit it sees. Two snapshots with
 * the same id see the same bytes at the same addresses (nothing committed
 * between them, so no page was rewritten or the map moved). */
uint64_t store_read_snapshot_id(const struct store_read *r);

struct store_catalog {
    uint32_t format_version;
    int64_t created_at;       /* usec */
    struct store_position position;
    const char *views_text;   /* points into the snapshot; not NUL-terminated */
    size_t views_len;
};

int store_read_catalog(struct store_read *r, struct store_catalog *out,
                       struct store_error *err);

/* A segment is a base block and up to STORE_MAX_DELTAS delta blocks, each
 * the cell changes of one later commit (SPEC.md "Delta blocks"): a small
 * transaction writes its changes instead of re-encoding every segment it
 * touches, and the deltas are folded into the base later (store_compact)
 * or when they grow. A delta block is encoded like a base, rollups
 * included, but its counts, sums and value-count rows may be negative or
 * zero. */
#define STORE_MAX_DELTAS 8

/* Iterates the segments of one view and width whose span overlaps
 * [from, to) in time order. Blocks point into the map (zero-copy) and stay
 * valid until store_read_end. A segment comes as its base and its deltas
 * apart, as stored (the engine folds them as it reads). Set `merged` after
 * begin to get a segment with deltas merged into one fresh block (owned by
 * the iterator, valid until the next call), so a reader sees whole cells:
 * that decodes and re-encodes the whole segment, rollups included (the
 * widest width's one segment holds every row), so it is for checks and
 * tools, never for answering asks. */
struct store_segment_iter {
    struct store_read *r;
    int view, width;
    int64_t from, to;
    int64_t at;                 /* the span start of the segment read last */
    void *cursor;
    bool started, done;
    bool merged;
    bool pending;               /* the cursor stands on an entry not yet handed out */
    void *merged_block;         /* merged: the block handed out last */
};

struct store_block_ref {
    struct format_block block;  /* opened without the trailer check */
    const void *bytes;
    size_t len;
};

struct store_segment {
    int view, width;
    int64_t span_start;
    struct format_block block;   /* the base; opened without the trailer check */
    const void *bytes;           /* the block as stored (merged mode: as merged) */
    size_t len;
    int ndeltas;                 /* the deltas, in commit order (0 when merged) */
    struct store_block_ref deltas[STORE_MAX_DELTAS];
};

int store_segments_begin(struct store_read *r, int view, int width, int64_t from, int64_t to,
                         struct store_segment_iter *it, struct store_error *err);
/* 1 with a segment, 0 at the end, -1 on error. A block that fails to open
 * is an error naming it, with seg's span_start, bytes and len filled; the
 * walk can go on past it with the next call. An LMDB failure leaves
 * seg->bytes NULL and ends the walk. */
int store_segments_next(struct store_segment_iter *it, struct store_segment *seg,
                        struct store_error *err);
/* Skips the walk ahead: the next segment handed out is the first whose
 * span ends after t (none before the one handed out last). The segments
 * skipped are not read: a walk over pieces far apart (the edges of all
 * time) opens the segments they reach, not all between. Cannot fail. */
void store_segments_skip(struct store_segment_iter *it, int64_t t);
void store_segments_end(struct store_segment_iter *it);

/* The span of a segment holding buckets of a width: store_span_buckets()
 * buckets, aligned to the view's origin (SPEC.md "Segments and blocks").
 * The finest and the widest width span 64 buckets; one between as many as
 * cover the finest's 64, but at least 8: with 64 days a day segment held
 * two months, re-encoded whole by every commit touching it. The widest
 * keeps 64 because its span rollups answer asks over everything: spans of
 * 8 weeks made a full-range percentile ask merge four copies of nearly
 * every distinct value, measured 2 to 3 times slower. */
#define STORE_MAX_SPAN_BUCKETS 64
int store_span_buckets(const struct sql_view *v, int width);
int64_t store_span_start(const struct sql_view *v, int width, int64_t bucket);

/* Text of a dictionary id; points into the snapshot. 0, or -1 when unknown. */
int store_dict_lookup(struct store_read *r, int view, int fact_column, int64_t id,
                      const char **text, size_t *len);

/* The dictionary id of a text; 0 found, 1 not in the dictionary. */
int store_dict_find(struct store_read *r, int view, int fact_column, const char *text, size_t len,
                    int64_t *id);

/* A dim row by key; values point into the snapshot. 1 found, 0 not, -1 error. */
int store_projection_get(struct store_read *r, int view, int join, int64_t key,
                         struct store_dim_value *values, int nvalues,
                         struct store_error *err);

/* ---- Dense dim columns (dense.c) ----------------------------------------
 *
 * Per (view, join, dim column): the dim value id at each join key, in
 * chunks of FORMAT_DENSE_CHUNK keys read by position straight from the map
 * (format.h "Dense dim chunks"), and a dictionary of the column's texts, one
 * id per distinct text, so that ids compare and group as their texts do.
 * An entry is FORMAT_DENSE_ABSENT (no dim row), FORMAT_DENSE_NULL (a row
 * whose column is NULL) or FORMAT_DENSE_FIRST_ID + the text's id. They are
 * the dim rows: store_projection_put and _delete set a key's entries,
 * store_projection_get reads them back, as texts. */

/* The dense columns of a join: one per dim column it reads after its key
 * (join->ndim_columns - 1), or, for a join that reads none, one whose every
 * row is NULL: its entries tell a key with a dim row from one without. */
int store_dense_columns(const struct sql_join *j);

/* The chunk and offset of a join key's code: codes in order, chunk by
 * chunk (the sign bit flipped, so negative codes come first). */
static inline void store_dense_locate(int64_t code, uint64_t *chunk, uint32_t *off)
{
    uint64_t u = (uint64_t)code ^ (UINT64_C(1) << 63);
    *chunk = u / FORMAT_DENSE_CHUNK;
    *off = (uint32_t)(u % FORMAT_DENSE_CHUNK);
}

/* Chunk `chunk` of dense column col of a join, opened in r's snapshot
 * (pointing into it, valid until store_read_end): 1 and *out; 0 when none
 * is stored (every key in it has no dim row); -1 with err when its bytes
 * are damaged (the checksum checked once per snapshot and thread). */
int store_dense_chunk(struct store_read *r, int view, int join, int col, uint64_t chunk,
                      struct format_dense *out, struct store_error *err);

/* The first and last chunk numbers stored of a dense column: 1, 0 when it
 * has none, -1 with err. */
int store_dense_bounds(struct store_read *r, int view, int join, int col, uint64_t *first,
                       uint64_t *last, struct store_error *err);

/* The text of a dim value id (an entry less FORMAT_DENSE_FIRST_ID),
 * pointing into the snapshot: 0, or -1 when the dictionary lacks it. */
int store_dense_text(struct store_read *r, int view, int join, int col, int64_t id,
                     const char **text, size_t *len);

/* The dim value id of a text: 0 found, 1 when no row ever held it. */
int store_dense_find(struct store_read *r, int view, int join, int col, const char *text,
                     size_t len, int64_t *id);

/* What a dense column holds, for straum-dump. */
struct store_dense_stats {
    uint64_t chunks, bytes;   /* chunks stored and their bytes (LMDB values) */
    uint64_t rows, nulls;     /* keys with a dim row; of them, NULL in the column */
    uint64_t texts;           /* ids its dictionary has given */
    unsigned width_max;       /* the widest entry, bytes */
};
/* Walks every chunk of a dense column (each checked as a reader checks it):
 * 0, or -1 with err. */
int store_dense_stats(struct store_read *r, int view, int join, int col,
                      struct store_dense_stats *out, struct store_error *err);

/* Checks a join's dense columns: every chunk opens, matches its checksum
 * and is encoded canonically, the join's columns hold the same chunks and
 * agree at each key on whether a dim row is there, every id reads back
 * from its column's dictionary (text to id and back), and no chunk is
 * stored without a row. *rows: the dim rows found. 0, or -1 with err
 * naming the first failure. */
int store_verify_dense(struct store_read *r, int view, int join, uint64_t *rows,
                       struct store_error *err);

/* Walks a view's value dictionary in ascending order: callback per distinct
 * value code with its total row count at the finest width. */
typedef int (*store_value_fn)(void *ctx, int64_t code, int64_t rows);
int store_values_walk(struct store_read *r, int view, int vc, store_value_fn fn, void *ctx,
                      struct store_error *err);

/* ---- Decoding a segment (cursor.c) -------------------------------------
 *
 * Every reader of a segment decodes it here: the engine's scan, straum-dump,
 * the writer's loads and folds, verify. A walk (store_segments_begin) hands
 * out segments; store_segment_block opens one of a segment's blocks for
 * decoding; store_rows_load decodes of one family of that block (the cells,
 * or a rollup family: SPEC.md "Rollups") what the caller asks for, and only
 * that: the columns asked for, and of a range the rows of the buckets in
 * it, found through the family's bucket starts. RAW, BITPACK and GFOR columns
 * are read in place, the other codecs from the slice's anchor before (format/).
 * A new column role is decoded here once, for every reader.
 *
 * Nothing trusts the bytes: a column missing or of the wrong type or length,
 * bucket starts or value-count offsets that do not ascend or pass the end,
 * and any codec failure are errors naming the block's span, never an
 * out-of-bounds read. Out of memory is STORE_ERR_NO_MEMORY. */

/* One block of a segment, opened for decoding. Points into the block's
 * bytes (the snapshot's, or the caller's buffer), owns nothing. */
struct store_block {
    struct format_block block;
    const struct sql_view *v;
    const struct store_column_type *types; /* the view's fact column types */
    int64_t span_start;
    int64_t width;            /* usec */
    int span;                 /* buckets in the span: store_span_buckets */
    uint64_t snapshot;        /* for the checksum cache: the read snapshot's id
                                 (store_read_snapshot_id); 0, no cache: every
                                 decode checks its column's checksum */
};

/* Block i of a segment (0 the base, 1..ndeltas its deltas, in commit
 * order), in r's snapshot. Cannot fail: the walk opened it. */
void store_segment_block(struct store_read *r, const struct store_segment *seg, int i,
                         struct store_block *out);

/* A block of the view's width at span_start in a caller's buffer (the
 * writer's stored segments), opened with its trailer checked when verify is
 * set, with no checksum cache. 0, or -1 with err when it does not open or
 * says another span or width. */
int store_block_open(struct store_block *out, const struct sql_view *v,
                     const struct store_column_type *types, int width, int64_t span_start,
                     const void *bytes, size_t len, bool verify, struct store_error *err);

/* What of a family to decode. Flags per key, count, sum and value count
 * (NULL: none of them); `every` asks for every column of the family (of a
 * rollup family, the keys and value counts it holds). */
struct store_want {
    uint16_t family;          /* role base: 0 the cells, else store_rollup_base() */
    bool span_rows;           /* the family's rows are span rows (bucket index 0
                                 for all, no starts read): a span family over a
                                 range that holds the span */
    bool whole;               /* every row, each bucket index read from the bucket
                                 column and checked inside the span; else only
                                 the rows whose bucket lies in [from, to), their
                                 indexes from the bucket starts */
    int64_t from, to;
    bool every;
    const bool *keys, *counts, *sums, *vcs;
    bool defer_runs;          /* load offsets only: store_rows_load_runs later */
    bool defer_measures;      /* buckets and keys only: store_rows_narrow, then
                                 store_rows_load_measures, later */
    bool lazy_codes;          /* leave the runs' codes encoded (struct
                                 store_lazy_runs) when loaded unpacked */
    const bool *lazy_rows;    /* per value count: leave its rows encoded too when
                                 their codec seeks (the caller knows each row's
                                 total without them); NULL none */
};

/* Where runs left encoded lie: the value-count codes (and rows, while
 * rows_pending) of a block, from column index `first`. Valid while the
 * block's bytes are (a snapshot's: until store_read_end). */
struct store_lazy_runs {
    struct store_block b;
    int codes_column, rows_column;
    bool rows_pending;        /* rows are encoded too */
    uint32_t first;           /* column index of run 0 */
};

/* A family's rows as decoded: row i is family row first + i. Arrays the
 * want did not ask for are NULL. Owned by the rows, freed by
 * store_rows_free, except those a caller took (store_rows_take_runs). */
struct store_rows {
    uint32_t n;               /* rows decoded */
    uint32_t first;           /* the family's row index of row 0 */
    uint32_t nfamily;         /* rows the family holds */
    int64_t *bucket;          /* n bucket indexes within the span */
    int64_t **keys;           /* per cell key: n codes */
    int64_t **counts;         /* per count: n */
    void **sums;              /* per sum: n __int128 or, for float columns, double */
    bool *sum_real;           /* per sum: doubles */
    int64_t **vc_off;         /* per value count: n + 1 offsets into its runs */
    int64_t **vc_codes;       /* per value count: the runs' codes (n slots undecoded
                                 while vc_lazy[k]) */
    int64_t **vc_rows;        /* per value count: the runs' rows */
    uint32_t *vc_n;           /* per value count: runs loaded */
    struct store_lazy_runs **vc_lazy; /* per value count: what was left encoded, or NULL */
    bool borrowed;            /* the column arrays belong to someone else (the
                                 rollup builder's rows): store_rows_free frees
                                 only the tables */
};

/* The rollup family `family` of a block, whether it holds the value counts
 * vcs asks for (NULL: none), and its row count: true when it does. */
bool store_block_family(const struct store_block *b, uint16_t family, const bool *vcs,
                        uint32_t *nrows);

/* Decodes what want asks of a block into rows (zeroed first). 0, or -1
 * with err; rows then holds what was decoded, for store_rows_free. */
int store_rows_load(const struct store_block *b, const struct store_want *want,
                    struct store_rows *rows, struct store_error *err);

/* After a load with defer_measures: keeps rows [lo, hi) of those loaded
 * (lo <= hi <= rows->n), moved down to row 0, so that their counts, sums
 * and offsets are decoded for them alone. Cannot fail. */
void store_rows_narrow(const struct sql_view *v, struct store_rows *rows, uint32_t lo,
                       uint32_t hi);
/* After a load with defer_measures (and any narrowing): decodes the counts,
 * sums and value-count offsets want asks of the rows held, then, unless
 * want defers them, their runs. 0, or -1 with err. */
int store_rows_load_measures(const struct store_block *b, const struct store_want *want,
                             struct store_rows *rows, struct store_error *err);

/* After a load with defer_runs: loads the runs of the value counts asked
 * for, of every row, or (pass set, n flags) of the rows that pass only,
 * packed, when those hold under a quarter of the runs; each offset list is
 * then relative to the runs loaded, a row not loaded with none. A filtered
 * ask keeps few of a range's cells: decoding every run of the range to
 * fold a few cells' was most of such an ask. */
int store_rows_load_runs(const struct store_block *b, const struct store_want *want,
                         struct store_rows *rows, const bool *pass, struct store_error *err);

/* Hands the caller value count k's runs (malloc'd codes and rows, n of
 * them) and what was left encoded (malloc'd, or NULL); the rows keep none
 * of them. */
void store_rows_take_runs(struct store_rows *rows, int k, int64_t **codes, int64_t **run_rows,
                          uint32_t *n, struct store_lazy_runs **lazy);
void store_rows_free(const struct sql_view *v, struct store_rows *rows);

/* Runs [i, i + count) of a lazy list's codes, or rows, into out. */
int store_lazy_codes(const struct store_lazy_runs *l, uint32_t i, uint32_t count, int64_t *out,
                     struct store_error *err);
int store_lazy_rows(const struct store_lazy_runs *l, uint32_t i, uint32_t count, int64_t *out,
                    struct store_error *err);
/* A lazy list read by position in place: its codes and their running rows
 * (STORE_VC_CUMULATIVE), element i of run i of the list's block column
 * (the list's run 0 is element l->first). */
struct store_seek_runs {
    struct format_seek codes, cum;
};

/* 1 and *out when the list's family holds its running rows and both
 * columns seek in place (each column's checksum checked once per
 * snapshot, as store_block_decode does); 0 when not; -1 with err when a
 * checksum fails or the list's count runs from l->first pass the columns'
 * end. */
int store_lazy_seek(const struct store_lazy_runs *l, uint32_t count, struct store_seek_runs *out,
                    struct store_error *err);

/* Whether one code of the list decodes alone, without a walk over those
 * before it (format_codec_seeks). */
bool store_lazy_codes_seek(const struct store_lazy_runs *l);

/* Elements [first, first + count) of a block's column i into out: the
 * primitive under the rest, for readers of single columns (verify's rollup
 * check, straum-dump's blocks). The checksum is checked once per snapshot
 * and thread when b->snapshot is set, else at every call. */
int store_block_decode(const struct store_block *b, int i, uint32_t first, uint32_t count,
                       void *out, struct store_error *err);

/* Checks one segment: the block's checksums, that every column decodes, and
 * the store's invariants (cells sorted and unique, bucket indexes inside the
 * span, row counts positive, value-count runs ascending with positive rows,
 * rollups equal to the cells); a raw segment's deltas too (checksums, cells
 * sorted and unique, and base plus deltas never negative). The error names
 * the segment. */
int store_verify_segment(struct store_read *r, const struct store_segment *seg,
                         struct store_error *err);

/* Writes a compacted, consistent copy of the store to dest (an empty or new
 * directory). Safe while a writer commits: the copy is one read snapshot. */
int store_copy(struct store *s, const char *dest, struct store_error *err);

/* Bytes the store's data file holds, and the map size. */
int store_size(struct store *s, uint64_t *file_bytes, uint64_t *map_bytes,
               struct store_error *err);

/* ---- Lag (lag.c) ------------------------------------------------------- */

/* How far the store's answers trail PostgreSQL, in microseconds, from its
 * position as stored in the catalog; -1 when unknown (no commit time and
 * no contact yet). When the last contact found nothing left to apply
 * (bytes_behind == 0) the store was current at that contact, so the lag is
 * now - contact_time (an idle source keeps its old commit time but is not
 * behind); otherwise it holds what was committed at commit_time, so the
 * lag is now - commit_time. Never negative. serve's /readyz and /metrics,
 * ingest's /metrics and straum-dump catalog all use this one figure. */
int64_t store_lag_usec(const struct store_position *pos, int64_t now_usec);

/* ---- Codes -------------------------------------------------------------- */

/* PostgreSQL type OIDs of the source types Straum keeps (store_column_type
 * pg_oid): the input and output rules of codes follow the source type. */
enum {
    PG_BOOL = 16, PG_INT8 = 20, PG_INT2 = 21, PG_INT4 = 23, PG_TEXT = 25,
    PG_FLOAT4 = 700, PG_FLOAT8 = 701, PG_BPCHAR = 1042, PG_VARCHAR = 1043,
    PG_DATE = 1082, PG_TIMESTAMP = 1114, PG_TIMESTAMPTZ = 1184, PG_NUMERIC = 1700,
};

/* The form a value comes in: text (a FILTER constant, a JSON string, a
 * string literal), a number as written (a JSON number, a numeric literal)
 * or a boolean (JSON true and false, TRUE and FALSE). */
enum store_value_form { STORE_VALUE_TEXT, STORE_VALUE_NUMBER, STORE_VALUE_BOOL };

struct store_value {
    enum store_value_form form;
    bool boolean;        /* BOOL */
    const char *text;    /* TEXT and NUMBER; len bytes, need not end in NUL */
    size_t len;
};

/* What store_code_of_value gives. */
struct store_coded {
    int64_t code;        /* every type but TEXT; never STORE_NULL */
    const char *text;    /* TEXT: the value's bytes (into the input), for
                            the dictionary */
    size_t len;
    bool local;          /* TIMESTAMP of a timestamptz column, written
                            without an offset: the caller reads it in its
                            time zone (an ask's time_zone; UTC for FILTER) */
};

enum {
    STORE_CODE_REFUSED = -1, /* not a value of the type (PostgreSQL refuses
                                it too), or a form Straum does not read */
    STORE_CODE_OK = 0,
    STORE_CODE_NONE = 1,     /* a value of the type no stored code equals:
                                more decimals than the column keeps, out of
                                the code's range, NaN or infinity where the
                                column stores none */
};

/* The code of a value in a column of type t, by PostgreSQL's input rules
 * for t's source type (t->pg_oid; 0 reads as bigint, double precision,
 * timestamptz), SPEC.md §4.1. Returns STORE_CODE_OK with *out,
 * STORE_CODE_NONE or STORE_CODE_REFUSED with a message naming the value
 * and the type in err ("\"tomato\" is not a boolean"). Pure; never
 * allocates. */
int store_code_of_value(const struct store_column_type *t, const struct store_value *v,
                        struct store_coded *out, char *err, size_t errlen);

/* Order-preserving code of a double, and back. */
int64_t store_float_code(double v);
double store_code_float(int64_t code);

/* Renders a code of a column type as text, as PostgreSQL writes its source
 * type ("12.50", "0.1", "1e+300", "2024-01-17", "0044-03-15 BC", "true",
 * "2024-01-17 10:00:00.5+00", a timestamp without time zone without the
 * offset), for dumps and answers; store_code_of_value reads it back as the
 * same code (but a timestamp before 1 AD or past 9999, whose forms it does
 * not read). Text codes need the dictionary: use store_dict_lookup.
 * Returns the bytes it needed, like snprintf. */
size_t store_code_format(const struct store_column_type *t, int64_t code, char *buf,
                         size_t len);

#endif
