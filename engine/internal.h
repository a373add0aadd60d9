/* internal.h -- what the engine's files share: the engine, a bound ask, the
 * scan's groups and finished answer values. Private to serve/. */
#ifndef STRAUM_ENGINE_INTERNAL_H
#define STRAUM_ENGINE_INTERNAL_H

#include "base/decimal.h"
#include "base/hashtab.h"
#include "base/runs.h"
#include "engine/engine.h"
#include "engine/tz.h"
#include "base/scratch.h"

#include <pthread.h>

/* A compiled ask in the cache. Held by the cache (in a bucket and on the
 * recency list) and by each ask using it (refs); an entry evicted while in
 * use is freed by the last of them. */
struct cached_ask {
    char *text;
    struct sql_ask *ask;
    size_t bytes;             /* text + compiled ask: what the cache's byte bound counts */
    int refs;                 /* asks using it now */
    bool cached;              /* still in the cache */
    struct cached_ask *next;  /* in its bucket */
    struct cached_ask *newer, *older; /* the recency list: evictions take the oldest */
};

/* An IN list past IN_LINEAR_MAX values is probed as a set (a struct
 * hashtab of codes, base/hashtab.h: at most half full), so a 30,000-value
 * list (64 KiB of "1," fits one) costs a cell a probe or two, not 30,000
 * compares. Up to IN_LINEAR_MAX a loop over the values is as quick. */
enum { IN_LINEAR_MAX = 8 };

struct engine {
    struct store *store;
    struct engine_limits limits;
    pthread_mutex_t cache_lock;
    struct cached_ask *buckets[1024];
    struct cached_ask *newest, *oldest;
    int ncached;
    size_t cached_bytes;
};

/* ---- Binding -------------------------------------------------------------- */

/* A condition with its values turned into what cells hold. */
struct bound_cond {
    enum sql_ask_cond_kind kind;
    bool is_dim;
    int cell_key;          /* fact key: index into view->cell_keys */
    int join, dim_value;   /* dim column: join, and index in its projection row
                              (its dense column, store_dense_columns) */
    int64_t *codes;        /* fact key values that can exist */
    int ncodes;
    char **texts;          /* dim values, as text; by_text: the one value */
    size_t *lens;
    int ntexts;
    /* A range on text or a pattern (LIKE, ILIKE) needs the value's text:
     * each distinct value met is tested once, its verdict kept in memo
     * (by dictionary id for a fact key, by dim value id for a dim column):
     * 0 not yet, 1 false, 2 true. */
    bool by_text;
    uint8_t *memo;
    uint32_t nmemo;
};

struct bound {
    int64_t from, to;      /* µs, on finest-width edges: the buckets read */
    bool has_from, has_to; /* the ask bounds that side (else all time) */
    int64_t all_from, all_to; /* a side left open: every bucket a store can hold */
    const struct tz *tz;
    const struct tz *group_tz; /* date_trunc's zone (the ask's unless given) */
    struct bound_cond *conds;
    int nconds;
    /* HAVING's values, one per comparison, as written (kind and text). */
    struct ask_value *having;
    int64_t limit;         /* -1: none */
    int64_t offset;
};

int bind_ask(struct store_read *r, const struct sql_ask *ask, int view,
             const struct store_column_type *types, const struct ask_request *req,
             struct bound *out, struct ask_error *err);
void bound_free(struct bound *b);

/* ---- Scanning -------------------------------------------------------------- */

/* Decoded value-count columns of a block that groups may hold without
 * copying (vc_acc.c): freed when the last holder lets go. One ask's, so
 * one thread's: the count is plain. While lazy is set, codes holds n
 * undecoded slots: only a group that lent the list whole may hold it, and
 * it reads codes through vc_shared_code, or vc_shared_fill first.
 *
 * A rollup's runs come that way (store_want.lazy_codes): a group fed by one
 * rollup row (a percentile per bucket, or over a span) reads only the codes
 * it picks. Their rows too when the ask knows each group's total without
 * them (exec.rows_count): a percentile then decodes rows only up to its
 * pick. The block lies in the ask's read snapshot, valid until the answer
 * is written. */
