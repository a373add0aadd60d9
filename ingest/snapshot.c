/* snapshot.c -- the first start: a consistent copy of every table.
 *
 * The slot is created with an exported snapshot; in that snapshot each table
 * is read with binary COPY of only the columns views need — a large fact
 * table in time partitions of its bucket column. Rows become deltas; the
 * store commits whenever the writer holds more than LOAD_MEMORY_BUDGET
 * (committed segments leave the cache, so memory stays bounded), with
 * position 0, which marks the store as not yet loaded. The last commit writes the slot's consistent
 * point: streaming resumes exactly there, so no transaction is missed or
 * applied twice. */
#include "ingest/copy_binary.h"
#include "ingest/internal.h"
#include "ingest/metrics.h"
#include "ingest/progress.h"
#include "ingest/row_record.h"
#include "ingest/spool.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What the writer may hold decoded while loading. */
#define LOAD_MEMORY_BUDGET ((size_t)192 << 20)

static int exec_ok(PGconn *c, const char *sql, char *err, size_t errlen)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType s = PQresultStatus(r);
    PQclear(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
        return error_fmt(err, errlen, "%s: %s", sql, PQerrorMessage(c));
    return 0;
}

/* Quotes an identifier for SQL. */
static void quote_ident(char *out, size_t cap, const char *name)
{
    size_t k = 0;
    out[k++] = '"';
    for (const char *c = name; *c && k + 3 < cap; c++) {
        if (*c == '"')
            out[k++] = '"';
        out[k++] = *c;
    }
    out[k++] = '"';
    out[k] = '\0';
}

/* Every PROGRESS_ROWS rows applied, the metrics and the progress
 * (progress.h) hear of them and a load past its memory budget commits
 * (commit_if_big): counting in batches keeps the clock and the atomics out
 * of the per-row path (an atomic add per row was 2% of the apply). */
enum { PROGRESS_ROWS = LOAD_PROGRESS_BATCH };

/* A commit of the load failed. A full store ends the load: what it wrote
 * is at position 0, which the next run removes before loading again. */
static int commit_failed(const struct store_error *serr, char *err, size_t errlen)
{
    if (serr->kind != STORE_ERR_LIMIT && serr->kind != STORE_ERR_NO_SPACE)
        return error_fmt(err, errlen, "%s", serr->message);
    return error_fmt(err, errlen, "%s. The initial load stopped; the next run removes what it wrote "
                             "and loads again from the start: %s, then run straum-ingest again",
                serr->message,
                serr->kind == STORE_ERR_NO_SPACE ? "make room for data.mdb"
                                                 : "raise --max-store-size (or "
                                                   "STRAUM_STORE_MAX_MAP_MB)");
}

/* Commits what is pending (position 0: still loading) when the writer holds
 * more than the budget, so that the commit's eviction bounds memory. The
 * segments still being filled stay pending (store_commit_cold). */
static int commit_if_big(struct store *st, char *err, size_t errlen)
{
    if (store_cached_bytes(st) < LOAD_MEMORY_BUDGET)
        return 0;
    struct store_error serr;
    if (ingest_store_commit_cold(st, &(struct store_position){0}, &serr))
        return commit_failed(&serr, err, errlen);
    return 0;
}

/* What one tuple of a COPY is handed to. */
typedef int (*tuple_fn)(void *ctx, const struct copy_tuple *tuple, char *err, size_t errlen);

/* Stops a COPY that is still sending, after an error of ours: until it
 * ends, PQgetResult hands out the COPY's own state forever. */
static void abandon_copy(PGconn *c)
{
    PGcancel *cancel = PQgetCancel(c);
    char why[256];
    if (cancel) {
        PQcancel(cancel, why, sizeof why);
        PQfreeCancel(cancel);
    }
    char *buf;
    while (PQgetCopyData(c, &buf, 0) > 0)
        PQfreemem(buf);
}

/* One COPY of a table's needed columns (rows matching where, "" for all),
 * each tuple handed to fn as it completes. */
