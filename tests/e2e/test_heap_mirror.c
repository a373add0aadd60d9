/* Tests of ingest/heap_mirror.c against PostgreSQL's own pages.
 *
 * A table is filled, a checkpoint taken, and then changed every way a heap
 * is changed (single and multi-row inserts, HOT and non-HOT updates, rows
 * that move to another page, deletes, rolled-back transactions and
 * subtransactions, two-phase commit, VACUUM). Its WAL from the checkpoint's
 * redo pointer on is replayed into the mirror, and then:
 *   - every page the mirror holds equals the table's page as pageinspect
 *     reads it: each line pointer's state and each row's bytes;
 *   - the rows at the checkpoint, minus what committed transactions
 *     deleted and plus what they inserted (the changes the mirror
 *     reported, kept per transaction until its commit or abort), are the
 *     rows the table holds at the end, byte for byte. */
#include "ingest/heap_mirror.h"
#include "tests/e2e/walfiles.h"
#include "tests/kit/pgtmp.h"
#include "tests/pg/pgtest.h"

#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static PGconn *conn;

static void sql(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sql(const char *fmt, ...)
{
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(conn, text);
    ExecStatusType s = PQresultStatus(r);
    cr_assert(s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK, "%s: %s", text,
              PQerrorMessage(conn));
    PQclear(r);
}

static uint32_t u32_of(const char *query)
{
    PGresult *r = PQexec(conn, query);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", query, PQerrorMessage(conn));
    uint32_t v = (uint32_t)strtoul(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return v;
}

/* ---- Rows as bytes -------------------------------------------------------------- */

/* A row: its hoff, then its bytes from the tuple header's 23rd on. */
struct row {
    uint8_t *bytes;
    uint32_t len;
};

struct rows {
    struct row *v;
    size_t n, cap;
};

static void rows_add(struct rows *s, uint8_t hoff, const uint8_t *data, uint32_t len)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        cr_assert_not_null(s->v = realloc(s->v, sizeof *s->v * s->cap));
    }
    uint8_t *b = malloc(len + 1);
    cr_assert_not_null(b);
    b[0] = hoff;
    memcpy(b + 1, data, len);
    s->v[s->n++] = (struct row){b, len + 1};
}

static int cmp_row(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    uint32_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->bytes, b->bytes, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static void rows_free(struct rows *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].bytes);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* Removes one row equal to (hoff, data); false when none is. */
static bool rows_remove(struct rows *s, uint8_t hoff, const uint8_t *data, uint32_t len)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].len == len + 1 && s->v[i].bytes[0] == hoff &&
            memcmp(s->v[i].bytes + 1, data, len) == 0) {
            free(s->v[i].bytes);
            s->v[i] = s->v[--s->n];
            return true;
        }
    return false;
}

/* Block b of t as PostgreSQL has it. */
static void raw_page(uint32_t b, uint8_t page[PGWAL_PAGE_SIZE])
{
    char q[128];
    snprintf(q, sizeof q, "SELECT get_raw_page('t', %u)", b);
    PGresult *r = PQexecParams(conn, q, 0, NULL, NULL, NULL, NULL, 1);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", q, PQerrorMessage(conn));
    cr_assert_eq(PQgetlength(r, 0, 0), PGWAL_PAGE_SIZE);
    memcpy(page, PQgetvalue(r, 0, 0), PGWAL_PAGE_SIZE);
    PQclear(r);
}

/* The rows of t that a query sees, as their tuples' bytes. */
static void visible_rows(struct rows *out)
{
    PGresult *r = PQexec(conn, "SELECT ctid FROM t ORDER BY ctid");
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(conn));
    static uint8_t page[PGWAL_PAGE_SIZE];
    long at = -1;
    for (int i = 0; i < PQntuples(r); i++) {
        unsigned b, o;
        cr_assert_eq(sscanf(PQgetvalue(r, i, 0), "(%u,%u)", &b, &o), 2);
        if ((long)b != at)
            raw_page(b, page), at = b;
        const uint8_t *tup;
        uint16_t len;
        char err[256];
        cr_assert_eq(pgwal_page_tuple(page, (uint16_t)o, &tup, &len, err, sizeof err), 0, "%s",
                     err);
        rows_add(out, tup[22], tup + PGWAL_TUPLE_HEADER, len - PGWAL_TUPLE_HEADER);
    }
    PQclear(r);
}

/* ---- Changes, kept per transaction ------------------------------------------------------ */

