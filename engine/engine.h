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

struct ask_request {
    const char *ask;
    const struct ask_value *params;
    int nparams;
    const char *time_zone;  /* NULL or "" means UTC */
};

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
 * texts (an ask's values travel as parameters, so its text repeats); 64 MiB
 * bounds what distinct texts, each up to 64 KiB and compiled to a few times
 * that, can hold. Past either, the least recently asked go. */
#define ENGINE_DEFAULT_CACHED_ASKS 4096
#define ENGINE_DEFAULT_CACHED_BYTES ((size_t)64 << 20)

struct engine_limits {
    int max_groups;        /* answer rows before grouping stops: 422; default 100000 */
    int64_t max_ask_us;    /* time budget per ask: 503 beyond it; 0 = none */
    size_t max_ask_bytes;  /* longest ask text; default 64 KiB */
    int max_params;        /* default 256 */
    int max_cached_asks;   /* compiled asks kept; default ENGINE_DEFAULT_CACHED_ASKS */
    size_t max_cached_bytes; /* their bytes (texts and compiled asks);
                                default ENGINE_DEFAULT_CACHED_BYTES */
    bool cells_only;       /* never fold rollups: the reference the tests
                              compare rollup answers with */
};

struct engine;

/* Opens the store read-only. */
struct engine *engine_open(const char *store_dir, const struct engine_limits *limits,
                           struct store_error *err);
void engine_close(struct engine *e);
struct store *engine_store(struct engine *e);

/* Answers one ask: {"columns": [...], "rows": [[...], ...]} into out.
 * Returns 0, or -1 with err. */
int engine_ask(struct engine *e, const struct ask_request *req, struct buf *out,
               struct ask_error *err);

/* The compiled-ask cache now: entries and bytes (for /metrics). */
void engine_cache_stats(struct engine *e, int *entries, size_t *bytes);

/* {"views": [...]} with widths, keys, dim columns, measures, cell counts. */
int engine_views(struct engine *e, struct buf *out, struct ask_error *err);

/* The store's position and lag, for /readyz and /metrics. */
int engine_position(struct engine *e, struct store_position *pos, struct ask_error *err);

#endif