static int copy_table(PGconn *c, const struct source_table *t, const char *where, tuple_fn fn,
                      void *ctx, char *err, size_t errlen)
{
    size_t cap = 64 + strlen(t->qualified) + strlen(where);
    for (int i = 0; i < t->ncols; i++)
        cap += 2 * strlen(t->cols[i].name) + 4;
    char *sql = malloc(cap + 64);
    if (!sql)
        return error_fmt(err, errlen, "out of memory");
    size_t k = (size_t)sprintf(sql, "COPY (SELECT ");
    for (int i = 0; i < t->ncols; i++) {
        char q[300];
        quote_ident(q, sizeof q, t->cols[i].name);
        k += (size_t)sprintf(sql + k, "%s%s", i ? ", " : "", q);
    }
    sprintf(sql + k, " FROM %s%s) TO STDOUT (FORMAT binary)", t->qualified, where);
    PGresult *r = PQexec(c, sql);
    free(sql);
    if (PQresultStatus(r) != PGRES_COPY_OUT) {
        PQclear(r);
        return error_fmt(err, errlen, "COPY of %s failed: %s", t->qualified, PQerrorMessage(c));
    }
    PQclear(r);

    struct copy_parser parser;
    copy_parser_init(&parser);
    struct copy_tuple *tuple = malloc(sizeof *tuple);
    int rc = tuple ? 0 : error_fmt(err, errlen, "out of memory");
    char *buf = NULL;
    int n = rc == 0 ? PQgetCopyData(c, &buf, 0) : 0;
    while (rc == 0 && n > 0) {
        /* Fetch one message ahead: libpq has only just copied buf's bytes,
         * with wide stores that its reader's small loads stall on until
         * they reach the cache (perf: half of a reader thread's time went
         * to the first loads of a row); a message later they are there. */
        char *next = NULL;
        int nnext = PQgetCopyData(c, &next, 0);
        /* The parser reads buf in place until next has taken every whole
         * tuple in it (and kept what is left): free it only then. */
        rc = copy_parser_lend(&parser, buf, (size_t)n) ? error_fmt(err, errlen, "out of memory") : 0;
        int got = 0;
        while (rc == 0 && (got = copy_parser_next(&parser, tuple)) == 1) {
            if (tuple->nfields != t->ncols)
                rc = error_fmt(err, errlen, "COPY of %s sent %d fields, expected %d",
                                 t->qualified, tuple->nfields, t->ncols);
            else
                rc = fn(ctx, tuple, err, errlen);
        }
        if (rc == 0 && got < 0)
            rc = error_fmt(err, errlen, "COPY of %s: %s", t->qualified, parser.error);
        PQfreemem(buf);
        buf = next;
        n = nnext;
    }
    if (n > 0) { /* stopped by an error of ours */
        PQfreemem(buf);
        abandon_copy(c);
    }
    if (rc == 0 && n == -2)
        rc = error_fmt(err, errlen, "COPY of %s failed: %s", t->qualified, PQerrorMessage(c));
    if (rc == 0 && copy_parser_finish(&parser))
        rc = error_fmt(err, errlen, "COPY of %s: %s", t->qualified, parser.error);
    while ((r = PQgetResult(c)) != NULL) {
        if (rc == 0 && PQresultStatus(r) != PGRES_COMMAND_OK)
            rc = error_fmt(err, errlen, "COPY of %s failed: %s", t->qualified, PQerrorMessage(c));
        PQclear(r);
    }
    copy_parser_free(&parser);
    free(tuple);
    return rc;
}

/* ---- Applying rows ---------------------------------------------------------------- */

struct applier {
    struct source_table *t;
    struct store *st;
    struct load_progress *prog;
    int64_t rows;               /* applied */
    struct row_value *raw;      /* t->ncols: a COPY tuple's fields */
    struct decoded_value *row;  /* t->ncols: the row decoded */
    char *err;                  /* for spool_replay, whose callback has none */
    size_t errlen;
};

static int apply_row(struct applier *a, char *err, size_t errlen)
{
    struct source_table *t = a->t;
    int rc = 0;
    if (t->nfacts)
        rc = rows_apply_decoded_fact(a->st, t, a->row, +1, err, errlen);
    if (rc == 0 && t->ndims)
        rc = rows_put_decoded_dim(a->st, t, a->row, err, errlen);
    if (rc == 0 && ++a->rows % PROGRESS_ROWS == 0) {
        imetrics_snapshot_rows(PROGRESS_ROWS);
        load_progress_add(a->prog, PROGRESS_ROWS);
        rc = commit_if_big(a->st, err, errlen);
    }
    return rc;
}

/* A COPY tuple's fields as a row of the table's columns. */
static void tuple_fields(const struct copy_tuple *tuple, struct row_value *raw, int ncols)
{
    for (int i = 0; i < ncols; i++)
        raw[i] = (struct row_value){tuple->fields[i].is_null, false, true, tuple->fields[i].data,
                                    tuple->fields[i].len};
}

/* A tuple of a table read whole, applied as it arrives. */
static int apply_tuple(void *ctx, const struct copy_tuple *tuple, char *err, size_t errlen)
{
    struct applier *a = ctx;
    tuple_fields(tuple, a->raw, a->t->ncols);
    if (rows_decode(a->t, a->raw, a->row, err, errlen))
        return -1;
    return apply_row(a, err, errlen);
}

/* A row set aside in a spool, applied. */
static int replay_record(void *ctx, const uint8_t *bytes, size_t len)
{
    struct applier *a = ctx;
    if (row_record_decode(a->t, bytes, len, a->row, a->err, a->errlen))
        return -1;
    return apply_row(a, a->err, a->errlen);
}

/* Applies the rows a partition's spools (one per reader) set aside,
 * empties them, hands the segments it is done with to be encoded beside
 * the next partitions, and commits when the writer holds enough. */
static int apply_partition(struct applier *a, struct spool *const *parts, int nparts, char *err,
                           size_t errlen)
{
    a->err = err;
    a->errlen = errlen;
    int rc = 0;
    for (int i = 0; i < nparts; i++) {
        if (rc == 0)
            rc = spool_replay(parts[i], replay_record, a, err, errlen);
        spool_free(parts[i]);
    }
    struct store_error serr;
    if (rc == 0 && store_hand_off_cold(a->st, &serr))
        rc = commit_failed(&serr, err, errlen);
    return rc ? rc : commit_if_big(a->st, err, errlen);
}