struct vc_shared {
    int64_t *codes, *rows;
    int refs;
    uint32_t n;
    struct store_lazy_runs *lazy;
    /* A rollup's runs that also read by position (store_lazy_seek): run i
     * is element seek_first + i of seek's columns, which lie in the ask's
     * snapshot whether or not lazy was since decoded. */
    bool seeks;
    uint32_t seek_first;
    struct store_seek_runs seek;
    /* A list that does not seek (cells' runs, decoded) may still be a
     * group's source (exec.c fold_cell): cum is then its running rows,
     * cum[i] the rows of runs 0..i of the whole list, made at the first
     * pick (vc_shared_cum). held_runs: once its arrays count against the
     * ask's EXEC_SOURCE_RUNS_MAX, where they are counted (exec.source_runs);
     * freed, they are taken off again, so a scan whose groups settle
     * (exec.c settle_groups) goes on holding lists as its first groups did. */
    int64_t *cum;
    uint64_t *held_runs;
};

/* Takes the arrays (malloc'd) of n runs and lazy (malloc'd or NULL); one
 * reference, the caller's. NULL when out of memory (the arrays are then
 * still the caller's). */
struct vc_shared *vc_shared_new(int64_t *codes, int64_t *rows, uint32_t n,
                                struct store_lazy_runs *lazy);
/* A list of its own holding a copy of runs [at, at + n) of s (decoded);
 * one reference. NULL when out of memory. */
struct vc_shared *vc_shared_copy(const struct vc_shared *s, uint32_t at, uint32_t n);
void vc_shared_release(struct vc_shared *s);
/* Decodes the codes (and rows) lazy left encoded (exec.c); a no-op once
 * done. */
int vc_shared_fill(struct vc_shared *s, struct ask_error *err);
/* Rows [i, i + *got) of the list into out, 0 < *got <= max (max > 0): while
 * they are encoded, decoded a stretch at a time that ends where the codec
 * can start the next one without a walk. */
int vc_shared_rows(struct vc_shared *s, uint32_t i, uint32_t max, int64_t *out, uint32_t *got,
                   struct ask_error *err);
/* Code i of the list: while lazy, decoded alone when its codec seeks
 * (format_codec_seeks), else after vc_shared_fill. */
int vc_shared_code(struct vc_shared *s, uint32_t i, int64_t *code, struct ask_error *err);

/* One cell's or rollup row's runs a group reads by position: runs [at, at
 * + n) of a shared list, in place when it seeks, else from its decoded
 * arrays and their running rows (vc_shared.cum). Holds a reference to it. */
struct vc_source {
    struct vc_shared *shared;
    uint32_t at, n;
    bool minus;               /* its rows are taken away (a piece read to subtract) */
};

/* A group's value counts (vc_acc.c): rows per code, first a sorted list
 * (lent from a block or owned), then a hash and, once the codes prove
 * dense, a window of counters for codes [lo, lo + 32768), in pages made
 * as codes reach them. */
struct vc_acc {
    const int64_t *sorted_codes, *sorted_rows; /* ascending by code, while !hashed */
    uint32_t nsorted;
    int64_t *owned_codes, *owned_rows;         /* the list when the group owns it */
    struct vc_shared *lent;                    /* else the block it lies in */
    bool rows_pending;        /* the lent list's rows are encoded: not in total */
    bool zero_rows;           /* the list may hold runs whose rows are 0 */
    int64_t total;            /* rows added in all */
    int adds;
    bool hashed;
    struct hashtab hash;      /* code -> rows (int64); zeros until the first add */
    int64_t **win, lo;        /* the window's pages of counters (NULL: none
                                 touched yet), for codes [lo, lo + 32768) */
    uint32_t nwin;            /* distinct codes in the window */
    bool window_tried;
    /* Rollup rows kept by position rather than merged (percentiles only:
     * exec.rows_count), beside whatever was merged above. */
    struct vc_source *srcs;
    uint32_t nsrcs, srcs_cap;
    /* Short lists of a percentile-only value count, appended as they come
     * (vc_acc_collect) rather than merged: the pick selects across them
     * (vc_acc_select). Any order, a code may repeat. */
    int64_t *coll_codes, *coll_rows;  /* one region of the ask's run arena */
    uint32_t ncoll, coll_cap;         /* coll_cap: a power of two */
    struct run_arena *arena;          /* the region's, given back to it */
    bool merges;              /* collected past VC_COLLECT_MAX: merges since */
    bool coll_sorted;         /* the collected runs are ascending, each code
                                 once (vc_acc_select sorted them for a pick) */
};