struct change {
    uint32_t xid;
    bool insert; /* else a delete */
    uint8_t hoff;
    uint8_t *data;
    uint32_t len;
};

struct changes {
    struct change *v;
    size_t n, cap;
    long inserts, deletes, updates;
};

static void keep(struct changes *c, uint32_t xid, bool insert, const struct heap_mirror_tuple *t)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 1024;
        cr_assert_not_null(c->v = realloc(c->v, sizeof *c->v * c->cap));
    }
    uint8_t *d = malloc(t->len + 1);
    cr_assert_not_null(d);
    memcpy(d, t->data, t->len);
    c->v[c->n++] = (struct change){xid, insert, t->hoff, d, t->len};
}

static int on_change(void *ctx, const struct heap_change *hc)
{
    struct changes *c = ctx;
    if (hc->kind != HEAP_CHANGE_INSERT)
        keep(c, hc->xid, false, &hc->old_tuple);
    if (hc->kind != HEAP_CHANGE_DELETE)
        keep(c, hc->xid, true, &hc->new_tuple);
    c->inserts += hc->kind == HEAP_CHANGE_INSERT;
    c->deletes += hc->kind == HEAP_CHANGE_DELETE;
    c->updates += hc->kind == HEAP_CHANGE_UPDATE;
    return 0;
}

static bool in_xids(uint32_t xid, uint32_t top, uint32_t n, const uint8_t *subs)
{
    if (xid == top)
        return true;
    for (uint32_t i = 0; i < n; i++)
        if (pgwal_u32_at(subs, i) == xid)
            return true;
    return false;
}

/* A transaction ended: its changes (and its subtransactions') applied to
 * rows when it committed, dropped either way. */
static void ended(struct changes *c, struct rows *rows, uint32_t top, uint32_t nsubs,
                  const uint8_t *subs, bool committed)
{
    size_t kept = 0;
    for (size_t i = 0; i < c->n; i++) {
        struct change *ch = &c->v[i];
        if (!in_xids(ch->xid, top, nsubs, subs)) {
            c->v[kept++] = *ch;
            continue;
        }
        if (committed && ch->insert)
            rows_add(rows, ch->hoff, ch->data, ch->len);
        else if (committed)
            cr_assert(rows_remove(rows, ch->hoff, ch->data, ch->len),
                      "transaction %u deleted a row the table did not hold", top);
        free(ch->data);
    }
    c->n = kept;
}

/* ---- The workload -------------------------------------------------------------------- */

static void fill(int from, int n)
{
    sql("INSERT INTO t SELECT i, i %% 97, (i * 7.25)::numeric(12,2), "
        "CASE WHEN i %% 5 = 0 THEN NULL ELSE 'row ' || i || repeat('.', i %% 40) END "
        "FROM generate_series(%d, %d) i",
        from, from + n - 1);
}

static void copy_rows(int from, int n)
{
    PGresult *r = PQexec(conn, "COPY t FROM STDIN");
    cr_assert_eq(PQresultStatus(r), PGRES_COPY_IN, "%s", PQerrorMessage(conn));
    PQclear(r);
    for (int i = from; i < from + n; i++) {
        char line[128];
        int len = snprintf(line, sizeof line, "%d\t%d\t%d.50\tcopied %d\n", i, i % 31, i, i);
        cr_assert_eq(PQputCopyData(conn, line, len), 1);
    }
    cr_assert_eq(PQputCopyEnd(conn, NULL), 1);
    r = PQgetResult(conn);
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s", PQerrorMessage(conn));
    PQclear(r);
    PQclear(PQgetResult(conn));
}

/* Runs the changes; *mid gets a record boundary after the first ones,
 * when every page has had its image. */
