/* internal.h -- what straum-ingest's files share: the source tables and how
 * their rows become store deltas, logging, and the follower's state.
 * Private to ingest/. */
#ifndef STRAUM_INGEST_INTERNAL_H
#define STRAUM_INGEST_INTERNAL_H

#include "base/error.h"
#include "base/logfmt.h"
#include "base/lsn.h"
#include "ingest/heap_tuple.h"
#include "ingest/ingest.h"
#include "ingest/metrics.h"
#include "ingest/pgwal.h"
#include "ingest/pgvalue.h"
#include "store/store.h"

#include <libpq-fe.h>

/* ---- Logging (logfmt on stderr) -------------------------------------------- */

/* base's logfmt writer (base/logfmt.h, shared with straum-serve):
 * these write a line with only a msg; lines with fields use
 * logfmt_begin and friends. */
/* Errors: base/error.h's error_fmt fills a caller's message and returns -1. */
#define log_debug(...) logfmt_msg(LOGFMT_DEBUG, __VA_ARGS__)
#define log_info(...) logfmt_msg(LOGFMT_INFO, __VA_ARGS__)
#define log_warn(...) logfmt_msg(LOGFMT_WARN, __VA_ARGS__)
#define log_error(...) logfmt_msg(LOGFMT_ERROR, __VA_ARGS__)

/* The wall clock, µs since 1970 (log lines, lag); the monotonic clock, ns
 * (intervals). Never fail. */
int64_t now_usec(void);
int64_t mono_ns(void);
/* PostgreSQL counts time from 2000-01-01; Straum from 1970-01-01. */
#define PG_EPOCH_OFFSET_US 946684800000000LL

/* ---- Source tables ----------------------------------------------------------- */

/* A column Straum reads from a table. */
struct source_column {
    char *name;
    int attnum;
    uint32_t type_oid;      /* the base type when the column is of a domain */
    uint32_t declared_oid;  /* the column's own type, as Relation messages name it */
    int32_t typmod;
    struct store_column_type type;
};

/* A compiled FILTER predicate: the sql tree with constants as codes. */
struct row_filter {
    enum sql_filter_kind kind;
    struct row_filter *left, *right;
    int col;                    /* table column index */
    enum sql_cmp cmp;
    struct pgvalue *values;
    int nvalues;
};

/* A view that reads the table as its fact table. */
struct fact_use {
    int view;
    int *col;                   /* view fact column -> table column index */
    struct row_filter **filters; /* per view filter */
};

/* A view that joins the table as a dim. */
struct dim_use {
    int view, join;
    int key_col;                /* table column of the dim key */
    int *cols;                  /* join dim_columns[1..] -> table column index */
    struct store_column_type key_type; /* the fact join column's type: keys are
                                          coded as the fact codes them */
    int fact_column;            /* the fact join column (its dictionary) */
};

struct source_table {
    char *schema, *name;        /* as resolved in the catalog */
    char *qualified;            /* "schema"."name", quoted for SQL */
    uint32_t relid;
    char replident;
    bool has_unique_key;        /* for dims: a unique index on the key exists */
    bool partitioned;           /* a partitioned table: published through its root */
    double reltuples;
    struct source_column *cols;
    int ncols;
    struct fact_use *facts;
    int nfacts;
    struct dim_use *dims;
    int ndims;
    /* From the latest pgoutput Relation message: relation column -> column
     * index here, or -1 for columns Straum does not read. */
    int *relmap;
    int nrelmap;
    bool relation_seen;
    void *scratch; /* decoded values of one row (rows.c); ingest is one thread */

    /* --wal physical only (source_load_physical): where the table's rows
     * live and how its tuples are laid out. */
    struct pgwal_relfilenode node;  /* its main fork's file: tablespace (the
                                       database's default resolved), database,
                                       relfilenode */
    struct heap_attr *heap_attrs;   /* every attribute 1..heap_natts, dropped
                                       ones included (heap_tuple.h) */
    int heap_natts;
    int *col_attr;                  /* column index -> attribute index
                                       (attnum - 1) in heap_attrs */
};

struct source {
    const struct sql_view_list *views;
    struct source_table *tables;
    int ntables;
    struct store_view_types *view_types; /* for store_create */
    int server_version;
    char wal_level[32];
    int max_replication_slots, max_wal_senders;
};