/* A group's values in code order, each with rows != 0. */
struct vc_sorted {
    const int64_t *codes, *rows;
    uint32_t n;
    int64_t total; /* rows in all, unless rows_pending */
    struct vc_shared *lazy;       /* set: codes are not decoded; code i is */
    uint32_t lazy_at;             /* lazy's code lazy_at + i */
    bool rows_pending;            /* rows are encoded too: read through
                                     vc_shared_rows, total unknown */
};

/* Adds n runs (code, rows), ascending by code as blocks hold them (runs
 * that do not ascend, from a damaged block, are still counted). When
 * shared is not NULL the arrays lie in it and the group may keep them by
 * reference. -1 when out of memory. The codes and rows must be decoded
 * unless the group lends them (vc_acc_lends), and the group's own list too
 * when it holds a lazy one (vc_shared_fill). */
int vc_acc_add_runs(struct vc_acc *a, struct vc_shared *shared, const int64_t *codes,
                    const int64_t *rows, int64_t n);
/* Whether adding n shared runs would lend them whole, without a merge. */
bool vc_acc_lends(const struct vc_acc *a, int64_t n);
/* The lazy list the group lent, whose codes are not decoded yet, or NULL. */
struct vc_shared *vc_acc_lazy(const struct vc_acc *a);
/* Ends the adding: the codes with their rows, ascending by code, valid
 * until vc_acc_free. -1 when out of memory. */
int vc_acc_runs(struct vc_acc *a, struct vc_sorted *out);
void vc_acc_free(struct vc_acc *a);
/* Keeps runs [at, at + n) of a list that seeks as a source of the group
 * (a reference to it), its rows taken away when minus. -1 when out of
 * memory. */
int vc_acc_add_source(struct vc_acc *a, struct vc_shared *shared, uint32_t at, uint32_t n,
                      bool minus);
/* Sources a group keeps before it merges the rest: each costs a pick a
 * binary search per step, a merge costs every run once. */
enum { VC_MAX_SOURCES = 1024 };
/* A decoded list (a cell's runs) shorter than this is collected rather
 * than kept as a source: a pick's bisection costs some 17 binary searches
 * of every list (about 600 ns a list), a selection a few passes over the
 * runs (some 3 ns a run a pass). */
enum { VC_SOURCE_MIN_RUNS = 256 };
/* Decoded lists a group keeps as sources: past some dozens a merge (the
 * group's window) costs less than bisecting them all at every step, and
 * their arrays stay alive until the answer. */
enum { VC_MAX_DECODED_SOURCES = 32 };
/* The runs of decoded lists an ask keeps alive as sources (24 bytes each
 * with their running rows: 96 MiB at most); past it cells merge. */
#define EXEC_SOURCE_RUNS_MAX (UINT64_C(4) << 20)
/* The runs an ask collects into its groups (16 bytes each: 128 MiB at
 * most); past it cells merge. */
#define EXEC_COLLECT_RUNS_MAX (UINT64_C(8) << 20)
/* A group collects at most this many runs; past it they go to the merge
 * (the hash, then the dense window), as does every later list. The
 * selection costs a few passes over the runs per pick, a window an array
 * add per run once its pages are made, and a scan of them at the end:
 * past some thousands of runs the window costs less. */