static void workload(uint64_t *mid)
{
    sql("UPDATE t SET v = v + 1 WHERE id %% 7 = 0");            /* HOT where room is */
    sql("UPDATE t SET k = k + 1000 WHERE id %% 11 = 0");        /* an indexed column: not HOT */
    sql("UPDATE t SET s = repeat('x', 700) WHERE id %% 53 = 0"); /* rows that move page */
    *mid = walfiles_lsn(conn, "SELECT pg_current_wal_insert_lsn()");
    sql("DELETE FROM t WHERE id %% 13 = 0");
    sql("BEGIN; INSERT INTO t VALUES (-1, 1, 1, 'rolled back'); "
        "UPDATE t SET v = 0 WHERE id < 50; ROLLBACK");
    sql("BEGIN; INSERT INTO t VALUES (-2, 2, 2, 'kept'); SAVEPOINT a; "
        "DELETE FROM t WHERE id BETWEEN 100 AND 140; ROLLBACK TO a; "
        "UPDATE t SET s = NULL WHERE id BETWEEN 141 AND 150; SAVEPOINT b; "
        "INSERT INTO t VALUES (-3, 3, 3, 'kept too'); RELEASE b; COMMIT");
    sql("BEGIN; UPDATE t SET v = v * 2 WHERE id BETWEEN 200 AND 260; "
        "PREPARE TRANSACTION 'heap_mirror_p1'");
    sql("COMMIT PREPARED 'heap_mirror_p1'");
    sql("BEGIN; DELETE FROM t WHERE id BETWEEN 300 AND 320; "
        "PREPARE TRANSACTION 'heap_mirror_p2'");
    sql("ROLLBACK PREPARED 'heap_mirror_p2'");
    sql("VACUUM t");
    fill(5000, 600); /* into the room VACUUM freed */
    copy_rows(10000, 1500);
    sql("UPDATE t SET v = v + 0.01, s = s || '!' WHERE id %% 3 = 0 AND id > 9000");
    sql("DELETE FROM t WHERE id BETWEEN 10200 AND 10300");
}

/* ---- The test ------------------------------------------------------------------------- */

/* Replays [from, end) into a mirror of max_bytes, which must fail with a
 * message containing needle. */
static void refused_from(uint64_t from, size_t max_bytes, struct pgwal_relfilenode node,
                         uint64_t end, const char *needle)
{
    struct heap_mirror *m = heap_mirror_new(max_bytes);
    cr_assert_not_null(m);
    cr_assert_eq(heap_mirror_follow(m, node), 0);
    struct walfiles w;
    walfiles_open(&w, conn, from, end);
    struct pgwal_record rec;
    char err[512] = "";
    int rc = 0;
    while (rc == 0 && walfiles_next(&w, &rec))
        rc = heap_mirror_replay(m, &rec, NULL, NULL, err, sizeof err);
    walfiles_close(&w);
    heap_mirror_free(m);
    cr_assert_eq(rc, -1, "a replay from %llX within %zu bytes was not refused",
                 (unsigned long long)from, max_bytes);
    cr_assert(strstr(err, needle), "refused with \"%s\", not \"%s\"", err, needle);
}