/* Reads the catalog: resolves every table and column the views name, their
 * types, replica identity, dim keys' uniqueness. Fails with a message that
 * names the missing table or column or the unsupported type. */
int source_load(PGconn *conn, const struct sql_view_list *views, struct source *out,
                char *err, size_t errlen);
/* --wal physical: for every table (after source_load), its relfilenode
 * (pg_relation_filenode, with reltablespace 0 resolved to the database's
 * dattablespace), and its attributes from pg_attribute (all of them, dropped
 * ones included: their old values still take room in tuples), mapped to the
 * table's columns; each descriptor passes heap_desc_check. Refuses, with a
 * message saying what to run: an unlogged or temporary table (nothing of it
 * is in the WAL), a partitioned table (its partitions' files are not
 * followed), a table with atthasmissing columns (VACUUM FULL clears them). */
int source_load_physical(PGconn *conn, struct source *src, char *err, size_t errlen);
/* The relfilenode table t has now, as source_load_physical reads it; 0 when
 * read, -1 with err (a lost connection, the table gone). */
int source_relfilenode_now(PGconn *conn, const struct source_table *t,
                           struct pgwal_relfilenode *out, char *err, size_t errlen);
/* Where the server's WAL ends now, as the end of a record, the position a
 * follower that has read everything stands at: a primary's insert
 * position (with asynchronous commit a commit may lie past the write
 * position), moved back over a page header it points past
 * (pgwal_last_record_end); a standby's replay position (what its
 * walsender has, at least). 0 when the server cannot be asked. */
uint64_t source_wal_end(PGconn *conn);
/* Whether table t's attributes in the catalog now are those
 * source_load_physical read (the columns Straum reads: name, attnum, and a
 * type with the same store type and scale; every attribute's length,
 * by-value and alignment, since they place the values in a tuple). 0 when
 * they are, or when only attributes were added (t's layout is then read
 * again: the rows written before have fewer, read as NULL); -1 with a
 * message naming the column and what to run when not (a column read
 * dropped, renamed or retyped, an attribute stored differently); 1 when
 * the catalog could not be asked (a lost connection: retry). */
int source_check_physical(PGconn *conn, struct source_table *t, char *err, size_t errlen);
/* Compiles view filters against the column types (after source_load). */
int source_compile_filters(struct source *src, char *err, size_t errlen);
void source_free(struct source *src);
struct source_table *source_by_relid(struct source *src, uint32_t relid);
struct source_table *source_by_name(struct source *src, const char *schema, const char *name);

/* ---- Rows into deltas ----------------------------------------------------------- */

/* A row of a source table, one value per table column. */
struct row_value {
    bool is_null;
    bool missing;    /* not sent (unchanged TOAST): take it from the old row */
    bool binary;
    const uint8_t *data;
    uint32_t len;
};

/* A column of a row, decoded. */
struct decoded_value {
    bool is_null;
    struct pgvalue v;
};

/* Decodes every column of a row (t->ncols values), binary or text as it
 * came. Returns 0, or -1 with a message naming the table and column. */
int rows_decode(const struct source_table *t, const struct row_value *row,
                struct decoded_value *out, char *err, size_t errlen);

/* A change of a fact row in every view reading the table: old_row's
 * contribution taken away (NULL for an insert), new_row's added (NULL for a
 * delete). An update whose row stays in its cell takes one delta there,
 * none when the view reads nothing that changed. 0, or -1 with a message
 * naming the table and column, or the store's. */
int rows_apply_fact_change(struct store *st, struct source_table *t,
                           const struct row_value *old_row, const struct row_value *new_row,
                           char *err, size_t errlen);
/* Adds (sign +1) or takes away (-1) a fact row decoded already (the
 * initial load decodes in its reader threads). */
int rows_apply_decoded_fact(struct store *st, const struct source_table *t,
                            const struct decoded_value *row, int sign, char *err, size_t errlen);
/* Puts a dim row into the projections of the views joining the table (the
 * same for a row decoded already), or deletes it from them. */
int rows_put_dim(struct store *st, struct source_table *t, const struct row_value *row,
                 char *err, size_t errlen);
int rows_put_decoded_dim(struct store *st, const struct source_table *t,
                         const struct decoded_value *row, char *err, size_t errlen);