enum { VC_COLLECT_MAX = 4096 };
/* The ask's memory for collected runs: regions of 16 x 2^k bytes (2^k
 * runs, codes then rows) cut from chunks by bumping a pointer; a region
 * given back goes on its size's free list for the next group that needs
 * that size, and every region is made free at once (run_arena_reset) when
 * no group holds collected runs, as when every group so far has settled.
 * Why: an ask of 111,922 groups, each collecting a few cells of a few
 * runs, spent 18% of its time in malloc, realloc and free growing each
 * group's two arrays. The free lists keep an ask whose groups never
 * settle (calendar days) at about the runs it holds: without them the
 * regions groups grew out of held 51 MB more. */
enum { RUN_ARENA_CLASSES = 32 };
struct run_arena {
    char **chunks;
    size_t *sizes;
    uint32_t nchunks, cap, at; /* chunks[at] is being handed out */
    size_t used;               /* of chunks[at] */
    void *free[RUN_ARENA_CLASSES]; /* regions given back, by k, linked
                                      through their first word */
};
/* Bytes of a chunk: a group's largest collection (VC_COLLECT_MAX runs,
 * 64 KiB) fits four times, and an ask of a few groups takes one. */
enum { RUN_ARENA_CHUNK = 256 << 10 };
/* Gives a region of cap runs back to its size's free list. */
void run_arena_give(struct run_arena *ar, void *region, uint64_t cap);
void run_arena_reset(struct run_arena *ar);
void run_arena_free(struct run_arena *ar);
/* Appends n runs (any order) to the group's collected runs, in ar, or
 * merges them once it holds VC_COLLECT_MAX (vc_acc.merges). -1 when out
 * of memory. */
int vc_acc_collect(struct vc_acc *a, struct run_arena *ar, const int64_t *codes,
                   const int64_t *rows, uint32_t n);
/* The code at 1-based row `row` of the group's values in code order, the
 * sources, the collected runs and the merged list (from vc_acc_runs,
 * decoded, rows in total) together: the smallest code whose rows at or
 * below reach row. With collected runs alone, a selection over them
 * (expected time linear in the runs; it reorders them); else the codes are
 * bisected, each list binary-searched through its running rows, so the
 * cost follows the lists, not their runs (the collected runs sorted into
 * one list first). Codes must order as values (not text). row > the rows
 * in all picks the largest code. -1 when out of memory. */
int vc_acc_select(struct vc_acc *a, const struct vc_sorted *merged, int64_t row,
                  int64_t *code);

struct outval; /* answer.c */

struct group {
    int64_t *key;          /* bucket, then one id per group key */
    int64_t *counts;
    __int128 *exact;
    double *real;
    struct vc_acc *vcs;    /* NULL when the ask reads none; empty once settled */
    /* Settled (exec.c settle_groups): no cell can reach the group any more.
     * settled_values: the measures read from its value counts
     * (exec.settle_measures), in that order, finished by answer_settle;
     * they own no memory but this array. */
    bool settled;
    struct outval *settled_values;
    struct group *next_free;  /* in group_map.free once dropped */
};

/* Slots of group_map.recent: a power of two; a month's or a day's groups
 * by a dim column (a few boroughs) fit without colliding much. */
#define GROUP_RECENT 16

/* Segments an ask remembers to name in its error when a group comes out
 * below no rows (struct exec.suspects): enough to name every suspect of a
 * narrow ask, and a message a user can still read. */
#define EXEC_SUSPECTS 8

struct group_map {
    struct hashtab table;  /* group key (nkey words) -> struct group * */
    struct group **all;    /* in creation order */
    uint32_t n, cap;
    int nkey;
    struct group *last;       /* the group found last */
    /* Groups found lately, by a cheap mix of their key (exec.c group_for):
     * cells of one bucket map to a few groups in turn (each zone's marginal
     * row to its borough), which `last` misses every time and the table
     * would hash for. */
    struct group *recent[GROUP_RECENT];
    /* The groups' memory (exec.c group_new): slabs of gsize-byte groups,
     * each slab twice the last up to a bound; slab_at the next free one. */
    char **slabs;
    uint32_t nslabs, slabs_cap;
    size_t gsize;
    char *slab_at;
    uint32_t slab_left, slab_groups;
    struct group *free;       /* dropped groups, whose room new ones take */
};