static void check_mirror(const char *conninfo)
{
    conn = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(conn), CONNECTION_OK, "%s", PQerrorMessage(conn));
    sql("CREATE EXTENSION pageinspect");
    sql("CREATE TABLE t (id int, k int, v numeric(12,2), s text) WITH (fillfactor = 80)");
    sql("CREATE INDEX ON t (k)");
    fill(1, 4000);
    sql("VACUUM t");
    /* The WAL is read from its files after the changes: a slot holds it from
     * here on (temporary: gone with this connection, whatever the test's
     * end, from a cluster other tests share), or a checkpoint of the server's own meanwhile (its timer, or
     * max_wal_size passed) recycled the segment after the redo pointer's
     * ("pg_wal/...52: No such file or directory", once in some 30 runs). */
    sql("SELECT pg_create_physical_replication_slot('heap_mirror_holds_wal', true, true)");
    PGresult *fpw = PQexec(conn, "SHOW full_page_writes");
    cr_assert_str_eq(PQgetvalue(fpw, 0, 0), "on", "the test cluster writes full-page images");
    PQclear(fpw);
    sql("CHECKPOINT");
    uint64_t redo = walfiles_lsn(conn, "SELECT redo_lsn FROM pg_control_checkpoint()");
    struct pgwal_relfilenode node = {
        u32_of("SELECT CASE WHEN reltablespace = 0 THEN (SELECT oid FROM pg_tablespace WHERE "
               "spcname = 'pg_default') ELSE reltablespace END FROM pg_class WHERE relname = 't'"),
        u32_of("SELECT oid FROM pg_database WHERE datname = current_database()"),
        u32_of("SELECT pg_relation_filenode('t')")};
    struct rows rows = {0}, end_rows = {0};
    visible_rows(&rows);
    size_t at_start = rows.n;

    uint64_t mid;
    workload(&mid);
    sql("SET synchronous_commit = on; CHECKPOINT");
    uint64_t end = walfiles_lsn(conn, "SELECT pg_current_wal_flush_lsn()");
    cr_assert_eq(u32_of("SELECT pg_relation_filenode('t')"), node.rel, "no rewrite happened");

    struct heap_mirror *m = heap_mirror_new(0);
    cr_assert_not_null(m);
    cr_assert_eq(heap_mirror_follow(m, node), 0);
    struct changes ch = {0};
    struct walfiles w;
    walfiles_open(&w, conn, redo, end);
    struct pgwal_record rec;
    long records = 0, commits = 0, aborts = 0;
    static uint32_t committed[4096]; /* the xids committed, subtransactions' too */
    size_t ncommitted = 0;
    char err[512];
    while (walfiles_next(&w, &rec)) {
        records++;
        cr_assert_eq(heap_mirror_replay(m, &rec, on_change, &ch, err, sizeof err), 0,
                     "record %ld at %X/%08X (%s %s): %s", records, (unsigned)(rec.lsn >> 32),
                     (unsigned)rec.lsn, pgwal_rmgr_name(rec.rmid),
                     pgwal_record_name(rec.rmid, rec.info), err);
        if (rec.rmid != PGWAL_RM_XACT)
            continue;
        struct pgwal_xact x;
        cr_assert_eq(pgwal_xact_parse(&rec, &x, err, sizeof err), 0, "%s", err);
        bool commit = x.op == PGWAL_XACT_COMMIT || x.op == PGWAL_XACT_COMMIT_PREPARED;
        if (!commit && x.op != PGWAL_XACT_ABORT && x.op != PGWAL_XACT_ABORT_PREPARED)
            continue;
        ended(&ch, &rows, x.xid, x.nsubxacts, x.subxacts, commit);
        commits += commit;
        aborts += !commit;
        uint32_t ids[1 + 64];
        cr_assert_leq(x.nsubxacts, 64);
        ids[0] = x.xid;
        for (uint32_t i = 0; i < x.nsubxacts; i++)
            ids[1 + i] = pgwal_u32_at(x.subxacts, i);
        heap_mirror_end(m, ids, 1 + (int)x.nsubxacts, commit);
        for (int i = 0; commit && i <= (int)x.nsubxacts; i++)
            committed[ncommitted++ % 4096] = ids[i];
    }
    walfiles_close(&w);
    cr_assert_gt(ch.inserts, 2000);
    cr_assert_gt(ch.updates, 1000);
    cr_assert_gt(ch.deletes, 300);
    cr_assert_geq(aborts, 3, "the rollbacks were read (%ld)", aborts);

    /* Every page of the table: the mirror holds it (each was changed) and
     * agrees with PostgreSQL's, line pointer by line pointer. */
    uint32_t nblocks = u32_of("SELECT pg_relation_size('t') / 8192");
    cr_assert_eq(heap_mirror_pages(m), nblocks, "the mirror holds %zu pages of %u",
                 heap_mirror_pages(m), nblocks);
    static uint8_t page[PGWAL_PAGE_SIZE];
    long compared = 0, released = 0;
    cr_assert_leq(ncommitted, 4096);
    for (uint32_t b = 0; b < nblocks; b++) {
        raw_page(b, page);
        unsigned lower = page[12] | page[13] << 8;
        unsigned nline = lower >= 24 ? (lower - 24) / 4 : 0;
        for (unsigned off = 1; off <= HEAP_MIRROR_MAX_ITEMS; off++) {
            struct heap_mirror_tuple mt;
            int got = heap_mirror_tuple_at(m, node, b, (uint16_t)off, &mt);
            const uint8_t *lp = page + 24 + 4 * (off - 1);
            unsigned flags = off <= nline ? (unsigned)((lp[1] >> 7) | (lp[2] & 1) << 1) : 0;
            if (flags != 1) {
                cr_assert_eq(got, 0, "(%u,%u): PostgreSQL's line pointer is %u, the mirror %d", b,
                             off, flags, got);
                continue;
            }
            const uint8_t *tup;
            uint16_t len;
            cr_assert_eq(pgwal_page_tuple(page, (uint16_t)off, &tup, &len, err, sizeof err), 0);
            if (got == 2) {
                /* Given back (heap_mirror.h invariant 4): PostgreSQL's row
                 * was deleted or updated by a transaction that committed
                 * (t_xmax at 4: no row here is locked or a MultiXact). */
                uint32_t xmax = (uint32_t)tup[4] | (uint32_t)tup[5] << 8 |
                                (uint32_t)tup[6] << 16 | (uint32_t)tup[7] << 24;
                bool known = false;
                for (size_t i = 0; i < ncommitted && !known; i++)
                    known = committed[i] == xmax;
                cr_assert(known, "(%u,%u): the mirror gave back a row whose xmax %u did not "
                                 "commit", b, off, xmax);
                released++;
                continue;
            }
            cr_assert_eq(got, 1, "(%u,%u): a row in PostgreSQL, %d in the mirror", b, off, got);
            cr_assert(mt.len == (uint32_t)(len - PGWAL_TUPLE_HEADER) && mt.hoff == tup[22] &&
                          memcmp(mt.data, tup + PGWAL_TUPLE_HEADER, mt.len) == 0,
                      "(%u,%u): the row's bytes differ (%u and %u bytes)", b, off, mt.len,
                      len - PGWAL_TUPLE_HEADER);
            compared++;
        }
    }
    cr_assert_gt(compared, 4000);
    /* The last DELETE's 101 rows, which nothing prunes before the pages
     * are read (other rows deleted or updated away were pruned since). */
    cr_assert_geq(released, 101, "%ld rows given back", released);

    /* The rows: the checkpoint's, changed by every committed transaction. */
    cr_assert_eq(ch.n, 0, "%zu changes of transactions that did not end", ch.n);
    visible_rows(&end_rows);
    cr_assert_eq(rows.n, end_rows.n, "%zu rows replayed (from %zu), PostgreSQL holds %zu",
                 rows.n, at_start, end_rows.n);
    qsort(rows.v, rows.n, sizeof *rows.v, cmp_row);
    qsort(end_rows.v, end_rows.n, sizeof *end_rows.v, cmp_row);
    for (size_t i = 0; i < rows.n; i++)
        cr_assert_eq(cmp_row(&rows.v[i], &end_rows.v[i]), 0, "row %zu of the sorted rows differs",
                     i);
    fprintf(stderr, "heap_mirror: %ld records, %ld commits, %ld aborts; %ld inserts, %ld updates, "
                    "%ld deletes; %zu pages, %zu bytes held, %ld rows given back\n",
            records, commits, aborts, ch.inserts, ch.updates, ch.deletes, heap_mirror_pages(m),
            heap_mirror_bytes(m), released);

    /* Read from past the redo pointer, a delete meets a page whose image
     * came before: refused, not guessed (heap_mirror.h invariant 1). And
     * past its bound on bytes, the mirror refuses too. */
    refused_from(mid, 0, node, end, "never seen whole");
    refused_from(redo, 64 << 10, node, end, "bytes allowed");

    /* A checkpoint past every change forgets every page. */
    cr_assert_eq(heap_mirror_forget_before(m, end), (long)nblocks);
    cr_assert_eq(heap_mirror_pages(m), 0);
    cr_assert_eq(heap_mirror_bytes(m), 0);
    heap_mirror_free(m);
    free(ch.v);
    rows_free(&rows);
    rows_free(&end_rows);
    PQfinish(conn);
}