/* ---- Time partitions ----------------------------------------------------------------- */

/* The time range of a fact table's bucket column, in whole hours (seconds
 * since the epoch); false when the table is empty. */
static bool time_range(PGconn *c, const struct source_table *t, const char *col, int64_t *lo,
                       int64_t *hi)
{
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT floor(extract(epoch FROM min(%s)) / 3600)::bigint * 3600,"
             " floor(extract(epoch FROM max(%s)) / 3600)::bigint * 3600 + 3600 FROM %s",
             col, col, t->qualified);
    PGresult *r = PQexec(c, sql);
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && !PQgetisnull(r, 0, 0);
    if (ok) {
        *lo = atoll(PQgetvalue(r, 0, 0));
        *hi = atoll(PQgetvalue(r, 0, 1));
    }
    PQclear(r);
    return ok;
}

/* Whether the table's rows lie on disk in the order of its bucket column:
 * PostgreSQL's statistics say so (|correlation| at least 0.9). Then a time
 * partition is an index range scan reading the heap nearly in order;
 * otherwise each would read the whole table. */
static bool stored_in_time_order(PGconn *c, const struct source_table *t, const char *col)
{
    const char *params[3] = {t->schema, t->name, col};
    PGresult *r = PQexecParams(c,
                               "SELECT abs(correlation) >= 0.9 FROM pg_stats"
                               " WHERE schemaname = $1 AND tablename = $2 AND attname = $3",
                               3, NULL, params, NULL, NULL, 0);
    bool ordered = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
                   !PQgetisnull(r, 0, 0) && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return ordered;
}

/* A reader's means of setting a tuple aside as a row record: its own
 * buffers, for readers are threads. */
struct record_writer {
    const struct source_table *t;
    struct row_value *raw;      /* t->ncols */
    struct decoded_value *row;  /* t->ncols */
    struct row_record_buf buf;
};

static int record_writer_init(struct record_writer *w, const struct source_table *t)
{
    *w = (struct record_writer){.t = t,
                                .raw = calloc((size_t)t->ncols + 1, sizeof *w->raw),
                                .row = calloc((size_t)t->ncols + 1, sizeof *w->row)};
    return w->raw && w->row ? 0 : -1;
}

static void record_writer_free(struct record_writer *w)
{
    free(w->raw);
    free(w->row);
    row_record_buf_free(&w->buf);
}

/* Decodes a tuple into w->row. */
static int decode_tuple(struct record_writer *w, const struct copy_tuple *tuple, char *err,
                        size_t errlen)
{
    tuple_fields(tuple, w->raw, w->t->ncols);
    return rows_decode(w->t, w->raw, w->row, err, errlen);
}

/* Appends the record of the row decoded last to s. */
static int append_record(struct record_writer *w, struct spool *s, char *err, size_t errlen)
{
    size_t n = row_record_encode(w->t, w->row, &w->buf);
    return n ? spool_append(s, w->buf.bytes, n, err, errlen)
             : error_fmt(err, errlen, "out of memory");
}

/* A table read once, its rows set aside per time partition as row records:
 * spools in memory up to SPOOL_BYTES each, then in unlinked temporary
 * files. */
struct partitioner {
    struct spool *parts;        /* nparts time partitions, then the NULLs */
    int nparts, col;            /* col: the bucket column's index in a row */
    int64_t lo_usec, step_usec; /* as the bucket column's codes: since 1970 */
    struct record_writer w;
    struct load_progress *prog; /* rows read, told in batches */
    int64_t rows;
};

enum { SPOOL_BYTES = 256 << 10 };

static int spool_tuple(void *ctx, const struct copy_tuple *tuple, char *err, size_t errlen)
{
    struct partitioner *pp = ctx;
    if (decode_tuple(&pp->w, tuple, err, errlen))
        return -1;
    const struct decoded_value *time = &pp->w.row[pp->col];
    int k = pp->nparts;
    if (!time->is_null) {
        int64_t usec = time->v.code;
        /* Unsigned: the distance from lo fits whatever the time. */
        uint64_t i = usec < pp->lo_usec ? 0
                                         : ((uint64_t)usec - (uint64_t)pp->lo_usec) /
                                               (uint64_t)pp->step_usec;
        k = i >= (uint64_t)pp->nparts ? pp->nparts - 1 : (int)i;
    }
    if (++pp->rows % PROGRESS_ROWS == 0)
        load_progress_add(pp->prog, PROGRESS_ROWS);
    return append_record(&pp->w, &pp->parts[k], err, errlen);
}

/* The table's pages when a scan of it can be split by ctid ranges: a
 * plain table (a partitioned one's parent has no pages) on PostgreSQL 14
 * or later, where the split was measured. 0 otherwise. */
static int64_t splittable_pages(PGconn *c, const struct source_table *t)
{
    if (PQserverVersion(c) < 140000)
        return 0;
    const char *params[1] = {t->qualified};
    PGresult *r = PQexecParams(c,
                               "SELECT pg_relation_size($1::regclass)"
                               " / current_setting('block_size')::bigint",
                               1, NULL, params, NULL, NULL, 0);
    int64_t pages = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
                            !PQgetisnull(r, 0, 0)
                        ? atoll(PQgetvalue(r, 0, 0))
                        : 0;
    PQclear(r);
    return pages;
}