struct exec {
    struct engine *e;
    struct store_read *r;
    uint64_t snapshot;        /* store_read_snapshot_id(r) */
    const struct sql_ask *ask;
    const struct sql_view *v;
    int view;
    const struct store_column_type *types;
    struct bound b;
    struct group_map groups;
    void *plan_block;         /* the arrays below to cond_ids, one block (exec.c plan_arrays) */
    struct dim_cache *dims;   /* per join: its dense columns' chunks read (exec.c) */
    int64_t *key;             /* [groups.nkey]: the group key of the cell at hand */
    bool *need_count, *need_sum, *need_vc, *need_key;
    /* Per value count: the count whose rows are its rows' total (the same
     * column and filter: a value count holds exactly the non-null values
     * that count counts), when every measure the ask reads of it is a
     * percentile and its rows may stay encoded; else -1. */
    int *rows_count;
    bool *lazy_rows;          /* per value count: rows_count[k] >= 0 (store_want) */
    int64_t **cond_ids;       /* per dim condition: its texts' ids in the dim
                                 column's dictionary (-2: never seen) */
    struct hashtab *cond_sets; /* per condition: its codes or ids as a set when
                                   they are more than IN_LINEAR_MAX, else empty */
    int read_key;             /* the one cell key the ask reads (conditions,
                                 group keys, inner joins); -1 none, -2 more */
    /* Grouping by time (exec.c plan_time): a bucket's group is its bin of
     * bin_width from bin_origin, or, by a calendar unit, the bucket
     * cal_keys[i] of the cal_edges[i] <= bucket < cal_edges[i + 1] that
     * holds it (cal_hint: the last one found; cells come in time order). */
    int64_t bin_width, bin_origin;
    int64_t *cal_edges, *cal_keys;
    uint32_t ncal, cal_hint;
    /* The pieces the range is read in: a width and a sub-range of its
     * edges, each cell of which lies in one group (exec.c cover). */
    struct scan_piece *pieces;
    uint32_t npieces, pieces_cap;
    int64_t started_us;
    const atomic_bool *cancel; /* ask_request.cancel: read with the budget */
    uint64_t cells_read;
    uint32_t segments_read;   /* by the pieces' walks (struct ask_stats) */
    uint64_t source_runs;     /* runs of decoded lists groups keep as sources */
    uint64_t collected_runs;  /* runs groups collected (vc_acc_collect) */
    struct run_arena runs_arena; /* where they lie */
    uint32_t lists_held_whole;   /* exec.c hold_whole's, for ask_stats */
    bool subtract_failing;       /* exec.c plan_subtract_failing */
    uint32_t blocks_subtracted;  /* blocks read as totals less failing rows */
    bool folded_deltas;       /* a delta block was folded, or a piece taken
                                 away: groups may be empty */
    /* The segments with deltas the ask folded or whose rows it took away,
     * the first EXEC_SUSPECTS of them (counted past that): a group gone
     * below no rows is blamed on one of them (exec.c blame_suspect). */
    struct { int width; int64_t span_start; } suspects[EXEC_SUSPECTS];
    uint32_t nsuspects;
    bool subtract;            /* pieces may be taken away (exec.c may_subtract) */
    bool subtract_edges;      /* and at the edges of every width (plan_time) */
    int64_t *width_cost;      /* per width: a bucket's cost (exec.c piece_cost) */
    int64_t cover_from, cover_to, cover_key; /* the calendar bucket being covered */
    /* The run of pieces being read (exec.c scan_run): one width and sign,
     * in time order; the piece of the cell at hand found from run_hint. */
    const struct scan_piece *run;
    uint32_t nrun, run_hint;
    bool minus;               /* the run is taken away */
    bool run_twins;           /* some piece of the run has a twin */
    int64_t piece_key;        /* the cell's piece's calendar key, or NO_PIECE_KEY */
    uint32_t npieces_minus;   /* pieces taken away (struct ask_stats) */
    int64_t *minus_rows;      /* a taken-away list's rows, negated */
    uint32_t minus_cap;
    bool filters_cells;       /* conditions or inner joins may drop cells */
    bool where_all_and;       /* the conditions are leaves under AND only */
    /* Conditions under OR or NOT whose leaves all read one cell key (a
     * fact key, or dim columns joined through it): their verdict is a
     * function of that key's code, kept per code met in where_verdicts
     * (code -> 1 false, 2 true), so each distinct code walks the tree once
     * and every other cell is one probe. -1: not so. */
    int where_key;
    struct hashtab where_verdicts;
    bool any_vc;              /* some value count is needed */
    /* Settling (exec.c settle_groups): an ask grouped by time whose cells
     * come in time order settles each group once no cell to come can reach
     * it: its value-count measures are finished and its value counts let
     * go, and the group map forgets it, so what the scan holds and probes
     * follows the groups of a segment, not of the range. The measures so
     * finished (view columns' measures read from value counts, each once),
     * the groups before settle_from, all settled, and whether the map was
     * emptied of settled groups. */
    bool settle;
    uint32_t map_forgot;      /* times the map was emptied (struct ask_stats) */
    bool settle_in_block;     /* and within the block at hand (no deltas) */
    const struct sql_measure **settle_measures;
    int nsettle;
    uint32_t settle_from;
    uint32_t nsettled;        /* groups settled (struct ask_stats) */
    bool answer_failed;       /* a lazy code failed to decode while answering */
    struct answer_state *answer; /* answer_prepare's rows (answer.c) */
    struct answer_state *keep;   /* rows kept while the scan goes, or NULL */
    struct ask_error answer_err;
};