int rows_delete_dim(struct store *st, struct source_table *t, const struct row_value *row,
                    char *err, size_t errlen);
/* True when the dim key of old and new differ (then the old key goes). */
bool rows_dim_key_changed(const struct source_table *t, const struct row_value *old_row,
                          const struct row_value *new_row);

/* The widest view ingest takes: cell keys, counts, sums, value counts and
 * filters each at most INGEST_MAX_VIEW_WIDTH (a row's accumulators sit in
 * fixed arrays of that size, rows.c), and each join at most that many dim
 * columns. 256 is far past any view written by hand; the bound keeps a
 * generated view from costing a row's apply kilobytes of stack. */
#define INGEST_MAX_VIEW_WIDTH 256

/* 0 when every view fits INGEST_MAX_VIEW_WIDTH; else -1 with a message
 * naming the view, what is too wide and the limit. */
int rows_check_width(const struct sql_view_list *views, char *err, size_t errlen);

/* Reads and parses the views file (errors carry the file name), and checks
 * its views' width (rows_check_width): plan and run refuse the same views. */
struct sql_view_list *ingest_read_views(const char *path, char **text, char *err, size_t errlen);

/* ---- Connections --------------------------------------------------------------- */

/* Connects with the user's conninfo, plus replication=database when asked. */
PGconn *source_connect(const char *conninfo, bool replication, char *err, size_t errlen);

/* ---- The follower ---------------------------------------------------------------- */

/* Group commit (pace.c, for both followers). The time between store commits
 * of transactions is at least the commit interval, and at least GROUP_COMMIT_RATIO times
 * the last commit's own time (up to GROUP_COMMIT_MAX_US), so that commits
 * take at most about a fifth of the follower's time whatever they cost. A
 * commit costs about the segments it touches (a delta block each, and the
 * folds after it), which a stream of small transactions spread over the
 * buckets soon makes all of them: under a backlog, commits back to back
 * every 5 ms held 550 transactions each and took 80% of ingest's time
 * (perf, `taxi stream`); spaced this way each holds several times more for
 * the same cost. A light stream's commits are cheap, so it keeps the 5 ms.
 * A batch of GROUP_COMMIT_ROWS commits sooner, so its memory stays
 * bounded; GROUP_COMMIT_MAX_US keeps the lag it adds well under 1 s.
 *
 * Behind: while the server holds more than GROUP_COMMIT_BEHIND_BYTES of WAL
 * the follower has not read, the lag is the backlog's, not the spacing's,
 * and groups grow to GROUP_COMMIT_BEHIND_MAX_US and GROUP_COMMIT_BEHIND_ROWS:
 * part of a commit's cost is per segment, not per row (a coarse width's
 * segment takes a delta of nearly every cell, and a fold, at each commit),
 * and fewer, bigger groups pay it less often. By the physical WAL at
 * 2,000,000 trips (`taxi wal`) ingest's CPU for the four phases' backlogs
 * fell from 30.5 to 25.1 s. Such a group holds its cells decoded within
 * GROUP_COMMIT_BEHIND_CACHE_BYTES rather than the store's default cache
 * budget (store.h: past twice the budget, the least recently used segments
 * are written early), and the budget it had (the default, or a load's)
 * comes back when it is stored; its rows bound the rest (dictionary and
 * value deltas, a few bytes a row). Why: a backlog's rows spread over
 * every segment alike, so whatever a spill writes is touched again and
 * written again, and past STORE_MAX_DELTAS merged with what it wrote
 * (decoded and encoded anew). The store harness behind `taxi wal`'s
 * delete phase (1,000,000 trips applied to a copy of a 2,000,000-trip
 * store and committed, then deleted and committed): CPU 0.83x with 256
 * MiB, the deletes' apply 1.0 s against 1.6 s, peak RSS 267 MiB against
 * 252 MiB. A physical walsender reports the WAL's end;
 * a logical one only how far it decoded, so logical decoding's groups
 * rarely count as behind. Two rules keep a backlog's groups whole (by
 * ingest's debug log, each phase of `taxi wal` paid two extra commits of
 * 0.3 to 0.6 s each without them): a group that took a transaction while
 * far behind keeps the backlog's bounds until it is stored (pace_applying),
 * so the backlog's last 16 MiB close the group they belong to rather than
 * cut it short and make one of their own; and a follower's first group,
 * with no commit timed yet, spaces from its first transaction by the most
 * (spaced by no commit, it would be stored after one transaction).
 *
 * The tail: a backlog a little longer than one group's bounds split into
 * a group and a tail that paid a whole commit's per-segment cost for a
 * few rows (`taxi wal` at full scale, the update phase's 1,000,000 trips:
 * read in 5.0 s as one group, 6.8 to 7.3 s as two, by whether their apply
 * ended inside the 4 s). So a group begun far behind, over which what
 * the server holds unread shrank by GROUP_COMMIT_TAIL_RATIO times what is
 * left, may grow by half its bounds again (pace_commit_due,
 * pace_group_rows) and take the rest: the backlog's end comes sooner,
 * in one commit, at the price of half a bound more lag meanwhile. A server
 * writing as fast as the follower reads shrinks nothing and keeps the
 * usual bounds; the rule costs a longer backlog at most its last group's
 * extra half.
 *
 * Idle: a group is stored at once when nothing arrived over one wait of the
 * follower's loop (FOLLOW_WAIT_MS): with no transaction on its way there is
 * nothing to group with, and waiting out the spacing only added lag (a
 * backlog's last transactions waited up to GROUP_COMMIT_MAX_US, behind
 * nothing, before they were stored). */
