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

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the writer may hold decoded while loading. */
#define LOAD_MEMORY_BUDGET ((size_t)192 << 20)

static int exec_ok(PGconn *c, const char *sql, char *err, size_t errlen)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType s = PQresultStatus(r);
    PQclear(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
        return ingest_fail(err, errlen, "%s: %s", sql, PQerrorMessage(c));
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

struct progress {
    const char *table;
    double expected;
    int64_t rows, started, last_print;
    bool tty;
};

static void progress_print(struct progress *p, bool done)
{
    int64_t now = now_usec();
    if (!p->tty || (!done && now - p->last_print < 200000))
        return;
    p->last_print = now;
    double secs = (double)(now - p->started) / 1e6;
    double rate = secs > 0 ? (double)p->rows / secs : 0;
    double left = p->expected > (double)p->rows && rate > 0 ? (p->expected - (double)p->rows) / rate : 0;
    fprintf(stderr, "\rloading %s: %lld rows, %.0f rows/s, ETA %.0f s   %s", p->table,
            (long long)p->rows, rate, left, done ? "\n" : "");
}

/* A commit of the load failed. A full store ends the load: what it wrote
 * is at position 0, which the next run removes before loading again. */
static int commit_failed(const struct store_error *serr, char *err, size_t errlen)
{
    if (serr->kind != STORE_ERR_LIMIT && serr->kind != STORE_ERR_NO_SPACE)
        return ingest_fail(err, errlen, "%s", serr->message);
    return ingest_fail(err, errlen, "%s. The initial load stopped; the next run removes what it wrote "
                             "and loads again from the start: %s, then run straum-ingest again",
                serr->message,
                serr->kind == STORE_ERR_NO_SPACE ? "make room for data.mdb"
                                                 : "raise --max-store-size (or "
                                                   "STRAUM_STORE_MAX_MAP_MB)");
}

/* Commits what is pending (position 0: still loading) when the writer holds
 * more than the budget, so that the commit's eviction bounds memory. */
static int commit_if_big(struct store *st, char *err, size_t errlen)
{
    if (store_cached_bytes(st) < LOAD_MEMORY_BUDGET)
        return 0;
    struct store_error serr;
    if (ingest_store_commit(st, &(struct store_position){0}, NULL, &serr))
        return commit_failed(&serr, err, errlen);
    return 0;
}

/* One COPY of a table (rows matching where, "" for all), each tuple applied
 * as it completes. */
static int copy_table(PGconn *c, struct source_table *t, struct store *st, const char *where,
                      struct progress *prog, char *err, size_t errlen)
{
    size_t cap = 64 + strlen(t->qualified) + strlen(where);
    for (int i = 0; i < t->ncols; i++)
        cap += 2 * strlen(t->cols[i].name) + 4;
    char *sql = malloc(cap + 64);
    if (!sql)
        return ingest_fail(err, errlen, "out of memory");
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
        return ingest_fail(err, errlen, "COPY of %s failed: %s", t->qualified, PQerrorMessage(c));
    }
    PQclear(r);

    struct copy_parser parser;
    copy_parser_init(&parser);
    struct copy_tuple *tuple = malloc(sizeof *tuple);
    struct row_value *row = calloc((size_t)t->ncols + 1, sizeof *row);
    int rc = tuple && row ? 0 : ingest_fail(err, errlen, "out of memory");
    char *buf;
    int n;
    while (rc == 0 && (n = PQgetCopyData(c, &buf, 0)) > 0) {
        rc = copy_parser_feed(&parser, buf, (size_t)n) ? ingest_fail(err, errlen, "out of memory") : 0;
        PQfreemem(buf);
        int got;
        while (rc == 0 && (got = copy_parser_next(&parser, tuple)) == 1) {
            if (tuple->nfields != t->ncols) {
                rc = ingest_fail(err, errlen, "COPY of %s sent %d fields, expected %d", t->qualified,
                          tuple->nfields, t->ncols);
                break;
            }
            for (int i = 0; i < t->ncols; i++)
                row[i] = (struct row_value){tuple->fields[i].is_null, false, true,
                                            tuple->fields[i].data, tuple->fields[i].len};
            if (t->nfacts)
                rc = rows_apply_fact(st, t, row, +1, err, errlen);
            if (rc == 0 && t->ndims)
                rc = rows_put_dim(st, t, row, err, errlen);
            if (rc == 0)
                imetrics_snapshot_row();
            if (rc == 0 && ++prog->rows % 65536 == 0)
                rc = commit_if_big(st, err, errlen);
            progress_print(prog, false);
        }
        if (rc == 0 && got < 0)
            rc = ingest_fail(err, errlen, "COPY of %s: %s", t->qualified, parser.error);
    }
    if (rc == 0 && n == -2)
        rc = ingest_fail(err, errlen, "COPY of %s failed: %s", t->qualified, PQerrorMessage(c));
    if (rc == 0 && copy_parser_finish(&parser))
        rc = ingest_fail(err, errlen, "COPY of %s: %s", t->qualified, parser.error);
    while ((r = PQgetResult(c)) != NULL) {
        if (rc == 0 && PQresultStatus(r) != PGRES_COMMAND_OK)
            rc = ingest_fail(err, errlen, "COPY of %s failed: %s", t->qualified, PQerrorMessage(c));
        PQclear(r);
    }
    copy_parser_free(&parser);
    free(tuple);
    free(row);
    return rc;
}

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

/* Loads one table. A large fact table is read in time partitions of its
 * bucket column (an index range scan each, all in the one snapshot), so
 * that the cells being built at any moment are those of a few segments:
 * commits between partitions evict the finished ones and memory stays
 * bounded by LOAD_MEMORY_BUDGET whatever the table's size or row order. */