/* Under wal_level logical (the shared test cluster) every change of a
 * user table carries its whole new row, even beside a page image. */
Test(heap_mirror, logical_wal_level, .timeout = 300)
{
    char conninfo[1024];
    cr_assert_eq(pgtest_new_db(conninfo, sizeof conninfo), 0);
    check_mirror(conninfo);
}

/* Under wal_level replica, what most servers run, a row written beside a
 * page image is left out of its record, and an update on the same page
 * borrows the old row's first and last bytes: a cluster of its own. */
Test(heap_mirror, replica_wal_level, .timeout = 300)
{
    static const char *const settings[] = {"wal_level=replica", NULL};
    struct pgtmp_options o = {.settings = settings};
    struct pgtmp pg;
    char err[1024];
    cr_assert_eq(pgtmp_start(&pg, &o, err, sizeof err), 0, "%s", err);
    check_mirror(pgtmp_conninfo(&pg));
    pgtmp_stop(&pg);
}

/* A transaction open across a checkpoint, replayed as the physical
 * follower replays (pages forgotten at each checkpoint record, each
 * transaction ended at its commit or abort record): the pages it deleted
 * from are kept where the checkpoint would forget them (heap_mirror.h
 * invariant 4: its list pins them) and its rows read whole until its
 * commit, which gives them back; a checkpoint after the commit forgets
 * every page. */