/* A piece's cells add to their groups, or, minus set, are taken away from
 * them: a range read as a whole bucket or span less what lies outside it
 * (exec.c cover_at, cover_spans). A piece that lies outside the calendar
 * bucket it serves carries that bucket's key; others NO_PIECE_KEY. */
#define NO_PIECE_KEY INT64_MIN
struct scan_piece {
    int width;
    bool minus;
    int64_t key;
    int64_t from, to;
    /* A calendar ask's piece whose cells are also taken away from another
     * bucket, twin_key's (NO_PIECE_KEY: the bucket its cells' starts fall
     * in): a New York day's last hours are the next day's first, added to
     * one and taken from the other. Read once, folded twice (exec.c
     * pair_twins). */
    bool twin;
    int64_t twin_key;
};

/* Covers [from, to) with the widest cells that fit and folds every cell
 * into its group. */
int exec_scan(struct exec *x, struct ask_error *err);
/* The ask's time budget and its cancel flag (exec.c): 0, or -1 with the
 * 503 ("ask_timeout" or "cancelled"). Read every BUDGET_CELLS cells or
 * groups: reading the clock costs some 20 ns. */
enum { BUDGET_CELLS = 1024 };
int exec_over_budget(struct exec *x, struct ask_error *err);
void exec_free(struct exec *x);

/* ---- Answers ------------------------------------------------------------------ */

/* Finishes the groups into the answer's rows: HAVING applied, ordered,
 * OFFSET and LIMIT's window found (x->answer). Returns 0, or -1 with err;
 * answer_release frees what it built either way. */
int answer_prepare(struct exec *x, struct ask_error *err);
/* Hands sink the columns (first call) and then up to max_rows of the
 * rows not yet handed over; *done once the last is out. Returns 0, or -1
 * with err (a sink's error, or a value that failed to decode). */
int answer_next(struct exec *x, const struct answer_sink *sink, int64_t max_rows, bool *done,
                struct ask_error *err);