static int load_table(PGconn *c, struct source_table *t, struct source *src, struct store *st,
                      const struct ingest_options *opt, char *err, size_t errlen)
{
    struct progress prog = {t->name, t->reltuples, 0, now_usec(), 0, isatty(2)};
    double per_part = opt->snapshot_batch_rows > 0 ? (double)opt->snapshot_batch_rows : 5e5;
    int64_t lo, hi;
    char col[300];
    int rc = 0;
    if (t->nfacts && t->reltuples > per_part) {
        const struct sql_view *v = &src->views->views[t->facts[0].view];
        quote_ident(col, sizeof col, v->fact_columns[v->bucket_fact_column].name);
    }
    if (!t->nfacts || t->reltuples <= per_part || !time_range(c, t, col, &lo, &hi)) {
        rc = copy_table(c, t, st, "", &prog, err, errlen);
    } else {
        int64_t parts = (int64_t)(t->reltuples / per_part) + 1;
        int64_t step = ((hi - lo) / parts + 3599) / 3600 * 3600;
        log_info("loading %s in %lld time partitions of %s", t->qualified,
                 (long long)((hi - lo + step - 1) / step), col);
        char where[1024];
        for (int64_t a = lo; rc == 0 && a < hi; a += step) {
            snprintf(where, sizeof where,
                     " WHERE %s >= to_timestamp(%lld) AND %s < to_timestamp(%lld)", col,
                     (long long)a, col, (long long)(a + step));
            rc = copy_table(c, t, st, where, &prog, err, errlen);
            if (rc == 0)
                rc = commit_if_big(st, err, errlen);
        }
        snprintf(where, sizeof where, " WHERE %s IS NULL", col);
        if (rc == 0)
            rc = copy_table(c, t, st, where, &prog, err, errlen);
    }
    progress_print(&prog, true);
    struct store_logline l;
    char msg[600];
    snprintf(msg, sizeof msg, "loaded %s: %lld rows in %.1f s", t->qualified,
             (long long)prog.rows, (double)(now_usec() - prog.started) / 1e6);
    if (rc == 0 && store_log_begin(&l, STORE_LOG_INFO, msg)) {
        store_log_str(&l, "table", t->qualified);
        store_log_int(&l, "rows", prog.rows);
        store_log_int(&l, "dur_ms", (now_usec() - prog.started) / 1000);
        store_log_end(&l);
    }
    return rc;
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

int snapshot_load(const struct ingest_options *opt, struct source *src, struct store *st,
                  char *err, size_t errlen)
{
    PGconn *repl = source_connect(opt->source, true, err, errlen);
    if (!repl)
        return -1;
    PGconn *c = NULL;
    int rc = -1;
    drop_stale_slot(repl, opt->slot);
    char sql[300], q[200], snapshot[128];
    quote_ident(q, sizeof q, opt->slot);
    /* The legacy EXPORT_SNAPSHOT form works from PostgreSQL 10 on. */
    snprintf(sql, sizeof sql, "CREATE_REPLICATION_SLOT %s LOGICAL pgoutput EXPORT_SNAPSHOT", q);
    PGresult *r = PQexec(repl, sql);
    uint64_t consistent;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 ||
        !lsn_parse(PQgetvalue(r, 0, 1), &consistent)) {
        ingest_fail(err, errlen, "creating the replication slot %s failed: %s", opt->slot,
             PQerrorMessage(repl));
        PQclear(r);
        goto done;
    }
    snprintf(snapshot, sizeof snapshot, "%s", PQgetvalue(r, 0, 2));
    PQclear(r);
    char lsn[32];
    log_info("created slot %s at %s; loading in snapshot %s", opt->slot,
             lsn_text(consistent, lsn), snapshot);

    if (!(c = source_connect(opt->source, false, err, errlen)))
        goto done;
    snprintf(sql, sizeof sql, "SET TRANSACTION SNAPSHOT '%s'", snapshot);
    /* UTC: timestamp columns compare with partition edges as the store codes them. */
    if (exec_ok(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err, errlen) ||
        exec_ok(c, sql, err, errlen) || exec_ok(c, "SET LOCAL TIME ZONE 'UTC'", err, errlen))
        goto done;
    store_set_cache_bytes(st, LOAD_MEMORY_BUDGET / 2);
    store_set_bulk(st, true); /* whole segments, kept decoded between batches */
    int64_t started = now_usec();
    for (int i = 0; i < src->ntables; i++)
        if (load_table(c, &src->tables[i], src, st, opt, err, errlen))
            goto done;
    if (exec_ok(c, "COMMIT", err, errlen))
        goto done;
    struct store_error serr;
    struct store_position pos = {consistent, now_usec(), now_usec(), 0};
    if (ingest_store_commit(st, &pos, NULL, &serr)) {
        commit_failed(&serr, err, errlen);
        goto done;
    }
    struct store_logline l;
    char msg[200];
    snprintf(msg, sizeof msg, "snapshot loaded in %.1f s; position %s",
             (double)(now_usec() - started) / 1e6, lsn_text(consistent, lsn));
    if (store_log_begin(&l, STORE_LOG_INFO, msg)) {
        store_log_str(&l, "lsn", lsn);
        store_log_int(&l, "dur_ms", (now_usec() - started) / 1000);
        store_log_end(&l);
    }
    rc = 0;
done:
    store_set_bulk(st, false);
    PQfinish(c);
    PQfinish(repl);
    return rc;
}