/* One reader of a table's scan: its connection, its ctid range and its
 * spools, one per time partition. */
struct scan_reader {
    PGconn *c;
    const struct source_table *t;
    char where[96];
    struct partitioner pp;
    pthread_t thread;
    int rc;
    char err[1024];
};

static void *read_scan(void *arg)
{
    struct scan_reader *r = arg;
    r->rc = copy_table(r->c, r->t, r->where, spool_tuple, &r->pp, r->err, sizeof r->err);
    load_progress_add(r->pp.prog, r->pp.rows % PROGRESS_ROWS); /* (the rest went in batches) */
    return NULL;
}

/* Reads the table in one sequential scan, split by ctid range over
 * SCAN_READERS connections in the load's snapshot when it can be (the
 * rows are the same; PostgreSQL then sends them on as many cores), sets
 * the rows aside by time partition, then applies the partitions in time
 * order, NULLs last, each from every reader's spool. */
enum { SCAN_READERS = 2 };

/* Each connection of a split scan reads the whole table, sending only its
 * range's rows: a sequential scan with a ctid filter, not a TID range scan.
 * A sequential scan of a large table reads through a small ring of
 * buffers; a TID range scan takes every page into shared_buffers, evicting
 * the database's working set, and when those buffers are dirty (a freshly
 * loaded table before its checkpoint) it writes them out on the way: the
 * benchmark's scan took 7.9 s that way against 4.8 s clean. The filter
 * costs little (both were 6.8-7.1 s for two psql COPYs, measured). */
static int prefer_sequential_scans(PGconn *c, char *err, size_t errlen)
{
    return exec_ok(c, "SET LOCAL enable_tidscan = off", err, errlen);
}

static int load_spooled(PGconn *c, PGconn *more, struct applier *a, const char *col, int64_t lo,
                        int64_t step, int nparts, char *err, size_t errlen)
{
    struct source_table *t = a->t;
    int64_t pages = more ? splittable_pages(c, t) : 0;
    int nreaders = pages > 0 ? SCAN_READERS : 1, col_at = -1;
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i].name, col) == 0)
            col_at = i;
    if (col_at < 0)
        return error_fmt(err, errlen, "%s has no column %s", t->qualified, col);
    if (nreaders > 1 &&
        (prefer_sequential_scans(c, err, errlen) || prefer_sequential_scans(more, err, errlen)))
        return -1;
    struct scan_reader r[SCAN_READERS] = {0};
    for (int i = 0; i < nreaders; i++) {
        r[i] = (struct scan_reader){.c = i ? more : c, .t = t};
        r[i].pp = (struct partitioner){.parts = calloc((size_t)nparts + 1, sizeof *r[i].pp.parts),
                                       .nparts = nparts, .col = col_at, .lo_usec = lo * 1000000,
                                       .step_usec = step * 1000000, .prog = a->prog};
        if (!r[i].pp.parts || record_writer_init(&r[i].pp.w, t)) {
            for (i++; i > 0; i--) {
                free(r[i - 1].pp.parts);
                record_writer_free(&r[i - 1].pp.w);
            }
            return error_fmt(err, errlen, "out of memory");
        }
        for (int k = 0; k <= nparts; k++)
            r[i].pp.parts[k].memory_bytes = SPOOL_BYTES / (size_t)nreaders;
        long long at = (long long)(pages * i / nreaders);
        long long to = (long long)(pages * (i + 1) / nreaders);
        if (nreaders > 1 && i + 1 < nreaders)
            snprintf(r[i].where, sizeof r[i].where,
                     " WHERE ctid >= '(%lld,0)' AND ctid < '(%lld,0)'", at, to);
        else if (nreaders > 1) /* open: pages added since count too */
            snprintf(r[i].where, sizeof r[i].where, " WHERE ctid >= '(%lld,0)'", at);
    }
    int64_t started = now_usec();
    load_progress_phase(a->prog, LOAD_READING);
    bool threaded[SCAN_READERS] = {false};
    for (int i = 1; i < nreaders; i++)
        threaded[i] = pthread_create(&r[i].thread, NULL, read_scan, &r[i]) == 0;
    read_scan(&r[0]);
    for (int i = 1; i < nreaders; i++) {
        if (threaded[i])
            pthread_join(r[i].thread, NULL);
        else
            read_scan(&r[i]); /* no thread to be had: one after the other */
    }
    int rc = 0;
    for (int i = 0; rc == 0 && i < nreaders; i++)
        if (r[i].rc)
            rc = error_fmt(err, errlen, "%s", r[i].err);
    uint64_t rows = 0, bytes = 0;
    for (int i = 0; i < nreaders; i++)
        for (int k = 0; k <= nparts; k++) {
            rows += r[i].pp.parts[k].count;
            bytes += spool_bytes(&r[i].pp.parts[k]);
        }
    if (rc == 0)
        log_info("read %s in one scan%s: %llu rows, %.0f MiB set aside by time partition, in "
                 "%.1f s", t->qualified, nreaders > 1 ? " over two connections" : "",
                 (unsigned long long)rows, (double)bytes / (1 << 20),
                 (double)(now_usec() - started) / 1e6);
    load_progress_phase(a->prog, LOAD_APPLYING);
    for (int k = 0; k <= nparts; k++) {
        struct spool *parts[SCAN_READERS] = {0};
        for (int i = 0; i < nreaders; i++)
            parts[i] = &r[i].pp.parts[k];
        if (rc == 0)
            rc = apply_partition(a, parts, nreaders, err, errlen); /* frees the spools */
        else
            for (int i = 0; i < nreaders; i++)
                spool_free(parts[i]);
    }
    for (int i = 0; i < nreaders; i++) {
        free(r[i].pp.parts);
        record_writer_free(&r[i].pp.w);
    }
    return rc;
}