#define GROUP_COMMIT_RATIO 4
#define GROUP_COMMIT_MAX_US 500000
#define GROUP_COMMIT_ROWS 200000
#define GROUP_COMMIT_BEHIND_BYTES ((uint64_t)16 << 20) /* one WAL segment of the default size */
#define GROUP_COMMIT_BEHIND_MAX_US 4000000
#define GROUP_COMMIT_BEHIND_ROWS 1000000
#define GROUP_COMMIT_BEHIND_CACHE_BYTES ((size_t)256 << 20)
#define GROUP_COMMIT_TAIL_RATIO 4
#define FOLLOW_WAIT_MS 5 /* how long a follower's loop waits for a frame */
/* The spacing of group commits after one whose own time was last_commit_us,
 * behind bytes of WAL. Cannot fail. */
int64_t pace_group_interval(int64_t commit_interval_us, int64_t last_commit_us, uint64_t behind);
struct pace_group;
/* The rows at which group g is stored whatever its spacing (half again
 * when a backlog's tail joins it: "The tail" above). Cannot fail. */
int64_t pace_group_rows(const struct pace_group *g, uint64_t behind);
/* When the group g may be stored (now_usec's clock): the spacing after the
 * last commit that stored transactions (after the group's first
 * transaction for a follower's first group), a backlog's while g keeps
 * one's bounds, half again when the backlog's tail joins it. Not after a
 * commit of the position alone, which an idle follower makes whenever the
 * server's WAL end moves: one made while a transaction's rows were on
 * their way held it back by four times the last group's commit (the
 * warehouse's tasks of one day deleted: 146 ms commit to applied for 30 ms
 * of ingest's CPU). Cannot fail. */
int64_t pace_commit_due(const struct pace_group *g, int64_t commit_interval_us, uint64_t behind);
/* Whether a group of whole transactions (g->dirty) is stored now: the
 * stream idle (nothing arrived over the loop's last wait), its rows at
 * pace_group_rows, or pace_commit_due passed. False for a clean group.
 * Cannot fail. */
bool pace_group_ready(const struct pace_group *g, int64_t now, int64_t commit_interval_us,
                      uint64_t behind, bool idle);

/* What a follower has applied into the store's open write since its last
 * store commit, and how that commit went: both followers keep one and
 * commit it with pace_commit. */
struct pace_group {
    struct ingest_batch batch;     /* its transactions and changes, for /metrics */
    int64_t rows;                  /* rows applied (pace_group_rows bounds them) */
    bool dirty;                    /* whole transactions applied, not yet stored */
    bool compact;                  /* the store may hold delta blocks to fold */
    uint64_t stored_lsn;           /* the position the store holds */
    int64_t first_applied;         /* when its first transaction began to be applied (0: none yet) */
    uint64_t first_behind;         /* the WAL the server held unread then */
    bool backlog;                  /* it took a transaction while far behind: it keeps
                                      a backlog's bounds until stored ("Behind" above) */
    size_t usual_cache_bytes;      /* the store's cache budget before backlog raised it */
    int64_t last_store;            /* when the last commit ended (now_usec) */
    int64_t last_batch_store;      /* when the last commit that held transactions ended */
    int64_t last_commit_us;        /* the last commit's own time, when it held transactions */
    enum store_error_kind failure; /* why the last store write failed */
};