Test(heap_mirror, open_transaction_across_checkpoint, .timeout = 300)
{
    /* A cluster of its own: its checkpoints, in the shared cluster, would
     * give the other tests' pages images where they count on none. */
    struct pgtmp_options o = {0};
    struct pgtmp pg;
    char perr[1024];
    cr_assert_eq(pgtmp_start(&pg, &o, perr, sizeof perr), 0, "%s", perr);
    const char *conninfo = pgtmp_conninfo(&pg);
    conn = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(conn), CONNECTION_OK, "%s", PQerrorMessage(conn));
    PGconn *main_conn = conn, *other = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(other), CONNECTION_OK, "%s", PQerrorMessage(other));
    sql("CREATE TABLE u (id int, s text)");
    sql("INSERT INTO u SELECT i, repeat('u', 60) FROM generate_series(1, 2000) i");
    sql("SELECT pg_create_physical_replication_slot('heap_mirror_open', true, true)");
    sql("CHECKPOINT");
    uint64_t redo = walfiles_lsn(conn, "SELECT redo_lsn FROM pg_control_checkpoint()");
    struct pgwal_relfilenode node = {
        u32_of("SELECT oid FROM pg_tablespace WHERE spcname = 'pg_default'"),
        u32_of("SELECT oid FROM pg_database WHERE datname = current_database()"),
        u32_of("SELECT pg_relation_filenode('u')")};

    /* The delete, open across a checkpoint, then committed. */
    conn = other;
    sql("BEGIN");
    uint32_t xid = u32_of("SELECT txid_current() % 4294967296");
    sql("DELETE FROM u WHERE id <= 500");
    conn = main_conn;
    uint64_t deleted = walfiles_lsn(conn, "SELECT pg_current_wal_insert_lsn()");
    sql("CHECKPOINT");
    conn = other;
    sql("COMMIT");
    PQfinish(other);
    conn = main_conn;
    sql("UPDATE u SET s = 'after' WHERE id = 1900");
    sql("SET synchronous_commit = on; CHECKPOINT");
    uint64_t end = walfiles_lsn(conn, "SELECT pg_current_wal_flush_lsn()");

    struct heap_mirror *m = heap_mirror_new(0);
    cr_assert_not_null(m);
    cr_assert_eq(heap_mirror_follow(m, node), 0);
    struct walfiles w;
    walfiles_open(&w, conn, redo, end);
    struct pgwal_record rec;
    struct heap_mirror_tuple t;
    char err[512];
    int pinned = 0, given_back = 0;
    while (walfiles_next(&w, &rec)) {
        cr_assert_eq(heap_mirror_replay(m, &rec, NULL, NULL, err, sizeof err), 0, "%s", err);
        struct pgwal_xlog x;
        if (rec.rmid == PGWAL_RM_XLOG && pgwal_xlog_parse(&rec, &x, err, sizeof err) == 0 &&
            (x.op == PGWAL_XLOG_CHECKPOINT_ONLINE || x.op == PGWAL_XLOG_CHECKPOINT_SHUTDOWN)) {
            cr_assert_geq(heap_mirror_forget_before(m, x.checkpoint.redo), 0);
            if (rec.lsn > deleted && !given_back) {
                cr_assert_eq(heap_mirror_tuple_at(m, node, 0, 1, &t), 1,
                             "the row deleted by a transaction still open at a checkpoint is "
                             "held whole");
                pinned++;
            }
        }
        struct pgwal_xact xa;
        if (rec.rmid != PGWAL_RM_XACT || pgwal_xact_parse(&rec, &xa, err, sizeof err))
            continue;
        bool commit = xa.op == PGWAL_XACT_COMMIT || xa.op == PGWAL_XACT_COMMIT_PREPARED;
        if (!commit && xa.op != PGWAL_XACT_ABORT && xa.op != PGWAL_XACT_ABORT_PREPARED)
            continue;
        heap_mirror_end(m, &xa.xid, 1, commit);
        if (xa.xid == xid) {
            cr_assert(commit);
            cr_assert_eq(heap_mirror_tuple_at(m, node, 0, 1, &t), 2,
                         "the commit gave the deleted row back");
            given_back++;
        }
    }
    walfiles_close(&w);
    cr_assert_geq(pinned, 1, "a checkpoint came between the delete and its commit");
    cr_assert_eq(given_back, 1);
    cr_assert_eq(heap_mirror_pages(m), 0, "the last checkpoint forgot every page (%zu held)",
                 heap_mirror_pages(m));
    heap_mirror_free(m);
    PQfinish(conn);
    pgtmp_stop(&pg);
}