/* A table stored in time order, read by index range scans of its time
 * partitions (then its NULLs) in a reader thread, each partition's rows
 * set aside in its spool, while this thread applies the partitions already
 * read and commits: PostgreSQL's scan, the apply and the commits between
 * partitions overlap. The reader runs at most LOOKAHEAD partitions ahead
 * and is the only user of the connection until it is joined. */
enum { LOOKAHEAD = 2 };
/* A partition read ahead stays in memory up to this (500,000 trips are
 * about 40 MB): spilling it to a temporary file and reading it back cost
 * the overlap most of what it won (measured). */
#define READ_AHEAD_BYTES ((size_t)64 << 20)

struct range_reader {
    PGconn *c;
    const struct source_table *t;
    const char *qcol;
    int64_t lo, step;
    int nparts;                 /* time partitions; parts[nparts] holds the NULLs */
    struct spool *parts;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ready, consumed;        /* partitions read whole; applied and freed */
    bool stop, failed;
    char err[1024];
    struct record_writer w;     /* the reader's */
    int reading;                /* the partition being read */
};

static int spool_one(void *ctx, const struct copy_tuple *tuple, char *err, size_t errlen)
{
    struct range_reader *r = ctx;
    return decode_tuple(&r->w, tuple, err, errlen) ||
                   append_record(&r->w, &r->parts[r->reading], err, errlen)
               ? -1
               : 0;
}

static void *read_ranges(void *arg)
{
    struct range_reader *r = arg;
    char where[1024], err[1024];
    for (int k = 0; k <= r->nparts; k++) {
        pthread_mutex_lock(&r->mu);
        while (!r->stop && k - r->consumed >= LOOKAHEAD)
            pthread_cond_wait(&r->cv, &r->mu);
        bool stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop)
            break;
        int64_t at = r->lo + k * r->step;
        if (k < r->nparts)
            snprintf(where, sizeof where,
                     " WHERE %s >= to_timestamp(%lld) AND %s < to_timestamp(%lld)", r->qcol,
                     (long long)at, r->qcol, (long long)(at + r->step));
        else
            snprintf(where, sizeof where, " WHERE %s IS NULL", r->qcol);
        r->reading = k;
        int rc = copy_table(r->c, r->t, where, spool_one, r, err, sizeof err);
        pthread_mutex_lock(&r->mu);
        if (rc) {
            r->failed = true;
            snprintf(r->err, sizeof r->err, "%s", err);
        } else {
            r->ready = k + 1;
        }
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        if (rc)
            break;
    }
    return NULL;
}

/* Waits until partition k is read whole (true) or the reader failed. */
static bool wait_for_partition(struct range_reader *r, int k)
{
    pthread_mutex_lock(&r->mu);
    while (r->ready <= k && !r->failed)
        pthread_cond_wait(&r->cv, &r->mu);
    bool ok = r->ready > k;
    pthread_mutex_unlock(&r->mu);
    return ok;
}

static int load_by_ranges(PGconn *c, struct applier *a, const char *qcol, int64_t lo,
                          int64_t step, int nparts, char *err, size_t errlen)
{
    struct range_reader r = {.c = c, .t = a->t, .qcol = qcol, .lo = lo, .step = step,
                             .nparts = nparts,
                             .parts = calloc((size_t)nparts + 1, sizeof *r.parts)};
    if (!r.parts || record_writer_init(&r.w, a->t)) {
        free(r.parts);
        record_writer_free(&r.w);
        return error_fmt(err, errlen, "out of memory");
    }
    for (int k = 0; k <= nparts; k++)
        r.parts[k].memory_bytes = READ_AHEAD_BYTES;
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.cv, NULL);
    pthread_t reader;
    int rc = pthread_create(&reader, NULL, read_ranges, &r) ? error_fmt(err, errlen, "cannot "
                                                                          "start a thread") : 0;
    bool started = rc == 0;
    for (int k = 0; rc == 0 && k <= nparts; k++) {
        if (!wait_for_partition(&r, k)) {
            rc = error_fmt(err, errlen, "%s", r.err);
            break;
        }
        rc = apply_partition(a, (struct spool *[]){&r.parts[k]}, 1, err, errlen);
        pthread_mutex_lock(&r.mu);
        r.consumed = k + 1;
        pthread_cond_broadcast(&r.cv);
        pthread_mutex_unlock(&r.mu);
    }
    if (started) {
        pthread_mutex_lock(&r.mu);
        r.stop = true;
        pthread_cond_broadcast(&r.cv);
        pthread_mutex_unlock(&r.mu);
        if (rc) { /* a COPY in flight ends with an error instead of running on */
            PGcancel *cancel = PQgetCancel(c);
            char why[256];
            if (cancel && !PQcancel(cancel, why, sizeof why))
                log_info("cancelling the load's COPY failed: %s", why);
            PQfreeCancel(cancel);
        }
        pthread_join(reader, NULL);
    }
    for (int k = 0; k <= nparts; k++)
        spool_free(&r.parts[k]);
    free(r.parts);
    record_writer_free(&r.w);
    pthread_mutex_destroy(&r.mu);
    pthread_cond_destroy(&r.cv);
    return rc;
}

