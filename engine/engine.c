/* engine.c -- the engine's entry points: opening the store, the compiled-ask
 * cache, and one ask from text to JSON.
 *
 * Asks are compiled once per distinct text and kept in a hash table under a
 * mutex, bounded in entries and bytes, the least recently asked evicted
 * first; a compiled ask is immutable, so threads share it, each holding a
 * reference while it answers, so an eviction never frees one in use.
 * Each ask takes its own read snapshot: it never blocks ingest and sees a
 * whole number of source transactions. */
#include "base/error.h"
#include "base/hash.h"
#include "engine/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void cached_free(struct cached_ask *c);

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
    e->limits = (struct engine_limits){.max_groups = ENGINE_DEFAULT_MAX_GROUPS, .max_ask_bytes = 64 << 10, .max_params = 256,
                                       .ask_memory = ENGINE_DEFAULT_ASK_MEMORY,
                                       .max_cached_asks = ENGINE_DEFAULT_CACHED_ASKS,
                                       .max_cached_bytes = ENGINE_DEFAULT_CACHED_BYTES};
    if (limits) {
        if (limits->max_groups > 0)
            e->limits.max_groups = limits->max_groups;
        e->limits.max_ask_us = limits->max_ask_us;
        if (limits->max_ask_bytes > 0)
            e->limits.max_ask_bytes = limits->max_ask_bytes;
        if (limits->max_params > 0)
            e->limits.max_params = limits->max_params;
        e->limits.cells_only = limits->cells_only;
        if (limits->max_cached_asks > 0)
            e->limits.max_cached_asks = limits->max_cached_asks;
        if (limits->max_cached_bytes > 0)
            e->limits.max_cached_bytes = limits->max_cached_bytes;
        if (limits->ask_memory > 0)
            e->limits.ask_memory = limits->ask_memory;
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
            cached_free(c);
            c = next;
        }
    }
    pthread_mutex_destroy(&e->cache_lock);
    store_close(e->store);
    free(e);
}

struct store *engine_store(struct engine *e) { return e->store; }

/* Takes c off the recency list and out of its bucket (under cache_lock);
 * its memory goes when the last ask using it lets go. */
static void cache_unlink(struct engine *e, struct cached_ask *c, size_t bucket)
{
    struct cached_ask **p = &e->buckets[bucket];
    while (*p != c)
        p = &(*p)->next;
    *p = c->next;
    if (c->newer)
        c->newer->older = c->older;
    else
        e->newest = c->older;
    if (c->older)
        c->older->newer = c->newer;
    else
        e->oldest = c->newer;
    c->cached = false;
    e->ncached--;
    e->cached_bytes -= c->bytes;
}

static void cached_free(struct cached_ask *c)
{
    sql_ask_free(c->ask);
    free(c->text);
    free(c);
}

static size_t bucket_of(const struct engine *e, const char *text, size_t len)
{
    return hash_bytes(text, len) % (sizeof e->buckets / sizeof e->buckets[0]);
}

/* Lets go of an ask compile() gave (under no lock). */
static void release(struct engine *e, struct cached_ask *c)
{
    pthread_mutex_lock(&e->cache_lock);
    bool last = --c->refs == 0 && !c->cached;
    pthread_mutex_unlock(&e->cache_lock);
    if (last)
        cached_free(c);
}

/* The compiled ask for a text, held for the caller until release(): from
 * the cache (it becomes the newest), or compiled now and cached, evicting
 * the least recently asked past either bound. NULL with err when the text
 * does not compile, or out of memory. */