/* A follower starts: the store it opens may hold delta blocks from before,
 * so the idle fold looks (g->compact, /metrics straum_ingest_fold_pending). */
void pace_begin(struct pace_group *g);

/* A transaction starts being applied into st, behind bytes of WAL: the
 * group's first one times it, and one far behind gives the group a
 * backlog's bounds, its cache budget with them, until it is stored. Cannot
 * fail. */
void pace_applying(struct pace_group *g, struct store *st, uint64_t behind);

/* Commits the group's changes with pos in one store commit and starts the
 * next group at pos->lsn; logs what the group held ("applied", debug).
 * 0, or -1 through pace_failed. */
int pace_commit(struct pace_group *g, struct store *st, const struct store_position *pos,
                const struct ingest_options *opt, char *err, size_t errlen);

/* A store write (commit or fold) failed and wrote nothing: puts in err what
 * happened, where the store stands and what to do, by why it failed (a
 * limit, a full filesystem), and keeps why in g->failure. Returns -1. */
int pace_failed(struct pace_group *g, const struct store_error *serr,
                const struct ingest_options *opt, char *err, size_t errlen);

/* Delta blocks are folded into their bases once nothing has arrived for
 * FOLD_IDLE_US, so that asks read bases and their rollups again (store.h).
 * Not sooner: folding re-encodes whole segments, the very cost delta blocks
 * spare a stream of small commits. A slice of FOLD_SLICE_US at a time: a
 * transaction arriving meanwhile stops the slice before the next segment
 * (receiver_waiting), and so waits for one segment's fold at most.
 * pace_fold_slice folds one slice; *more says whether blocks are left.
 * 0, or -1 with serr (a failed store commit). */
#define FOLD_IDLE_US 2000000
#define FOLD_SLICE_US 50000
struct receiver;
int pace_fold_slice(struct store *st, struct receiver *rx, bool *more,
                    struct store_error *serr);

/* The replication stream read on a thread of its own (receiver.c), so the
 * walsender goes on sending while the follower applies and commits. At
 * most max_bytes of frames (receiver_start) or RECEIVER_MAX_FRAMES frames
 * wait to be taken, then the thread stops reading until some are. The
 * queue's memory comes and goes with the frames.
 *
 * RECEIVER_MAX_BYTES, logical decoding's bound: its walsender decodes as
 * it sends, and that work has to overlap the follower's. Group commits of
 * a stream come up to GROUP_COMMIT_MAX_US apart, during which a walsender
 * sends some 40,000 single-row transactions a second on this machine,
 * three frames of 100 to 300 bytes each (60,000 frames and 18 MB in half
 * a second).
 *
 * RECEIVER_PHYSICAL_MAX_BYTES, the physical WAL's bound: its walsender
 * only reads WAL files, so a pause costs it nothing and it sends again at
 * the speed of memory (0.06 CPU s for the 230 MiB of `taxi wal`'s delete
 * phase); a queue need only bridge the thread's reads, some 60 ms of the
 * follower's work here. Frames are 128 KiB of WAL (the walsender's
 * MAX_SEND_SIZE), each a fresh allocation of libpq's, and every MiB a
 * queue first fills is a MiB the kernel zeroes: measured in SPEC.md §5
 * "Read ahead". */
#define RECEIVER_MAX_FRAMES (1 << 18)
#define RECEIVER_MAX_BYTES ((size_t)64 << 20)
#define RECEIVER_PHYSICAL_MAX_BYTES ((size_t)8 << 20)
struct receiver;

/* Starts reading c, a connection in COPY BOTH mode, on a new thread, with
 * at most max_bytes of frames read ahead (above); from then on c is used
 * only through the receiver until receiver_stop. NULL with err when the
 * thread cannot start. */
struct receiver *receiver_start(PGconn *c, size_t max_bytes, char *err, size_t errlen);

/* The next frame, waiting up to timeout_ms for one: 1 with *buf (free it
 * with PQfreemem) and *len; 0 when none came; -1 with err once the stream
 * has ended or failed and every frame before that has been taken. */