/* Loads one table. A large fact table is read in time partitions of its
 * bucket column, so that the cells being built at any moment are those of
 * a few segments: commits between partitions evict the finished ones and
 * memory stays bounded by LOAD_MEMORY_BUDGET whatever the table's size or
 * row order. A table stored in time order is read by index range scans; any
 * other in one scan, set aside by partition on local disk (a range scan of
 * it would read the whole table each time), split over two connections
 * (more; NULL for one) when it can be. */
static int load_table(PGconn *c, PGconn *more, struct source_table *t, struct source *src,
                      struct store *st, const struct ingest_options *opt, char *err,
                      size_t errlen)
{
    struct load_progress prog;
    load_progress_begin(&prog, t->qualified, t->reltuples, opt->progress_interval_us,
                        isatty(STDERR_FILENO));
    int64_t started = now_usec();
    double per_part = opt->snapshot_batch_rows > 0 ? (double)opt->snapshot_batch_rows : 5e5;
    int64_t lo, hi;
    const char *col = NULL;
    char qcol[300];
    struct row_value *raw = calloc((size_t)t->ncols + 1, sizeof *raw);
    struct decoded_value *row = calloc((size_t)t->ncols + 1, sizeof *row);
    struct applier a = {t, st, &prog, 0, raw, row, err, errlen};
    int rc = raw && row ? 0 : error_fmt(err, errlen, "out of memory");
    if (t->nfacts && t->reltuples > per_part) {
        const struct sql_view *v = &src->views->views[t->facts[0].view];
        col = v->fact_columns[v->bucket_fact_column].name;
        quote_ident(qcol, sizeof qcol, col);
    }
    if (rc == 0 && (!col || !time_range(c, t, qcol, &lo, &hi))) {
        rc = copy_table(c, t, "", apply_tuple, &a, err, errlen);
    } else if (rc == 0) {
        /* Set aside, partitions cost no extra scan: a quarter of the size
         * lets the store's staging (store/staging.c) hold a whole partition
         * at once, so that each cell of the finest width is summed from
         * all its rows before it reaches the cellmaps. */
        bool ordered = stored_in_time_order(c, t, col);
        int64_t parts = (int64_t)(t->reltuples / (ordered ? per_part : per_part / 4)) + 1;
        int64_t step = ((hi - lo) / parts + 3599) / 3600 * 3600;
        int nparts = (int)((hi - lo + step - 1) / step);
        log_info("loading %s in %d time partitions of %s (%s)", t->qualified, nparts, qcol,
                 ordered ? "stored in time order: an index range scan each"
                         : "not stored in time order: one scan, set aside by partition");
        rc = ordered ? load_by_ranges(c, &a, qcol, lo, step, nparts, err, errlen)
                     : load_spooled(c, more, &a, col, lo, step, nparts, err, errlen);
    }
    free(raw);
    free(row);
    imetrics_snapshot_rows((uint64_t)(a.rows % PROGRESS_ROWS)); /* (the rest went in batches) */
    load_progress_add(&prog, a.rows % PROGRESS_ROWS);
    load_progress_end(&prog);
    struct logfmt_line l;
    char msg[600];
    snprintf(msg, sizeof msg, "loaded %s: %lld rows in %.1f s", t->qualified,
             (long long)a.rows, (double)(now_usec() - started) / 1e6);
    if (rc == 0 && logfmt_begin(&l, LOGFMT_INFO, msg)) {
        logfmt_str(&l, "table", t->qualified);
        logfmt_int(&l, "rows", a.rows);
        logfmt_int(&l, "dur_ms", (now_usec() - started) / 1000);
        logfmt_end(&l);
    }
    return rc;
}

/* A connection reading in the load's exported snapshot; NULL with err. */
static PGconn *open_in_snapshot(const struct ingest_options *opt, const char *snapshot, char *err,
                                size_t errlen)
{
    PGconn *c = source_connect(opt->source, false, err, errlen);
    if (!c)
        return NULL;
    char sql[200];
    snprintf(sql, sizeof sql, "SET TRANSACTION SNAPSHOT '%s'", snapshot);
    /* UTC: timestamp columns compare with partition edges as the store codes them. */
    if (exec_ok(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err, errlen) ||
        exec_ok(c, sql, err, errlen) || exec_ok(c, "SET LOCAL TIME ZONE 'UTC'", err, errlen)) {
        PQfinish(c);
        return NULL;
    }
    return c;
}

