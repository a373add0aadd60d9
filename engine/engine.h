/* engine.h -- answering asks from the store, without HTTP: compile (cached
 * by text), bind parameters, plan the range over the widths, scan segments,
 * roll measures up exactly and write the answer as JSON.
 *
 * The HTTP layer (serve/http.c) owns sockets, limits and status lines; the
 * engine owns meaning. Thread-safe: many threads may call engine_ask at once
 * (each call takes its own read snapshot). */
#ifndef STRAUM_ENGINE_H
#define STRAUM_ENGINE_H

#include "base/buf.h"
#include "store/store.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A parameter value as it came in JSON. */
enum ask_value_kind { ASK_NULL, ASK_BOOL, ASK_NUMBER, ASK_STRING };

struct ask_value {
    enum ask_value_kind kind;
    bool boolean;
    const char *text;  /* NUMBER: the number as written; STRING: the string */
    size_t len;
};

/* What an ask read, for tests and diagnostics. */
struct ask_stats {
    uint64_t cells;           /* cells and rollup rows folded into groups */
    uint32_t pieces;          /* (width, sub-range) pieces the range was covered by */
    uint32_t pieces_taken_away; /* of them, read to be taken away: a span read
                                   whole less what lies outside the range */
    uint32_t segments;        /* segments the pieces' walks read (a walk skips
                                 those between its pieces unread) */
    uint32_t groups_settled;  /* groups finished as the scan went (SPEC.md
                                 §6.1 "Settling") */
    uint32_t map_emptied;     /* times the group map forgot settled groups */
    uint32_t where_codes;     /* codes a condition under OR or NOT on one
                                 key was walked for (exec.where_key), each
                                 once however many cells hold it */
    uint32_t lists_held_whole; /* blocks' decoded value-count lists whose long
                                  cells groups held in place, not copied
                                  (SPEC.md §6.1 "Value counts") */
    uint32_t blocks_subtracted; /* blocks whose key's marginal rows were read
                                   as the totals less the rows failing the
                                   conditions (SPEC.md §6.1 "Scan") */
    size_t scratch_peak;      /* the most scratch the ask held at once, its
                                 answer's rows built */
};

struct ask_request {
    const char *ask;
    const struct ask_value *params;
    int nparams;
    const char *time_zone;  /* NULL or "" means UTC */
    /* NULL, or a flag another thread may set to stop the ask: read with
     * the time budget (every 1024 cells and between segments), the ask
     * then fails with code "cancelled" (503). */
    const atomic_bool *cancel;
    struct ask_stats *stats;  /* NULL, or filled once the ask has scanned */
};

struct engine_snapshot;

/* What went wrong, with the HTTP status it maps to. */
struct ask_error {
    int status;            /* 400, 404, 422, 500, 503 */
    char code[32];         /* "syntax_error", "unknown_view", "bad_parameter", ... */
    char message[400];
    int line, column;      /* 0 when not about a place in the ask */
};

/* Fills err (when not NULL: status, code, the printf-formatted message,
 * no place) and returns -1. The one way an ask_error is filled, in the
 * engine and in the HTTP layer that reads requests for it. */
