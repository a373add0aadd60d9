/* engine.c -- the engine's entry points: opening the store, the compiled-ask
 * cache, and one ask from text to JSON.
 *
 * Asks are compiled once per distinct text and kept (up to a bound) in a
 * hash table under a mutex; a compiled ask is immutable, so threads share it.
 * Each ask takes its own read snapshot: it never blocks ingest and sees a
 * whole number of source transactions. */
#include "base/error.h"
#include "engine/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

enum { MAX_CACHED_ASKS = 4096 };

int ask_fail(struct ask_error *err, int status, const char *code, const char *fmt, ...)
{
    if (err) {
        err->status = status;
        snprintf(err->code, sizeof err->code, "%s", code);
        va_list ap;
        va_start(ap, fmt);
        error_vfmt(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->line = err->column = 0;
    }
    return -1;
}

struct engine *engine_open(const char *store_dir, const struct engine_limits *limits,
                           struct store_error *err)
{
    struct engine *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err->message, sizeof err->message, "out of memory");
        return NULL;
    }
    if (store_open(store_dir, STORE_READ_ONLY, &e->store, err)) {
        free(e);
        return NULL;
    }
    e->limits = (struct engine_limits){.max_groups = 100000, .max_ask_bytes = 64 << 10, .max_params = 256};
    if (limits) {
        if (limits->max_groups > 0)
            e->limits.max_groups = limits->max_groups;
        e->limits.max_ask_us = limits->max_ask_us;
        if (limits->max_ask_bytes > 0)
            e->limits.max_ask_bytes = limits->max_ask_bytes;
        if (limits->max_params > 0)
            e->limits.max_params = limits->max_params;
        e->limits.cells_only = limits->cells_only;
    }
    pthread_mutex_init(&e->cache_lock, NULL);
    return e;
}

void engine_close(struct engine *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < sizeof e->buckets / sizeof e->buckets[0]; i++) {
        struct cached_ask *c = e->buckets[i];
        while (c) {
            struct cached_ask *next = c->next;
            sql_ask_free(c->ask);
            free(c->text);
            free(c);
            c = next;
        }
    }
    pthread_mutex_destroy(&e->cache_lock);
    store_close(e->store);
    free(e);
}

struct store *engine_store(struct engine *e) { return e->store; }

/* The compiled ask for a text: cached, or compiled now. *owned tells the
 * caller to free it (the cache was full). */
static const struct sql_ask *compile(struct engine *e, const char *text, bool *owned,
                                     struct ask_error *err)
{
    size_t len = strlen(text);
    size_t b = XXH3_64bits(text, len) % (sizeof e->buckets / sizeof e->buckets[0]);
    *owned = false;
    pthread_mutex_lock(&e->cache_lock);
    for (struct cached_ask *c = e->buckets[b]; c; c = c->next)
        if (strcmp(c->text, text) == 0) {
            pthread_mutex_unlock(&e->cache_lock);
            return c->ask;
        }
    pthread_mutex_unlock(&e->cache_lock);
    struct sql_error serr;
    struct sql_ask *ask = sql_parse_ask(text, store_views(e->store), &serr);
    if (!ask) {
        int status = serr.code == SQL_ERR_UNKNOWN_VIEW ? 404 : 400;
        ask_fail(err, status, sql_error_code_name(serr.code), "%s", serr.message);
        err->line = serr.line;
        err->column = serr.column;
        return NULL;
    }
    struct cached_ask *c = calloc(1, sizeof *c);
    pthread_mutex_lock(&e->cache_lock);
    if (c && e->ncached < MAX_CACHED_ASKS && (c->text = strdup(text))) {
        c->ask = ask;
        c->next = e->buckets[b];
        e->buckets[b] = c;
        e->ncached++;
        c = NULL;
    } else {
        *owned = true;
    }
    pthread_mutex_unlock(&e->cache_lock);
    free(c);
    return ask;
}

static int view_index(const struct store *s, const struct sql_view *v)
{
    const struct sql_view_list *views = store_views(s);
    return (int)(v - views->views);
}

int engine_ask(struct engine *e, const struct ask_request *req, struct buf *out,
               struct ask_error *err)
{
    if (!req->ask)
        return ask_fail(err, 400, "bad_request", "the body has no \"ask\"");
    if (strlen(req->ask) > e->limits.max_ask_bytes)
        return ask_fail(err, 413, "ask_too_long", "the ask is longer than %zu bytes",
                        e->limits.max_ask_bytes);
    if (req->nparams > e->limits.max_params)
        return ask_fail(err, 422, "too_many_parameters", "more than %d parameters",
                        e->limits.max_params);
    bool owned;
    const struct sql_ask *ask = compile(e, req->ask, &owned, err);
    if (!ask)
        return -1;
    struct exec x = {.e = e, .ask = ask, .v = ask->view};
    x.view = view_index(e->store, ask->view);
    x.types = store_fact_types(e->store, x.view);
    struct store_error serr;
    int rc = store_read_begin(e->store, &x.r, &serr)
                 ? ask_fail(err, 503, "store_unavailable", "%s", serr.message)
                 : 0;
    if (rc == 0) {
        x.snapshot = store_read_snapshot_id(x.r);
        rc = bind_ask(x.r, ask, x.view, x.types, req, &x.b, err);
    }
    if (rc == 0)
        rc = exec_scan(&x, err);
    if (rc == 0)
        rc = answer_write(&x, out, err);
    exec_free(&x);
    store_read_end(x.r);
    if (owned)
        sql_ask_free((struct sql_ask *)ask);
    return rc;
}

int engine_position(struct engine *e, struct store_position *pos, struct ask_error *err)
{
    struct store_read *r;
    struct store_catalog cat;
    struct store_error serr;
    if (store_read_begin(e->store, &r, &serr))
        return ask_fail(err, 503, "store_unavailable", "%s", serr.message);
    int rc = store_read_catalog(r, &cat, &serr) ? ask_fail(err, 500, "corrupt_store", "%s", serr.message)
                                                : 0;
    store_read_end(r);
    if (rc == 0)
        *pos = cat.position;
    return rc;
}