/* Drops a slot left by an earlier attempt that never finished its store. */
static void drop_stale_slot(PGconn *repl, const char *slot)
{
    char sql[300], q[200];
    quote_ident(q, sizeof q, slot);
    snprintf(sql, sizeof sql, "DROP_REPLICATION_SLOT %s", q);
    PGresult *r = PQexec(repl, sql);
    if (PQresultStatus(r) == PGRES_COMMAND_OK)
        log_info("dropped the slot %s left by an unfinished load", slot);
    PQclear(r);
}

/* --wal physical: a physical slot has no snapshot to export, so the load's
 * is made to fit it (SPEC.md §5.4). The slot is created first, reserving
 * WAL from the redo pointer of the latest checkpoint (its restart_lsn);
 * then any transaction that had an xid by then must end before the load's
 * snapshot is taken: a transaction the snapshot does not see then has all
 * its changes after the slot's start, where the follower reads them, and
 * one it sees is in the load. That is: the snapshot's xmin at or past the
 * xmax of a snapshot taken once the slot exists. Long transactions are
 * waited for, with a line in the log saying which. On success *holder is
 * a connection in a REPEATABLE READ transaction whose snapshot is
 * exported as snapshot (kept open until the load is read), and ps says
 * how the load lines up with the slot. */
static int physical_slot(const struct ingest_options *opt, PGconn *repl, const char *slot_q,
                         struct physical_start *ps, char *snapshot, size_t cap, PGconn **holder,
                         char *err, size_t errlen)
{
    char sql[300];
    snprintf(sql, sizeof sql, "CREATE_REPLICATION_SLOT %s PHYSICAL RESERVE_WAL", slot_q);
    PGresult *r = PQexec(repl, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        error_fmt(err, errlen, "creating the physical replication slot %s failed: %s", opt->slot,
                  PQerrorMessage(repl));
        PQclear(r);
        return -1;
    }
    PQclear(r);
    PGconn *c = source_connect(opt->source, false, err, errlen);
    if (!c)
        return -1;
    const char *params[1] = {opt->slot};
    r = PQexecParams(c, "SELECT restart_lsn, pg_snapshot_xmax(pg_current_snapshot())::text "
                        "FROM pg_replication_slots WHERE slot_name = $1",
                     1, NULL, params, NULL, NULL, 0);
    uint64_t before = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 ||
        !lsn_parse(PQgetvalue(r, 0, 0), &ps->start)) {
        error_fmt(err, errlen, "reading the new slot %s: %s", opt->slot, PQerrorMessage(c));
        PQclear(r);
        PQfinish(c);
        return -1;
    }
    before = strtoull(PQgetvalue(r, 0, 1), NULL, 10);
    PQclear(r);
    int64_t waiting_since = now_usec(), said = 0;
    for (;;) {
        if (exec_ok(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err, errlen))
            break;
        r = PQexec(c, "SELECT pg_export_snapshot(), pg_snapshot_xmin(s)::text, "
                      "pg_snapshot_xmax(s)::text, "
                      "(SELECT string_agg(x::text, ',') FROM pg_snapshot_xip(s) x), "
                      "CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
                      "ELSE pg_current_wal_insert_lsn() END FROM pg_current_snapshot() s");
        if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 ||
            !lsn_parse(PQgetvalue(r, 0, 4), &ps->after)) {
            error_fmt(err, errlen, "taking the load's snapshot: %s", PQerrorMessage(c));
            PQclear(r);
            break;
        }
        ps->xmin = strtoull(PQgetvalue(r, 0, 1), NULL, 10);
        if (ps->xmin >= before) {
            snprintf(snapshot, cap, "%s", PQgetvalue(r, 0, 0));
            ps->xmax = strtoull(PQgetvalue(r, 0, 2), NULL, 10);
            const char *xip = PQgetvalue(r, 0, 3);
            ps->nxip = 0;
            for (const char *p = xip; *p; p++)
                ps->nxip += *p == ',';
            ps->nxip += *xip != '\0';
            ps->xip = calloc((size_t)ps->nxip + 1, sizeof *ps->xip);
            if (!ps->xip) {
                PQclear(r);
                error_fmt(err, errlen, "out of memory");
                break;
            }
            int n = 0;
            for (const char *p = xip; *p && n < ps->nxip; n++) {
                char *end;
                ps->xip[n] = strtoull(p, &end, 10);
                p = *end == ',' ? end + 1 : end;
            }
            PQclear(r);
            ps->loaded = true;
            *holder = c;
            return 0;
        }
        PQclear(r);
        if (exec_ok(c, "ROLLBACK", err, errlen))
            break;
        /* A transaction that began before the slot is still open. */
        int64_t now = now_usec();
        if (now - waiting_since > 1000000 && now - said > 10000000) {
            said = now;
            char q[300];
            snprintf(q, sizeof q,
                     "SELECT concat_ws(', ', (SELECT string_agg('pid ' || pid, ', ') FROM "
                     "pg_stat_activity WHERE backend_xid IS NOT NULL AND "
                     "backend_xid::text::bigint < %llu %% 4294967296), (SELECT "
                     "string_agg('prepared ' || quote_literal(gid), ', ') FROM "
                     "pg_prepared_xacts))", (unsigned long long)before);
            r = PQexec(c, q);
            log_info("waiting for transactions that began before the slot to end, so that the "
                     "load lines up with the WAL (%s)",
                     PQresultStatus(r) == PGRES_TUPLES_OK && !PQgetisnull(r, 0, 0)
                         ? PQgetvalue(r, 0, 0) : "?");
            PQclear(r);
        }
        if (ingest_stop_requested) {
            error_fmt(err, errlen, "stopped while waiting to take the load's snapshot");
            break;
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    PQfinish(c);
    return -1;
}