static struct cached_ask *compile(struct engine *e, const char *text, struct ask_error *err)
{
    size_t len = strlen(text);
    size_t b = bucket_of(e, text, len);
    pthread_mutex_lock(&e->cache_lock);
    for (struct cached_ask *c = e->buckets[b]; c; c = c->next)
        if (strcmp(c->text, text) == 0) {
            c->refs++;
            if (e->newest != c) { /* to the front of the recency list */
                c->newer->older = c->older;
                if (c->older)
                    c->older->newer = c->newer;
                else
                    e->oldest = c->newer;
                c->older = e->newest;
                c->newer = NULL;
                e->newest->newer = c;
                e->newest = c;
            }
            pthread_mutex_unlock(&e->cache_lock);
            return c;
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
    if (!c || !(c->text = strdup(text))) {
        free(c);
        sql_ask_free(ask);
        ask_fail(err, 500, "internal", "out of memory");
        return NULL;
    }
    c->ask = ask;
    c->bytes = sizeof *c + len + 1 + sql_ask_bytes(ask);
    c->refs = 1;
    struct cached_ask *evicted = NULL; /* chained by next, freed outside the lock */
    pthread_mutex_lock(&e->cache_lock);
    /* Another thread may have cached the same text meanwhile: both work,
     * and the second copy is simply not cached. */
    bool dup = false;
    for (struct cached_ask *o = e->buckets[b]; o && !dup; o = o->next)
        dup = strcmp(o->text, text) == 0;
    if (!dup && c->bytes <= e->limits.max_cached_bytes) {
        while (e->oldest && (e->ncached + 1 > e->limits.max_cached_asks ||
                             e->cached_bytes + c->bytes > e->limits.max_cached_bytes)) {
            struct cached_ask *old = e->oldest;
            cache_unlink(e, old, bucket_of(e, old->text, strlen(old->text)));
            if (old->refs == 0) {
                old->next = evicted;
                evicted = old;
            }
        }
        c->next = e->buckets[b];
        e->buckets[b] = c;
        c->older = e->newest;
        if (e->newest)
            e->newest->newer = c;
        else
            e->oldest = c;
        e->newest = c;
        c->cached = true;
        e->ncached++;
        e->cached_bytes += c->bytes;
    }
    pthread_mutex_unlock(&e->cache_lock);
    while (evicted) {
        struct cached_ask *next = evicted->next;
        cached_free(evicted);
        evicted = next;
    }
    return c;
}

void engine_cache_stats(struct engine *e, int *entries, size_t *bytes)
{
    pthread_mutex_lock(&e->cache_lock);
    *entries = e->ncached;
    *bytes = e->cached_bytes;
    pthread_mutex_unlock(&e->cache_lock);
}

static int view_index(const struct store *s, const struct sql_view *v)
{
    const struct sql_view_list *views = store_views(s);
    return (int)(v - views->views);
}

/* Checks the request's sizes and compiles its ask (see compile). */
static struct cached_ask *checked_compile(struct engine *e, const char *text, int nparams,
                                          struct ask_error *err)
{
    if (!text)
        return ask_fail(err, 400, "bad_request", "the body has no \"ask\""), NULL;
    if (strlen(text) > e->limits.max_ask_bytes)
        return ask_fail(err, 413, "ask_too_long", "the ask is longer than %zu bytes",
                        e->limits.max_ask_bytes),
               NULL;
    if (nparams > e->limits.max_params)
        return ask_fail(err, 422, "too_many_parameters", "more than %d parameters",
                        e->limits.max_params),
               NULL;
    return compile(e, text, err);
}

struct engine_snapshot {
    struct store_read *r;
};

int engine_snapshot_begin(struct engine *e, struct engine_snapshot **out, struct ask_error *err)
{
    struct engine_snapshot *s = calloc(1, sizeof *s);
    struct store_error serr;
    if (!s)
        return ask_fail(err, 500, "internal", "out of memory");
    if (store_read_begin(e->store, &s->r, &serr)) {
        free(s);
        return ask_fail(err, 503, "store_unavailable", "%s", serr.message);
    }
    *out = s;
    return 0;
}

void engine_snapshot_end(struct engine_snapshot *s)
{
    if (!s)
        return;
    store_read_end(s->r);
    free(s);
}

/* ---- Answers, whole or a part at a time ---------------------------------------- */

struct engine_answer {
    struct engine *e;
    struct cached_ask *held;
    struct exec x;
    bool own_read;             /* x.r is the answer's own read snapshot */
    bool done;                 /* the last row is out */
    struct scratch_budget budget; /* the ask's scratch (--ask-memory) */
    struct answer_json json;   /* engine_answer_json's writer */
    bool json_ended;           /* its closing bytes are written */
};

/* An ask that failed for want of scratch under its budget fails with the
 * limit's name, whatever out-of-memory error the path that hit it gave. */
static int scratch_refusal(const struct engine_answer *a, struct ask_error *err)
{
    size_t limit = a->budget.limit;
    const char *unit = "bytes";
    if (limit % ((size_t)1 << 20) == 0)
        limit >>= 20, unit = "MiB";
    else if (limit % ((size_t)1 << 10) == 0)
        limit >>= 10, unit = "KiB";
    return ask_fail(err, 422, "ask_memory",
                    "the ask needs more than %zu %s of scratch memory (--ask-memory); "
                    "narrow the range or group by fewer keys",
                    limit, unit);
}

int engine_answer_open(struct engine *e, const struct ask_request *req,
                       struct engine_snapshot *snapshot, struct engine_answer **out,
                       struct ask_error *err)
{
    struct engine_answer *a = calloc(1, sizeof *a);
    if (!a)
        return ask_fail(err, 500, "internal", "out of memory");
    a->e = e;
    a->budget.limit = e->limits.ask_memory;
    struct scratch_budget *outer = scratch_enter(&a->budget);
    int rc = (a->held = checked_compile(e, req->ask, req->nparams, err)) ? 0 : -1;
    if (rc == 0) {
        const struct sql_ask *ask = a->held->ask;
        a->x = (struct exec){.e = e, .ask = ask, .v = ask->view, .cancel = req->cancel};
        a->x.view = view_index(e->store, ask->view);
        a->x.types = store_fact_types(e->store, a->x.view);
        struct store_error serr;
        if (snapshot)
            a->x.r = snapshot->r;
        else if (store_read_begin(e->store, &a->x.r, &serr))
            rc = ask_fail(err, 503, "store_unavailable", "%s", serr.message);
        else
            a->own_read = true;
    }
    if (rc == 0) {
        a->x.snapshot = store_read_snapshot_id(a->x.r);
        rc = bind_ask(a->x.r, a->held->ask, a->x.view, a->x.types, req, &a->x.b, err);
    }
    if (rc == 0)
        rc = exec_scan(&a->x, err);
    if (rc == 0)
        rc = answer_prepare(&a->x, err);
    if (rc == 0 && req->stats)
        *req->stats = (struct ask_stats){.cells = a->x.cells_read,
                                         .pieces = a->x.npieces,
                                         .pieces_taken_away = a->x.npieces_minus,
                                         .segments = a->x.segments_read,
                                         .groups_settled = a->x.nsettled,
                                         .map_emptied = a->x.map_forgot,
                                         .where_codes = a->x.where_verdicts.count,
                                         .lists_held_whole = a->x.lists_held_whole,
                                         .blocks_subtracted = a->x.blocks_subtracted,
                                         .scratch_peak = a->budget.peak};
    if (rc && a->budget.exceeded)
        scratch_refusal(a, err);
    scratch_leave(outer);
    if (rc) {
        engine_answer_close(a);
        return -1;
    }
    *out = a;
    return 0;
}

int engine_answer_rows(struct engine_answer *a, const struct answer_sink *sink, int64_t max_rows,
                       bool *done, struct ask_error *err)
{
    struct scratch_budget *outer = scratch_enter(&a->budget);
    int rc = answer_next(&a->x, sink, max_rows, &a->done, err);
    if (rc && a->budget.exceeded)
        scratch_refusal(a, err);
    scratch_leave(outer);
    *done = a->done;
    return rc;
}

/* Rows handed to the JSON writer per answer_next: enough that the call's
 * cost is nothing beside the rows', few enough that a part overshoots
 * the bytes asked for by a few KiB at most. */
enum { JSON_ROWS_PER_STEP = 32 };

int engine_answer_json(struct engine_answer *a, struct buf *out, size_t want, bool *done,
                       struct ask_error *err)
{
    struct answer_sink sink = answer_json_sink;
    a->json.out = out;
    sink.ctx = &a->json;
    int rc = 0;
    while (rc == 0 && !a->done && out->len < want)
        rc = engine_answer_rows(a, &sink, JSON_ROWS_PER_STEP, done, err);
    if (rc == 0 && a->done && !a->json_ended) {
        answer_json_end(&a->x, out); /* a few bytes past want at most */
        a->json_ended = true;
    }
    *done = a->json_ended;
    if (rc == 0 && out->failed)
        rc = ask_fail(err, 500, "internal", "out of memory writing the answer");
    return rc;
}

void engine_answer_close(struct engine_answer *a)
{
    if (!a)
        return;
    struct scratch_budget *outer = scratch_enter(&a->budget);
    answer_release(&a->x);
    exec_free(&a->x);
    if (a->own_read)
        store_read_end(a->x.r);
    if (a->held)
        release(a->e, a->held);
    scratch_leave(outer);
    scratch_give_back(&a->budget);
    free(a);
}

int engine_ask_rows(struct engine *e, const struct ask_request *req,
                    struct engine_snapshot *snapshot, const struct answer_sink *sink,
                    struct ask_error *err)
{
    struct engine_answer *a;
    bool done;
    if (engine_answer_open(e, req, snapshot, &a, err))
        return -1;
    int rc = engine_answer_rows(a, sink, INT64_MAX, &done, err);
    engine_answer_close(a);
    return rc;
}

int engine_ask(struct engine *e, const struct ask_request *req, struct buf *out,
               struct ask_error *err)
{
    struct engine_answer *a;
    bool done;
    if (engine_answer_open(e, req, NULL, &a, err))
        return -1;
    int rc = engine_answer_json(a, out, SIZE_MAX, &done, err);
    engine_answer_close(a);
    return rc;
}

int engine_describe(struct engine *e, const char *text, struct answer_column **cols, int *ncols,
                    uint32_t **param_oids, int *nparams, struct ask_error *err)
{
    struct cached_ask *held = checked_compile(e, text, 0, err);
    if (!held)
        return -1;
    const struct sql_ask *ask = held->ask;
    int view = view_index(e->store, ask->view);
    const struct store_column_type *types = store_fact_types(e->store, view);
    /* One block: the columns, then their names, so that one free frees
     * both and the names outlive the ask. */
    size_t names = 0;
    for (int c = 0; c < ask->ncolumns; c++)
        names += strlen(ask->columns[c].name) + 1;
    *cols = calloc(1, sizeof **cols * ((size_t)ask->ncolumns + 1) + names);
    *param_oids = calloc((size_t)ask->nparams + 1, sizeof **param_oids);
    int rc = *cols && *param_oids ? 0 : ask_fail(err, 500, "internal", "out of memory");
    char *name = rc ? NULL : (char *)(*cols + ask->ncolumns + 1);
    for (int c = 0; rc == 0 && c < ask->ncolumns; c++) {
        size_t n = strlen(ask->columns[c].name) + 1;
        memcpy(name, ask->columns[c].name, n);
        (*cols)[c] = (struct answer_column){name, answer_column_oid(ask, types, c)};
        name += n;
    }
    for (int p = 0; rc == 0 && p < ask->nparams; p++) {
        const struct sql_param *sp = &ask->params[p];
        uint32_t oid = ANSWER_OID_INT8;
        if (sp->kind == SQL_PARAM_TIMESTAMP)
            oid = ANSWER_OID_TIMESTAMPTZ;
        else if (sp->kind == SQL_PARAM_KEY) {
            const struct sql_view_column *vc = &ask->view->columns[sp->view_column];
            oid = ANSWER_OID_TEXT;
            if (vc->kind == SQL_COLUMN_FACT_KEY) {
                const struct store_column_type *t = &types[vc->fact_column];
                /* A key compares with its own type; a timestamp key
                   parameter as timestamptz, a float as float8. */
                oid = t->pg_oid == ANSWER_OID_INT2 || t->pg_oid == ANSWER_OID_INT4 ||
                              t->pg_oid == ANSWER_OID_INT8 || t->pg_oid == ANSWER_OID_BOOL ||
                              t->pg_oid == ANSWER_OID_DATE || t->pg_oid == ANSWER_OID_NUMERIC ||
                              t->pg_oid == ANSWER_OID_VARCHAR
                          ? t->pg_oid
                      : t->type == STORE_TYPE_INT      ? ANSWER_OID_INT8
                      : t->type == STORE_TYPE_NUMERIC  ? ANSWER_OID_NUMERIC
                      : t->type == STORE_TYPE_FLOAT    ? ANSWER_OID_FLOAT8
                      : t->type == STORE_TYPE_BOOL     ? ANSWER_OID_BOOL
                      : t->type == STORE_TYPE_DATE     ? ANSWER_OID_DATE
                      : t->type == STORE_TYPE_TIMESTAMP ? ANSWER_OID_TIMESTAMPTZ
                                                       : ANSWER_OID_TEXT;
            }
        }
        (*param_oids)[p] = oid;
    }
    *ncols = ask->ncolumns;
    *nparams = ask->nparams;
    release(e, held);
    if (rc) {
        free(*cols);
        free(*param_oids);
        *cols = NULL;
        *param_oids = NULL;
    }
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