void answer_release(struct exec *x);
/* Finishes group g's measures read from value counts (x->settle_measures)
 * into g->settled and frees its value counts: no cell may reach g after.
 * Returns 0, or -1 with err (out of memory, a code that failed to decode). */
int answer_settle(struct exec *x, struct group *g, struct ask_error *err);
/* Rows kept as groups settle (answer.c, "Top rows kept while the scan
 * goes"), for an ask with LIMIT whose offset + limit is at most
 * ANSWER_KEEP_MAX: a heap of that many rows' worth is made at the start.
 * answer_keep_start sets x->keep when the ask qualifies (0, or -1 when
 * out of memory); answer_keep offers a group whose bin is over, which
 * the heap keeps (and settles: answer_settle) or hands to
 * exec_group_drop, and takes it either way (0, or -1 with err);
 * answer_keep_end appends the groups kept to x->groups.all for
 * answer_prepare (0, or -1 with err, the state left for
 * answer_keep_release); answer_keep_release drops what is kept (exec_free). */
#define ANSWER_KEEP_MAX 10000
int answer_keep_start(struct exec *x);
int answer_keep(struct exec *x, struct group *g, struct ask_error *err);
int answer_keep_end(struct exec *x, struct ask_error *err);
void answer_keep_release(struct exec *x);
/* Gives a group that will not be answered back to the ask (exec.c): its
 * value counts and settled values freed, its slab room made the next new
 * group's. */
void exec_group_drop(struct exec *x, struct group *g);
/* Frees group g's value counts and gives their collected runs back to the
 * ask's (x->collected_runs); cannot fail. */
void exec_group_vcs_free(struct exec *x, struct group *g);
/* answer_prepare, then every row to sink; answer_release stays the
 * caller's. */
int answer_emit(struct exec *x, const struct answer_sink *sink, struct ask_error *err);
/* PostgreSQL's type of an ask's output column c (engine.h). */
uint32_t answer_column_oid(const struct sql_ask *a, const struct store_column_type *types, int c);
/* The type a view column answers as, asked for (answer_column_oid's rule
 * for one column of the view, the bucket timestamptz). */
uint32_t answer_view_column_oid(const struct sql_view_column *vc,
                                const struct store_column_type *types);

/* The JSON writer (answer_json.c): a sink that writes
 * {"columns": [...], "rows": [[...], ...]} into out. */
struct answer_json {
    struct buf *out;
    int64_t rows;
};
extern const struct answer_sink answer_json_sink; /* ctx: a struct answer_json */
/* Ends the JSON answer after its rows: "],\"range\":{...}}". */
void answer_json_end(struct exec *x, struct buf *out);

/* Exact decimal helpers (numeric.c; the text of a scaled integer is
 * base/decimal.h's decimal_format). */
/* PostgreSQL's avg(numeric): sum / count rounded as numeric_div does
 * (select_div_scale's result scale, half away from zero). */
size_t dec_avg(__int128 sum, int scale, int64_t count, char *buf, size_t len);
/* Room for dec_avg's longest text: 40 integer digits, a sign, a point and
 * numeric's largest display scale, 1,000. */
enum { DEC_AVG_TEXT_CAP = 1100 };
/* sum / count at scale as a double, within some 1e-15 of the quotient
 * (relative): for ordering averages (dec_avg_cmp), not for answers. */
double dec_avg_approx(__int128 sum, int scale, int64_t count);
/* Compares two averages at one scale as PostgreSQL compares the numerics
 * avg gives (dec_avg's, rounded): <0, 0, >0. da and db are their
 * dec_avg_approx; digits are written only when those are too close to
 * tell (DEC_AVG_CLOSE). Cannot fail. */
int dec_avg_cmp(__int128 sa, int64_t na, double da, __int128 sb, int64_t nb, double db, int scale);
/* A scaled integer as the double PostgreSQL's numeric -> float8 gives. */
double dec_to_double(__int128 v, int scale);
/* Shortest text that reads back as the same double. */
size_t double_format(double d, char *buf, size_t len);

#endif