int receiver_next(struct receiver *r, int timeout_ms, char **buf, size_t *len, char *err,
                  size_t errlen);

/* Sends msg (a standby status update) and flushes it. 0, or -1 with
 * libpq's message in err. */
int receiver_send(struct receiver *r, const void *msg, size_t len, char *err, size_t errlen);

/* Whether the stream has ended or failed (frames may still wait). */
bool receiver_ended(struct receiver *r);

/* Whether frames wait to be taken by receiver_next: what the idle
 * compaction stops for. False for NULL. Cannot fail. */
bool receiver_waiting(struct receiver *r);

/* How many times the thread has waited for the server (each a poll): the
 * frames read over it say how many a wake-up brings. Cannot fail. */
uint64_t receiver_waits(struct receiver *r);

/* Stops and joins the thread, frees the frames not taken; c is the
 * caller's again. NULL is nothing. Cannot fail. */
void receiver_stop(struct receiver *r);


struct physical_start;

/* Creates the slot with an exported snapshot and loads every table into a
 * new store; the store's position becomes the slot's consistent point.
 * With --wal physical, a physical slot and a snapshot made to fit it: the
 * position stays 0 and ps says where the follower takes over. */
int snapshot_load(const struct ingest_options *opt, struct source *src, struct store *st,
                  struct physical_start *ps, char *err, size_t errlen);

/* Streams from the store's position until stopped. Returns 0 on a clean
 * stop, 1 when the connection was lost or a batch must be applied again
 * (retry), 2 when the store's filesystem is full (retry after a longer
 * wait: nothing was written, the slot still holds every change), -1 on a
 * fatal error. */
int stream_follow(const struct ingest_options *opt, struct source *src, struct store *st,
                  char *err, size_t errlen);

/* --wal physical (physical.c): how the snapshot lines up with the slot,
 * filled by snapshot_load and read by physical_follow.
 *   start      the slot's restart_lsn: a checkpoint's redo pointer, where
 *              reading begins;
 *   snapshot   the COPY's snapshot (pg_current_snapshot in it): a commit
 *              it sees is in the load and is not applied again;
 *   after      pg_current_wal_insert_lsn() read in the snapshot: every
 *              commit the snapshot sees ends before it, so the first store
 *              commit at or past it makes the store's position mean what it
 *              means in logical mode. Until then the store stays at position
 *              0 (not loaded: a restart loads again). */
struct physical_start {
    bool loaded;               /* a load just ran in this process */
    uint64_t start, after;
    uint64_t xmin, xmax;       /* FullTransactionIds */
    uint64_t *xip;
    int nxip;
};
void physical_start_free(struct physical_start *ps);

/* Follows the physical slot from its restart_lsn (ps when a load just ran)
 * until stopped; the same contract as stream_follow. */
int physical_follow(const struct ingest_options *opt, struct source *src, struct store *st,
                    struct physical_start *ps, char *err, size_t errlen);

/* Checks that the publication exists and holds every table the views read,
 * by the OIDs source_load found (upstream.c). 0 when it does; -1 with what
 * happened and what to run in err (loaded: the store holds a load, which a
 * dropped table or publication leaves behind for good, so the advice is
 * --rebuild; else the setup is unfinished); 1 when the catalog could not be
 * asked (a lost connection: retry). */
int upstream_check(PGconn *c, const struct source *src, const struct ingest_options *opt,
                   bool loaded, uint64_t stored_lsn, char *err, size_t errlen);
/* Whether the slot is past the store (its confirmed_flush_lsn after
 * stored_lsn): ingest tells the server a flush position only once the store
 * holds it, so a slot ahead of its store means the store went back (a copy
 * restored, another store): the changes in between are not in the slot any
 * more. 0 when the store is not behind (or there is no such slot), -1 with
 * what to run in err, 1 when the catalog could not be asked. */
int upstream_check_slot(PGconn *c, const struct ingest_options *opt, uint64_t stored_lsn,
                        char *err, size_t errlen);
/* The message for a publication found missing by the walsender; -1. */
int upstream_publication_gone(const struct ingest_options *opt, uint64_t stored_lsn, char *err,
                              size_t errlen);

extern volatile int ingest_stop_requested;

#endif