int ask_fail(struct ask_error *err, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The compiled-ask cache's bounds: 4096 asks cover any dashboard's set of
 * texts (an ask's values travel as parameters, so its text repeats); 8 MiB
 * holds some 750 asks of a dashboard's size (11 KiB each compiled, most of
 * it their tokens) and keeps straum-serve's anonymous memory under 16 MiB
 * whatever texts arrive: a serve replica holds no more than that. Past
 * either, the least recently asked go (a compile costs tens of µs). */
#define ENGINE_DEFAULT_CACHED_ASKS 4096
#define ENGINE_DEFAULT_CACHED_BYTES ((size_t)8 << 20)

/* Groups an ask may hold at once: a guard on their number beside
 * --ask-memory's on their bytes, far past any answer a person reads and
 * past the hour x payment type x borough series of six months (111,922
 * rows), which streams (SPEC.md §6.1 "Scratch"). */
#define ENGINE_DEFAULT_MAX_GROUPS 1000000

/* An ask's scratch (its groups, their value counts, decoded columns, the
 * answer's rows) is bounded by 1 GiB unless --ask-memory says
 * otherwise (SPEC.md §6.1 "Scratch"). */
#define ENGINE_DEFAULT_ASK_MEMORY ((size_t)1 << 30)

struct engine_limits {
    int max_groups;        /* groups held at once: 422 past them; default
                              ENGINE_DEFAULT_MAX_GROUPS */
    int64_t max_ask_us;    /* time budget per ask: 503 beyond it; 0 = none */
    size_t max_ask_bytes;  /* longest ask text; default 64 KiB */
    int max_params;        /* default 256 */
    int max_cached_asks;   /* compiled asks kept; default ENGINE_DEFAULT_CACHED_ASKS */
    size_t max_cached_bytes; /* their bytes (texts and compiled asks);
                                default ENGINE_DEFAULT_CACHED_BYTES */
    size_t ask_memory;     /* scratch bytes per ask: 422 ask_memory past
                              them; default ENGINE_DEFAULT_ASK_MEMORY */
    bool cells_only;       /* never fold rollups: the reference the tests
                              compare rollup answers with */
};

struct engine;

/* Opens the store read-only. */
struct engine *engine_open(const char *store_dir, const struct engine_limits *limits,
                           struct store_error *err);
void engine_close(struct engine *e);
struct store *engine_store(struct engine *e);

/* A time as PostgreSQL's text output writes it with DateStyle ISO:
 * "2024-01-17 00:00:00-05", fractions and offset minutes only when not
 * zero. local_us is the wall-clock time; off seconds east of UTC, or
 * INT32_MIN for a timestamp without time zone. Copies what fits into buf
 * as snprintf would and returns the full length; cannot fail. */
size_t engine_format_pg_time(int64_t local_us, int32_t off, char *buf, size_t len);

/* Answers one ask: {"columns": [...], "rows": [[...], ...]} into out.
 * Returns 0, or -1 with err. */
int engine_ask(struct engine *e, const struct ask_request *req, struct buf *out,
               struct ask_error *err);

/* The compiled-ask cache now: entries and bytes (for /metrics). */
void engine_cache_stats(struct engine *e, int *entries, size_t *bytes);

/* ---- Typed answers ------------------------------------------------------ */

/* An answer's columns carry PostgreSQL's type of what the same SELECT over
 * the raw tables would answer (pg_type OIDs): buckets timestamptz, counts
 * int8, sums of int2/int4 int8, other exact sums, averages numeric, float
 * sums and averages and percentile_cont float8; keys, min, max and
 * percentile_disc the key's own type (dim columns text). */
enum {
    ANSWER_OID_BOOL = 16,
    ANSWER_OID_INT8 = 20,
    ANSWER_OID_INT2 = 21,
    ANSWER_OID_INT4 = 23,
    ANSWER_OID_TEXT = 25,
    ANSWER_OID_FLOAT8 = 701,
    ANSWER_OID_VARCHAR = 1043,
    ANSWER_OID_DATE = 1082,
    ANSWER_OID_TIMESTAMP = 1114,
    ANSWER_OID_TIMESTAMPTZ = 1184,
    ANSWER_OID_NUMERIC = 1700,
};

struct answer_column {
    const char *name;
    uint32_t type_oid;
};

enum answer_kind {
    ANSWER_NULL,
    ANSWER_INT,      /* i */
    ANSWER_BOOL,     /* i: 0 or 1 */
    ANSWER_DECIMAL,  /* text: exact digits, "-12.50" */
    ANSWER_DOUBLE,   /* d */
    ANSWER_TEXT,     /* text, len: bytes, not NUL-terminated */
    ANSWER_TIME,     /* i: µs since 1970-01-01 UTC; utc_offset_s */
    ANSWER_DATE,     /* i: days since 1970-01-01 */
};

/* One value of a row. Valid only during the row callback. */
struct answer_value {
    enum answer_kind kind;
    int64_t i;
    double d;
    const char *text;
    size_t len;
    int32_t utc_offset_s;  /* TIME: the ask's time zone's offset at i */
    bool json_number;      /* DECIMAL: an integer sum, a JSON number (not a
                              string) in HTTP answers */
};

/* Where an answer goes, row by row. Each callback returns 0 to go on, or
 * -1 with err set to stop the ask (engine_ask_rows then returns -1 with
 * that err). columns comes once, before any row. */
struct answer_sink {
    int (*columns)(void *ctx, const struct answer_column *cols, int ncols,
                   struct ask_error *err);
    int (*row)(void *ctx, const struct answer_value *vals, int ncols, struct ask_error *err);
    void *ctx;
};

/* Answers one ask into sink: the columns, then the rows in the answer's
 * order (ORDER BY, OFFSET and LIMIT applied), one call each. Rows are
 * built in memory for ordering (bounded by max_groups) but converted and
 * handed over one at a time. snapshot NULL: the ask takes its own read
 * snapshot; else it reads that one (engine_snapshot_begin). Returns 0, or
 * -1 with err. */
int engine_ask_rows(struct engine *e, const struct ask_request *req,
                    struct engine_snapshot *snapshot, const struct answer_sink *sink,
                    struct ask_error *err);

/* An answer handed over a part at a time (a streamed HTTP answer, a
 * PostgreSQL portal): engine_answer_open compiles, binds, scans and
 * orders the rows; each later call hands over some of them. It holds its
 * read snapshot (snapshot NULL: its own) and its scratch until
 * engine_answer_close, and is used by one thread at a time, though not
 * always the same one. Every call that fails leaves it to be closed. */
struct engine_answer;
/* Returns 0 with *out, or -1 with err (nothing to close). */
int engine_answer_open(struct engine *e, const struct ask_request *req,
                       struct engine_snapshot *snapshot, struct engine_answer **out,
                       struct ask_error *err);
/* The columns (first call), then up to max_rows rows into sink; *done
 * once the last row is out. Returns 0, or -1 with err. */
int engine_answer_rows(struct engine_answer *a, const struct answer_sink *sink, int64_t max_rows,
                       bool *done, struct ask_error *err);
/* Appends the JSON answer's next bytes to out (engine_ask's text, cut
 * anywhere): rows until out holds want bytes or more, then, after the
 * last row, the answer's end; *done once that is written. Returns 0, or
 * -1 with err (out of memory, a value that failed to decode). */
int engine_answer_json(struct engine_answer *a, struct buf *out, size_t want, bool *done,
                       struct ask_error *err);
/* Frees the answer, ends its snapshot when it is its own, and gives heavy
 * scratch back to the system (base/scratch.h). NULL is a no-op. */
void engine_answer_close(struct engine_answer *a);

/* What an ask would answer, without reading the store: its columns
 * (*cols malloc'd with their names: one free) and, per
 * parameter $1..$n, the type it is bound as (timestamptz for bucket edges,
 * the key's type, int8 for LIMIT/OFFSET; *param_oids malloc'd). Returns 0,
 * or -1 with err (a syntax error, an unknown view). */
int engine_describe(struct engine *e, const char *ask, struct answer_column **cols, int *ncols,
                    uint32_t **param_oids, int *nparams, struct ask_error *err);

/* A read snapshot held across asks: every ask given it (engine_ask_rows)
 * sees the same store state, as a REPEATABLE READ transaction.
 * It holds an LMDB read transaction: ingest's freed pages are not reused
 * while it lives, so hold it for the span of a client's transaction only.
 * Used by one thread at a time. Returns 0, or -1 with err (503). */
int engine_snapshot_begin(struct engine *e, struct engine_snapshot **out, struct ask_error *err);
void engine_snapshot_end(struct engine_snapshot *s);

/* A view as a relation, for the PostgreSQL catalog (serve/pg_catalog.c):
 * its name and its columns in SELECT order, each with the type an ask
 * answers it as (answer_column's OIDs: the bucket timestamptz, keys their
 * own type, dim columns text, measures their aggregate's type). */
struct engine_relation {
    const char *name;
    const struct answer_column *cols;
    int ncols;
    const char *definition; /* its SELECT as the views file writes it */
};
/* The store's views as relations, in the views file's order: *out is one
 * malloc'd block (one free), names included. Returns 0, or -1 with err
 * (out of memory). */
int engine_relations(struct engine *e, struct engine_relation **out, int *n,
                     struct ask_error *err);

/* {"views": [...]} with widths, keys, dim columns, measures, cell counts. */
int engine_views(struct engine *e, struct buf *out, struct ask_error *err);

/* The store's position and lag, for /readyz and /metrics. */
int engine_position(struct engine *e, struct store_position *pos, struct ask_error *err);

#endif