int snapshot_load(const struct ingest_options *opt, struct source *src, struct store *st,
                  struct physical_start *ps, char *err, size_t errlen)
{
    PGconn *repl = source_connect(opt->source, true, err, errlen);
    if (!repl)
        return -1;
    PGconn *c = NULL, *more = NULL, *holder = NULL;
    int rc = -1;
    struct store_error serr;
    drop_stale_slot(repl, opt->slot);
    char sql[300], q[200], snapshot[128];
    quote_ident(q, sizeof q, opt->slot);
    uint64_t consistent = 0; /* physical: 0 until the follower reaches ps->after */
    char lsn[32];
    if (opt->wal_physical) {
        if (physical_slot(opt, repl, q, ps, snapshot, sizeof snapshot, &holder, err, errlen))
            goto done;
        char after[32];
        log_info("created physical slot %s at %s; loading in snapshot %s, consistent with the "
                 "WAL from %s", opt->slot, lsn_text(ps->start, lsn), snapshot,
                 lsn_text(ps->after, after));
    } else {
        /* The legacy EXPORT_SNAPSHOT form works from PostgreSQL 10 on. */
        snprintf(sql, sizeof sql, "CREATE_REPLICATION_SLOT %s LOGICAL pgoutput EXPORT_SNAPSHOT",
                 q);
        PGresult *r = PQexec(repl, sql);
        if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 ||
            !lsn_parse(PQgetvalue(r, 0, 1), &consistent)) {
            error_fmt(err, errlen, "creating the replication slot %s failed: %s", opt->slot,
                      PQerrorMessage(repl));
            PQclear(r);
            goto done;
        }
        snprintf(snapshot, sizeof snapshot, "%s", PQgetvalue(r, 0, 2));
        PQclear(r);
        log_info("created slot %s at %s; loading in snapshot %s", opt->slot,
                 lsn_text(consistent, lsn), snapshot);
    }

    if (!(c = open_in_snapshot(opt, snapshot, err, errlen)))
        goto done;
    char why[300];
    if (!(more = open_in_snapshot(opt, snapshot, why, sizeof why)))
        log_info("a second connection for the load failed, reading with one: %s", why);
    store_set_cache_bytes(st, LOAD_MEMORY_BUDGET / 2);
    if (store_set_bulk(st, true, &serr)) { /* whole segments, encoded beside the rows */
        error_fmt(err, errlen, "%s", serr.message);
        goto done;
    }
    int64_t started = now_usec();
    for (int i = 0; i < src->ntables; i++)
        if (load_table(c, more, &src->tables[i], src, st, opt, err, errlen))
            goto done;
    if (exec_ok(c, "COMMIT", err, errlen) || (more && exec_ok(more, "COMMIT", err, errlen)) ||
        (holder && exec_ok(holder, "COMMIT", err, errlen)))
        goto done;
    struct store_position pos = {consistent, now_usec(), now_usec(), 0};
    if (ingest_store_commit(st, &pos, NULL, &serr)) {
        commit_failed(&serr, err, errlen);
        goto done;
    }
    /* Segments the load came back to after writing them took their later
     * cells as delta blocks (store_set_bulk); folded now, the store is
     * handed over as bases, as asks read it fastest. Answers do not change. */
    int left;
    if (store_compact(st, INT64_MAX, true, &left, &serr)) {
        error_fmt(err, errlen, "folding the load's delta blocks: %s", serr.message);
        goto done;
    }
    struct logfmt_line l;
    char msg[200];
    snprintf(msg, sizeof msg, "snapshot loaded in %.1f s; position %s",
             (double)(now_usec() - started) / 1e6,
             opt->wal_physical ? "set once the WAL reaches the snapshot"
                               : lsn_text(consistent, lsn));
    if (logfmt_begin(&l, LOGFMT_INFO, msg)) {
        logfmt_str(&l, "lsn", lsn);
        logfmt_int(&l, "dur_ms", (now_usec() - started) / 1000);
        logfmt_end(&l);
    }
    rc = 0;
done:
    if (store_set_bulk(st, false, &serr) && rc == 0) /* after the last commit, nothing to write */
        rc = error_fmt(err, errlen, "%s", serr.message);
    PQfinish(more);
    PQfinish(c);
    PQfinish(holder);
    PQfinish(repl);
    return rc;
}
