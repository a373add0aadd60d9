/* test_serve_pg.c -- straum-serve speaking the PostgreSQL protocol, against
 * PostgreSQL's own answers.
 *
 * One taxi database and store for the whole file; straum-serve in-process
 * with --pg-listen on a free loopback port (and no HTTP). libpq runs the ten
 * seed asks with parameters, text and binary results, prepared and not, and
 * each answer must equal PostgreSQL's over the raw tables (tests/kit/
 * answer.h); every binary value, handed back to PostgreSQL as a binary
 * parameter, must print as the text Straum wrote for it, byte for byte.
 * Then the session statements, a transaction that pins a snapshot while
 * ingest commits, errors with their SQLSTATEs and positions, SCRAM with the
 * token, PQcancel; then the protocol's bad input over a raw socket (garbage,
 * a 2 GiB length, a cut message, a stall, a Parse flood, a row limit of one)
 * while another connection keeps being answered; then psql, psycopg 3 and
 * psycopg2 (tests/e2e/pg_clients.py). */
#include "tests/kit/answer.h"
#include "tests/kit/taxi_asks.h"
#include "serve/serve.h"
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct taxi_db db;
static struct serve_server *server;
static int port;
static char conninfo[256];

static struct serve_server *start_server(const char *token_file)
{
    struct serve_options o = {.store_dir = db.store, .pg_listen = "127.0.0.1:0", .quiet = true,
                              .token_file = token_file, .pg_idle_timeout_s = 600,
                              .connection_timeout_s = 3};
    char err[600];
    struct serve_server *s = serve_start(&o, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    return s;
}

/* The views file's views as PostgreSQL views in the source database (their
 * WITH (buckets = ...) dropped: PostgreSQL has no such option), so that
 * the catalog tools read from Straum can be compared with what they read
 * from PostgreSQL. */
static void create_pg_views(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/bench/taxi_views.sql", STRAUM_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    static char text[16384], sql[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        if (!strncmp(text + i, "WITH (", 6)) {
            while (i < n && text[i] != ')')
                i++;
            i++;
            continue;
        }
        sql[k++] = text[i++];
    }
    sql[k] = '\0';
    PGresult *r = PQexec(db.pg, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s", PQerrorMessage(db.pg));
    PQclear(r);
}

static void setup(void)
{
    taxi_db_create(&db, NULL, 4000);
    create_pg_views();
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    server = start_server(NULL);
    port = serve_pg_port(server);
    cr_assert_gt(port, 0);
    snprintf(conninfo, sizeof conninfo,
             "host=127.0.0.1 port=%d user=grafana dbname=anything sslmode=disable", port);
}

static void teardown(void)
{
    serve_stop(server);
    taxi_db_destroy(&db);
}

TestSuite(serve_pg, .init = setup, .fini = teardown, .timeout = 600);

static PGconn *connect_straum(void)
{
    PGconn *c = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    return c;
}

static PGresult *must(PGconn *c, PGresult *r, ExecStatusType want, const char *what)
{
    cr_assert_eq(PQresultStatus(r), want, "%s: %s %s", what, PQresStatus(PQresultStatus(r)),
                 PQerrorMessage(c));
    return r;
}

static void run(PGconn *c, const char *sql)
{
    PQclear(must(c, PQexec(c, sql), PGRES_COMMAND_OK, sql));
}

static int nparams_of(const struct taxi_ask *a)
{
    int n = 0;
    while (a->params[n])
        n++;
    return n;
}

static void pg_want(const char *sql, struct answer *out)
{
    PGresult *r = PQexec(db.pg, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", sql, PQerrorMessage(db.pg));
    cr_assert_eq(answer_from_pg(r, out), 0);
    PQclear(r);
}

/* Straum's text answer equals PostgreSQL's over the raw tables. */
static void check_equal(const char *what, const char *sql, PGresult *got_res)
{
    struct answer want, got;
    pg_want(sql, &want);
    cr_assert_eq(answer_from_pg(got_res, &got), 0);
    char why[1024];
    bool eq = answer_equal(&want, &got, why, sizeof why);
    answer_free(&want);
    answer_free(&got);
    cr_assert(eq, "%s: %s", what, why);
}

/* Every binary cell, given to PostgreSQL as a binary parameter of its
 * type and printed by PostgreSQL, is the text Straum wrote. */
static void check_binary_equals_text(const char *what, PGresult *bin, PGresult *text)
{
    cr_assert_eq(PQntuples(bin), PQntuples(text), "%s", what);
    cr_assert_eq(PQnfields(bin), PQnfields(text), "%s", what);
    for (int j = 0; j < PQnfields(bin); j++) {
        cr_assert_eq(PQftype(bin, j), PQftype(text, j), "%s", what);
        cr_assert_eq(PQfformat(bin, j), 1, "%s", what);
    }
    for (int i = 0; i < PQntuples(bin); i++)
        for (int j = 0; j < PQnfields(bin); j++) {
            if (PQgetisnull(bin, i, j)) {
                cr_assert(PQgetisnull(text, i, j), "%s: row %d col %d", what, i, j);
                continue;
            }
            Oid type = PQftype(bin, j);
            const char *val = PQgetvalue(bin, i, j);
            int len = PQgetlength(bin, i, j), fmt = 1;
            PGresult *r = PQexecParams(db.pg, "SELECT $1::text", 1, &type, &val, &len, &fmt, 0);
            cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", what, PQerrorMessage(db.pg));
            cr_assert_str_eq(PQgetvalue(r, 0, 0), PQgetvalue(text, i, j),
                             "%s: row %d column %s (type %u): binary reads as %s, text was %s",
                             what, i, PQfname(bin, j), type, PQgetvalue(r, 0, 0),
                             PQgetvalue(text, i, j));
            PQclear(r);
        }
}

Test(serve_pg, libpq_seed_asks_text_binary_prepared_equal_postgresql)
{
    PGconn *c = connect_straum();
    run(c, "SET TimeZone TO 'America/New_York'");
    run(db.pg, "SET TIME ZONE 'America/New_York'");
    for (int i = 0; i < TAXI_NASKS; i++) {
        const struct taxi_ask *a = &TAXI_ASKS[i];
        int n = nparams_of(a);
        PGresult *text = must(c, PQexecParams(c, a->ask, n, NULL, a->params, NULL, NULL, 0),
                              PGRES_TUPLES_OK, a->name);
        check_equal(a->name, a->postgres_sql, text);
        PGresult *bin = must(c, PQexecParams(c, a->ask, n, NULL, a->params, NULL, NULL, 1),
                             PGRES_TUPLES_OK, a->name);
        check_binary_equals_text(a->name, bin, text);
        PQclear(bin);
        char name[16];
        snprintf(name, sizeof name, "seed%d", i);
        PQclear(must(c, PQprepare(c, name, a->ask, 0, NULL), PGRES_COMMAND_OK, a->name));
        PGresult *d = must(c, PQdescribePrepared(c, name), PGRES_COMMAND_OK, a->name);
        cr_assert_eq(PQnparams(d), n, "%s", a->name);
        cr_assert_eq(PQparamtype(d, 0), 1184u, "%s: a bucket edge is timestamptz", a->name);
        cr_assert_eq(PQnfields(d), PQnfields(text));
        for (int j = 0; j < PQnfields(d); j++)
            cr_assert_eq(PQftype(d, j), PQftype(text, j));
        PQclear(d);
        for (int round = 0; round < 3; round++) {
            PGresult *p = must(c, PQexecPrepared(c, name, n, a->params, NULL, NULL, round & 1),
                               PGRES_TUPLES_OK, a->name);
            if (round & 1)
                check_binary_equals_text(a->name, p, text);
            else
                check_equal(a->name, a->postgres_sql, p);
            PQclear(p);
        }
        PQclear(text);
    }
    /* The column types are PostgreSQL's: count int8, sum of numeric
     * numeric, bucket timestamptz, a smallint key its own. */
    PGresult *r = must(c, PQexec(c, "SELECT bucket, payment_type, trips, fare, avg_fare FROM "
                                    "trips WHERE bucket >= '2024-01-17' AND bucket < "
                                    "'2024-01-18' GROUP BY bucket, payment_type"),
                       PGRES_TUPLES_OK, "types");
    PGresult *w = PQexec(db.pg, "SELECT date_trunc('hour', pickup_at), payment_type, count(*), "
                                "sum(fare_amount), avg(fare_amount) FROM yellow_trips "
                                "WHERE pickup_at >= '2024-01-17' AND pickup_at < '2024-01-18' "
                                "GROUP BY 1, 2");
    cr_assert_eq(PQresultStatus(w), PGRES_TUPLES_OK, "%s", PQerrorMessage(db.pg));
    for (int j = 0; j < 5; j++)
        cr_assert_eq(PQftype(r, j), PQftype(w, j), "column %d: %u, PostgreSQL's %u", j,
                     PQftype(r, j), PQftype(w, j));
    check_equal("types", "SELECT date_trunc('hour', pickup_at), payment_type, count(*), "
                         "sum(fare_amount), avg(fare_amount) FROM yellow_trips "
                         "WHERE pickup_at >= '2024-01-17' AND pickup_at < '2024-01-18' "
                         "GROUP BY 1, 2", r);
    PQclear(r);
    PQclear(w);
    PQfinish(c);
}

static void expect_error(PGconn *c, const char *sql, const char *sqlstate, int position)
{
    PGresult *r = PQexec(c, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_FATAL_ERROR, "%s: %s", sql,
                 PQresStatus(PQresultStatus(r)));
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    cr_assert_str_eq(state ? state : "", sqlstate, "%s: %s", sql, PQerrorMessage(c));
    if (position) {
        const char *p = PQresultErrorField(r, PG_DIAG_STATEMENT_POSITION);
        cr_assert_eq(p ? atoi(p) : 0, position, "%s: position %s", sql, p ? p : "none");
    }
    PQclear(r);
}

static char *one(PGconn *c, const char *sql)
{
    PGresult *r = must(c, PQexec(c, sql), PGRES_TUPLES_OK, sql);
    cr_assert_eq(PQntuples(r), 1, "%s", sql);
    char *v = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

Test(serve_pg, session_statements_and_errors)
{
    PGconn *c = connect_straum();
    cr_assert_geq(PQserverVersion(c), 150000, "server_version parses: %d", PQserverVersion(c));
    cr_assert_str_eq(PQparameterStatus(c, "integer_datetimes"), "on");
    cr_assert_str_eq(PQparameterStatus(c, "TimeZone"), "UTC");
    char *v = one(c, "SELECT 1");
    cr_assert_str_eq(v, "1");
    free(v);
    v = one(c, "SELECT version()");
    cr_assert(strstr(v, "PostgreSQL 15.0 (Straum"), "%s", v);
    free(v);
    run(c, "SET TIME ZONE 'Europe/Oslo'");
    cr_assert_str_eq(PQparameterStatus(c, "TimeZone"), "Europe/Oslo");
    v = one(c, "SHOW TimeZone");
    cr_assert_str_eq(v, "Europe/Oslo");
    free(v);
    v = one(c, "SELECT bucket FROM trips WHERE bucket >= '2024-01-17' AND bucket < "
               "'2024-01-18' GROUP BY bucket ORDER BY bucket LIMIT 1");
    cr_assert(strlen(v) == 22 && !strncmp(v, "2024-01-17 ", 11) && !strcmp(v + 19, "+01"),
              "a bucket in the session zone, as PostgreSQL writes it: %s", v);
    free(v);
    run(c, "SET extra_float_digits = 3");
    run(c, "SET application_name = 'panel'");
    run(c, "SET search_path TO public");
    run(c, "SET DateStyle = 'ISO, MDY'");
    run(c, "RESET TimeZone");
    v = one(c, "SELECT current_setting('TimeZone')");
    cr_assert_str_eq(v, "UTC");
    free(v);
    expect_error(c, "SET work_mem = '1GB'", "0A000", 0);
    expect_error(c, "SET TimeZone = 'Mars/Olympus'", "22023", 0);
    expect_error(c, "SET DateStyle = 'German'", "0A000", 0);
    /* Several statements in one message; an empty one. */
    PGresult *r = PQexec(c, "SET TimeZone = 'UTC'; SELECT 1; SHOW server_encoding");
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(c));
    cr_assert_str_eq(PQgetvalue(r, 0, 0), "UTF8");
    PQclear(r);
    r = PQexec(c, "");
    cr_assert_eq(PQresultStatus(r), PGRES_EMPTY_QUERY);
    PQclear(r);

    /* Errors: SQLSTATE and the 1-based position psql draws its caret at. */
    expect_error(c, "SELECT trips FROM nosuch WHERE bucket >= '2024-01-01' AND bucket < '2024-02-01'",
                 "42P01", 0);
    expect_error(c, "SELECT trips, bogus FROM trips WHERE bucket >= '2024-01-01' AND bucket < "
                    "'2024-02-01'",
                 "42703", 15);
    expect_error(c, "SELECT 1; SELECT trips FROM trips WHERE bucket >= '2024-01-01' AND bucket < "
                    "'2024-02-01' AND payment_type = 1 AND", "42601", 0);
    expect_error(c, "SELECT trips FROM trips WHERE bucket >= 'soon' AND bucket < '2024-02-01'",
                 "22007", 0);
    r = PQexecParams(c, "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2 AND "
                        "payment_type = $3",
                     3, NULL, (const char *[]){"2024-01-01", "2024-02-01", "card"}, NULL, NULL, 0);
    cr_assert_eq(PQresultStatus(r), PGRES_FATAL_ERROR);
    cr_assert_str_eq(PQresultErrorField(r, PG_DIAG_SQLSTATE), "22P02", "%s", PQerrorMessage(c));
    PQclear(r);
    /* A declared type that cannot stand for the inferred one. */
    r = PQprepare(c, "", "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2", 2,
                  (Oid[]){16, 0});
    cr_assert_eq(PQresultStatus(r), PGRES_FATAL_ERROR);
    cr_assert_str_eq(PQresultErrorField(r, PG_DIAG_SQLSTATE), "42804", "%s", PQerrorMessage(c));
    PQclear(r);
    expect_error(c, "SELECT trips FROM trips WHERE bucket >= '2024-01-01' AND bucket < "
                    "'2024-02-01' LIMIT 1 FOR UPDATE", "42601", 0);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "errors never drop the connection");
    v = one(c, "SELECT 1");
    free(v);

    /* Transactions: an error fails the block until ROLLBACK. */
    run(c, "BEGIN");
    cr_assert_eq(PQtransactionStatus(c), PQTRANS_INTRANS);
    expect_error(c, "SELECT trips FROM nosuch WHERE bucket >= '2024-01-01' AND bucket < "
                    "'2024-02-01'", "42P01", 0);
    cr_assert_eq(PQtransactionStatus(c), PQTRANS_INERROR);
    expect_error(c, "SELECT 1", "25P02", 0);
    run(c, "ROLLBACK");
    cr_assert_eq(PQtransactionStatus(c), PQTRANS_IDLE);
    expect_error(c, "START TRANSACTION READ WRITE", "25006", 0);
    run(c, "START TRANSACTION READ ONLY");
    run(c, "COMMIT");
    PQclear(must(c, PQprepare(c, "named", "SELECT 1", 0, NULL), PGRES_COMMAND_OK, "prepare"));
    run(c, "DEALLOCATE named");
    r = PQdescribePrepared(c, "named");
    cr_assert_eq(PQresultStatus(r), PGRES_FATAL_ERROR, "DEALLOCATE freed it");
    PQclear(r);
    run(c, "DISCARD ALL");

    /* PQcancel reaches the server and the connection goes on. */
    PGcancel *k = PQgetCancel(c);
    char err[256];
    cr_assert_eq(PQcancel(k, err, sizeof err), 1, "%s", err);
    PQfreeCancel(k);
    v = one(c, "SELECT 1");
    free(v);
    PQfinish(c);
}

Test(serve_pg, a_transaction_pins_one_snapshot)
{
    PGconn *c = connect_straum();
    const char *ask = "SELECT trips FROM trips WHERE bucket >= '2000-01-01' AND bucket < '2030-01-01'";
    run(c, "BEGIN READ ONLY");
    char *before = one(c, ask);
    taxi_db_add_trips(&db, 500, 0.25);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    char *inside = one(c, ask);
    cr_assert_str_eq(inside, before, "the same snapshot inside the transaction");
    run(c, "COMMIT");
    char *after = one(c, ask);
    cr_assert_eq(atoll(after), atoll(before) + 500, "after COMMIT: %s, before %s", after, before);
    free(before);
    free(inside);
    free(after);
    PQfinish(c);
}

Test(serve_pg, scram_with_the_token)
{
    char path[128];
    snprintf(path, sizeof path, "%s.token", db.store);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("s3cret-token\n", f);
    fclose(f);
    cr_assert_eq(chmod(path, 0600), 0); /* serve refuses a token others may read */
    struct serve_server *s = start_server(path);
    char ci[300];
    snprintf(ci, sizeof ci, "host=127.0.0.1 port=%d user=u dbname=d sslmode=disable password=s3cret-token",
             serve_pg_port(s));
    PGconn *c = PQconnectdb(ci);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    PGresult *r = PQexec(c, "SELECT 1");
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    PQclear(r);
    PQfinish(c);
    snprintf(ci, sizeof ci, "host=127.0.0.1 port=%d user=u dbname=d sslmode=disable password=wrong",
             serve_pg_port(s));
    c = PQconnectdb(ci);
    cr_assert_eq(PQstatus(c), CONNECTION_BAD);
    cr_assert(strstr(PQerrorMessage(c), "password authentication failed"), "%s",
              PQerrorMessage(c));
    PQfinish(c);
    /* sslmode=require gets libpq's refusal: the server answered 'N'. */
    snprintf(ci, sizeof ci, "host=127.0.0.1 port=%d user=u sslmode=require password=s3cret-token",
             serve_pg_port(s));
    c = PQconnectdb(ci);
    cr_assert_eq(PQstatus(c), CONNECTION_BAD);
    cr_assert(strstr(PQerrorMessage(c), "does not support SSL"), "%s", PQerrorMessage(c));
    PQfinish(c);
    serve_stop(s);
    unlink(path);
}

/* ---- The protocol over a raw socket ------------------------------------------------ */

static int raw_connect(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void raw_send(int fd, const void *p, size_t n)
{
    cr_assert_eq(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Reads until the server closes or timeout_ms pass; the bytes read. */
static size_t raw_read_all(int fd, unsigned char *buf, size_t cap, int timeout_ms, bool *closed)
{
    size_t n = 0;
    *closed = false;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        int left = timeout_ms - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0)
            return n;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, left) <= 0)
            return n;
        ssize_t got = recv(fd, buf + n, cap - n, 0);
        if (got <= 0) {
            *closed = true;
            return n;
        }
        n += (size_t)got;
        if (n == cap)
            return n;
    }
}

/* A startup packet for user "raw". */
static void raw_startup(int fd)
{
    unsigned char p[64];
    size_t n = 8;
    put32(p + 4, 196608);
    memcpy(p + n, "user\0raw\0\0", 10);
    n += 10;
    put32(p, (uint32_t)n);
    raw_send(fd, p, n);
    unsigned char buf[4096];
    size_t got = 0;
    /* Up to ReadyForQuery ('Z', 5, 'I'). */
    for (int i = 0; i < 100 && !(got >= 6 && buf[got - 6] == 'Z'); i++) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        cr_assert_gt(poll(&pf, 1, 5000), 0, "no ReadyForQuery");
        ssize_t r = recv(fd, buf + got, sizeof buf - got, 0);
        cr_assert_gt(r, 0);
        got += (size_t)r;
    }
    cr_assert(got >= 6 && buf[got - 6] == 'Z', "startup ends with ReadyForQuery");
}

/* Appends a message of type t with body to out. */
static size_t msg(unsigned char *out, char t, const void *body, size_t len)
{
    out[0] = (unsigned char)t;
    put32(out + 1, (uint32_t)(len + 4));
    memcpy(out + 5, body, len);
    return len + 5;
}

/* Another connection is answered meanwhile. */
static void others_answered(void)
{
    PGconn *c = connect_straum();
    char *v = one(c, "SELECT trips FROM trips WHERE bucket >= '2000-01-01' AND bucket < '2030-01-01'");
    cr_assert_gt(atoll(v), 0);
    free(v);
    PQfinish(c);
}

/* Every hourly cell of six months, each merging its fare counts: some
 * tens of milliseconds at 200,000 trips. */
#define HEAVY_ASK                                                                          \
    "SELECT bucket, median_fare, p99_fare FROM trips WHERE bucket >= '2024-01-01' AND "    \
    "bucket < '2024-07-01' GROUP BY bucket ORDER BY median_fare DESC LIMIT 1"

/* A simple query of n HEAVY_ASKs (n at most 100), in a static buffer. */
static const char *heavy_asks(int n)
{
    static char many[100 * (sizeof HEAVY_ASK + 1) + 1];
    size_t at = 0;
    for (int i = 0; i < n && i < 100; i++)
        at += (size_t)snprintf(many + at, sizeof many - at, "%s;", HEAVY_ASK);
    return many;
}

/* CancelRequest stops an ask inside its scan (the engine reads the flag
 * with its time budget, every 1024 cells): PQcancel while a simple query
 * of costly asks runs is answered 57014, the connection goes on, and other
 * connections are answered meanwhile. The cancels repeat until the answer
 * comes, since one that lands before an ask begins is for no ask (as in
 * PostgreSQL, a cancel while idle does nothing). */
Test(serve_pg, cancel_stops_a_running_ask, .timeout = 600)
{
    taxi_db_add_trips(&db, 200000, 0.3);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    PGconn *c = connect_straum();
    enum { ASKS = 40 };
    const char *many = heavy_asks(ASKS);
    PQclear(must(c, PQexec(c, HEAVY_ASK), PGRES_TUPLES_OK, HEAVY_ASK));
    cr_assert_eq(PQsendQuery(c, many), 1, "%s", PQerrorMessage(c));
    PGcancel *k = PQgetCancel(c);
    PGresult *r = NULL;
    int cancels = 0, answered = 0;
    bool cancelled = false, done = false;
    for (int i = 0; i < 60000 && !done; i++) {
        char err[256];
        cr_assert_eq(PQcancel(k, err, sizeof err), 1, "%s", err);
        cancels++;
        struct pollfd p = {PQsocket(c), POLLIN, 0};
        if (poll(&p, 1, 1) > 0)
            cr_assert_eq(PQconsumeInput(c), 1, "%s", PQerrorMessage(c));
        while (!done && !PQisBusy(c)) {
            if (!(r = PQgetResult(c))) {
                done = true;
                break;
            }
            if (PQresultStatus(r) == PGRES_TUPLES_OK) {
                answered++;
            } else {
                const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
                cr_assert_str_eq(state ? state : "", "57014", "%s", PQerrorMessage(c));
                cancelled = true;
            }
            PQclear(r);
        }
        if (i % 16 == 0)
            others_answered();
    }
    PQfreeCancel(k);
    cr_assert(done, "no end after %d cancels", cancels);
    cr_assert(cancelled, "57014 among the %d asks (%d answered, %d cancels)", ASKS, answered,
              cancels);
    cr_assert_lt(answered, ASKS);
    /* The connection goes on: an ask answers whole. */
    PQclear(must(c, PQexec(c, HEAVY_ASK), PGRES_TUPLES_OK, HEAVY_ASK));
    char *v = one(c, "SELECT 1");
    free(v);
    PQfinish(c);
    others_answered();
}

/* 200,000 more trips (so HEAVY_ASK is heavy), and the server restarted
 * with one PostgreSQL worker. */
static void serve_heavy_with_one_worker(void)
{
    taxi_db_add_trips(&db, 200000, 0.3);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    serve_stop(server);
    struct serve_options o = {.store_dir = db.store, .pg_listen = "127.0.0.1:0", .quiet = true,
                              .pg_idle_timeout_s = 600, .connection_timeout_s = 3,
                              .threads = 1};
    char err[600];
    server = serve_start(&o, err, sizeof err);
    cr_assert_not_null(server, "%s", err);
    port = serve_pg_port(server);
    snprintf(conninfo, sizeof conninfo,
             "host=127.0.0.1 port=%d user=grafana dbname=anything sslmode=disable", port);
}

/* A heavy ask holds no other connection: with one worker (--threads 1),
 * a simple query of costly asks runs for seconds on one connection while
 * another connection's light asks are answered meanwhile, the worker busy
 * on the first replaced in the pool (pg_server.c P5). Without that, the
 * second connection's first ask waits for the whole query. */
Test(serve_pg, a_heavy_ask_holds_no_other_connection, .timeout = 600)
{
    serve_heavy_with_one_worker();
    PGconn *light = connect_straum(), *heavy = connect_straum();
    enum { ASKS = 100 };
    cr_assert_eq(PQsendQuery(heavy, heavy_asks(ASKS)), 1, "%s", PQerrorMessage(heavy));
    int answered_meanwhile = 0, results = 0;
    bool done = false;
    while (!done) {
        char *v = one(light, "SELECT trips FROM trips WHERE bucket >= '2000-01-01' AND "
                             "bucket < '2030-01-01'");
        cr_assert_gt(atoll(v), 0);
        free(v);
        cr_assert_eq(PQconsumeInput(heavy), 1, "%s", PQerrorMessage(heavy));
        if (!PQisBusy(heavy))
            break; /* its answers have come: what was answered before counts */
        answered_meanwhile++;
    }
    PGresult *r;
    while ((r = PQgetResult(heavy))) {
        cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(heavy));
        results++;
        PQclear(r);
    }
    cr_assert_eq(results, ASKS);
    cr_assert_geq(answered_meanwhile, 10,
                  "light asks answered while the heavy query ran: %d", answered_meanwhile);
    PQfinish(light);
    PQfinish(heavy);
}

/* The events of a worker's batch behind a heavy ask are handed to another
 * worker (pg_server.c P5). With one worker, a blocker ask keeps it busy
 * while a query of heavy asks and then light asks on other connections
 * arrive, so the light asks' events come in one batch with the heavy
 * query's, after it (in some round at least: how the kernel splits events
 * into batches is its own). Every light ask must be answered while the
 * heavy query still runs; without the hand-over they wait for all of it. */
Test(serve_pg, asks_behind_a_heavy_one_in_a_batch_are_handed_over, .timeout = 600)
{
    serve_heavy_with_one_worker();
    enum { LIGHT = 8, ROUNDS = 4, HEAVY = 30 };
    PGconn *blocker = connect_straum(), *heavy = connect_straum(), *light[LIGHT];
    for (int i = 0; i < LIGHT; i++)
        light[i] = connect_straum();
    const char *light_ask =
        "SELECT trips FROM trips WHERE bucket >= '2000-01-01' AND bucket < '2030-01-01'";
    for (int round = 0; round < ROUNDS; round++) {
        cr_assert_eq(PQsendQuery(blocker, HEAVY_ASK), 1, "%s", PQerrorMessage(blocker));
        cr_assert_eq(PQsendQuery(heavy, heavy_asks(HEAVY)), 1, "%s", PQerrorMessage(heavy));
        for (int i = 0; i < LIGHT; i++)
            cr_assert_eq(PQsendQuery(light[i], light_ask), 1, "%s", PQerrorMessage(light[i]));
        for (int i = 0; i < LIGHT; i++) {
            PGresult *r = PQgetResult(light[i]);
            cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(light[i]));
            cr_assert_gt(atoll(PQgetvalue(r, 0, 0)), 0);
            PQclear(r);
            cr_assert_null(PQgetResult(light[i]));
        }
        /* The heavy answers come whole by the time the light ones do only
         * if the light ones waited for them. */
        int before = 0;
        cr_assert_eq(PQconsumeInput(heavy), 1, "%s", PQerrorMessage(heavy));
        while (!PQisBusy(heavy)) {
            PGresult *r = PQgetResult(heavy);
            if (!r)
                break;
            cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(heavy));
            before++;
            PQclear(r);
        }
        cr_assert_lt(before, HEAVY,
                     "round %d: the light asks were answered after all %d heavy ones", round,
                     HEAVY);
        PGresult *r;
        while ((r = PQgetResult(heavy))) {
            cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(heavy));
            PQclear(r);
        }
        while ((r = PQgetResult(blocker))) {
            cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(blocker));
            PQclear(r);
        }
    }
    for (int i = 0; i < LIGHT; i++)
        PQfinish(light[i]);
    PQfinish(heavy);
    PQfinish(blocker);
}

static bool has_error(const unsigned char *buf, size_t n, const char *sqlstate)
{
    for (size_t i = 0; i + 7 < n; i++)
        if (buf[i] == 'C' && !memcmp(buf + i + 1, sqlstate, 5) && buf[i + 6] == 0)
            return true;
    return false;
}

Test(serve_pg, bad_input_is_refused_while_others_are_answered)
{
    unsigned char buf[1 << 16];
    bool closed;
    /* Garbage for a startup packet. */
    int fd = raw_connect();
    raw_send(fd, "GET / HTTP/1.1\r\n\r\n", 18);
    size_t n = raw_read_all(fd, buf, sizeof buf, 5000, &closed);
    cr_assert(closed && n > 0 && buf[0] == 'E', "garbage: an ErrorResponse, then closed");
    close(fd);
    others_answered();

    /* A 2 GiB length field after startup. */
    fd = raw_connect();
    raw_startup(fd);
    unsigned char m[16] = {'Q'};
    put32(m + 1, 0x80000000u);
    raw_send(fd, m, 5);
    n = raw_read_all(fd, buf, sizeof buf, 5000, &closed);
    cr_assert(closed && has_error(buf, n, "54000"), "a 2 GiB message: 54000, closed");
    close(fd);

    /* A message cut off mid-way, and a client that stalls: both cut after
     * the message timeout (3 s here), not held. */
    fd = raw_connect();
    raw_startup(fd);
    m[0] = 'Q';
    put32(m + 1, 100);
    raw_send(fd, m, 5);
    raw_send(fd, "SELECT", 6);
    others_answered();
    n = raw_read_all(fd, buf, sizeof buf, 10000, &closed);
    cr_assert(closed, "a stalled message is cut");
    close(fd);

    /* A stalled startup. */
    fd = raw_connect();
    raw_send(fd, "\0\0", 2);
    n = raw_read_all(fd, buf, sizeof buf, 10000, &closed);
    cr_assert(closed, "a stalled startup is cut");
    close(fd);

    /* A flood of named Parse messages: refused past the bound, answered. */
    fd = raw_connect();
    raw_startup(fd);
    static unsigned char out[1 << 20];
    size_t o = 0;
    for (int i = 0; i < 1100; i++) {
        char body[64];
        int k = snprintf(body, sizeof body, "s%d", i) + 1;
        memcpy(body + k, "SELECT 1\0\0\0", 11);
        o += msg(out + o, 'P', body, (size_t)k + 11);
    }
    o += msg(out + o, 'S', "", 0);
    raw_send(fd, out, o);
    n = raw_read_all(fd, buf, sizeof buf, 5000, &closed);
    cr_assert(!closed && has_error(buf, n, "53400"), "a Parse flood: 53400, connection kept");
    close(fd);

    /* Execute with a row limit of one, more times than the answer has rows. */
    const char q[] = "SELECT bucket, trips FROM trips WHERE bucket >= '2024-01-17' AND bucket < "
                     "'2024-01-18' GROUP BY bucket";
    PGconn *pc = connect_straum();
    PGresult *all = must(pc, PQexec(pc, q), PGRES_TUPLES_OK, q);
    int want = PQntuples(all);
    PQclear(all);
    PQfinish(pc);
    cr_assert_gt(want, 1);
    fd = raw_connect();
    raw_startup(fd);
    o = 0;
    unsigned char body[512];
    body[0] = 0;
    memcpy(body + 1, q, sizeof q);
    memset(body + 1 + sizeof q, 0, 2);
    o += msg(out + o, 'P', body, 1 + sizeof q + 2);
    o += msg(out + o, 'B', "\0\0\0\0\0\0\0\0", 8);
    for (int i = 0; i < 30; i++)
        o += msg(out + o, 'E', "\0\0\0\0\1", 5);
    o += msg(out + o, 'S', "", 0);
    raw_send(fd, out, o);
    n = raw_read_all(fd, buf, sizeof buf, 3000, &closed);
    int rows = 0, suspended = 0, complete = 0;
    for (size_t i = 0; i + 5 <= n;) {
        uint32_t len = (uint32_t)buf[i + 1] << 24 | (uint32_t)buf[i + 2] << 16 |
                       (uint32_t)buf[i + 3] << 8 | buf[i + 4];
        rows += buf[i] == 'D';
        suspended += buf[i] == 's';
        complete += buf[i] == 'C';
        i += 1 + len;
    }
    cr_assert_eq(rows, want, "one row per Execute, %d in all (got %d)", want, rows);
    cr_assert_eq(suspended, want - 1);
    cr_assert_geq(complete, 1);
    close(fd);
    others_answered();
}

/* A client that keeps sending, each send ending inside its next message,
 * is answered for longer than the message timeout (3 s here): the clock
 * of a message begun starts when it began, not when the connection's
 * first incomplete message did. */
Test(serve_pg, a_steady_pipeline_is_never_cut)
{
    int fd = raw_connect();
    raw_startup(fd);
    unsigned char q[64];
    size_t qn = msg(q, 'Q', "SELECT 1", 9);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    raw_send(fd, q, 7); /* the first message begun */
    int answered = 0;
    double elapsed = 0;
    while (elapsed < 4.5) {
        unsigned char out[128];
        memcpy(out, q + 7, qn - 7); /* its rest, and the next one begun */
        memcpy(out + (qn - 7), q, 7);
        raw_send(fd, out, qn);
        /* Up to this message's ReadyForQuery. */
        unsigned char buf[4096];
        size_t got = 0;
        bool ready = false;
        while (!ready) {
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            cr_assert_gt(poll(&pf, 1, 5000), 0, "no answer after %d answered", answered);
            ssize_t r = recv(fd, buf + got, sizeof buf - got, 0);
            cr_assert_gt(r, 0, "cut after %.1f s, %d answered", elapsed, answered);
            got += (size_t)r;
            for (size_t i = 0; i + 5 <= got;) {
                uint32_t len = (uint32_t)buf[i + 1] << 24 | (uint32_t)buf[i + 2] << 16 |
                               (uint32_t)buf[i + 3] << 8 | buf[i + 4];
                if (i + 1 + len > got)
                    break;
                cr_assert_neq(buf[i], 'E', "an error after %d answered", answered);
                ready |= buf[i] == 'Z';
                i += 1 + len;
            }
        }
        answered++;
        clock_gettime(CLOCK_MONOTONIC, &t);
        elapsed = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
    }
    cr_assert_gt(answered, 10);
    close(fd);
}

/* ---- Other clients --------------------------------------------------------------------- */

Test(serve_pg, psql)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "PGTZ=UTC psql -X -A -t \"%s\" -c \"SET TimeZone TO 'America/New_York'\" "
             "-c \"SELECT bucket, trips FROM trips WHERE bucket >= '2024-01-17' AND bucket < "
             "'2024-01-18' GROUP BY bucket ORDER BY bucket LIMIT 1\" 2>&1",
             conninfo);
    FILE *p = popen(cmd, "r");
    char out[4096] = "";
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    cr_assert_eq(pclose(p), 0, "%s", out);
    cr_assert(!strncmp(out, "SET\n2024-01-17 ", 15) && !strncmp(out + 15 + 8, "-05|", 4), "%s",
              out);
    snprintf(cmd, sizeof cmd,
             "psql -X \"%s\" -c \"SELECT trips, bogus FROM trips WHERE bucket >= '2024-01-01' "
             "AND bucket < '2024-02-01'\" 2>&1", conninfo);
    p = popen(cmd, "r");
    n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    cr_assert_neq(pclose(p), 0);
    cr_assert(strstr(out, "LINE 1: SELECT trips, bogus FROM"), "%s", out);
    char caret[40];
    snprintf(caret, sizeof caret, "\n%*s^", 8 + 14, ""); /* "LINE 1: " and "SELECT trips, " */
    cr_assert(strstr(out, caret), "the caret under bogus: %s", out);
}

/* psql's \\dv and \\d (its own catalog queries, psql 15's) print the same
 * from Straum as from PostgreSQL holding the same views: names, columns
 * and types, owner (Straum's is the session user: connected as
 * PostgreSQL's). */
static void psql_out(const char *conn, const char *meta, char *out, size_t cap)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "psql -X -P pager=off \"%s\" -c '%s' 2>&1", conn, meta);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    cr_assert_eq(pclose(p), 0, "psql %s: %s", meta, out);
}

Test(serve_pg, psql_describes_the_views)
{
    char straum[256];
    snprintf(straum, sizeof straum, "host=127.0.0.1 port=%d user=%s dbname=%s sslmode=disable",
             port, PQuser(db.pg), PQdb(db.pg));
    static const char *const metas[] = {"\\dv", "\\d trips", "\\d dropoffs", "\\dv trip*",
                                        "\\d public.trips", "\\dv nosuch"};
    for (size_t i = 0; i < sizeof metas / sizeof *metas; i++) {
        static char want[8192], got[8192];
        psql_out(db.conninfo, metas[i], want, sizeof want);
        psql_out(straum, metas[i], got, sizeof got);
        cr_assert_str_eq(got, want, "%s", metas[i]);
    }
    /* \\d+: the columns with their storage print the same; the
     * definition is the views file's SELECT (PostgreSQL's is its deparse
     * of it). */
    static char want[8192], got[8192];
    psql_out(db.conninfo, "\\d+ trips", want, sizeof want);
    psql_out(straum, "\\d+ trips", got, sizeof got);
    char *wdef = strstr(want, "View definition:"), *gdef = strstr(got, "View definition:");
    cr_assert(wdef && gdef, "%s", got);
    cr_assert_eq(gdef - got, wdef - want, "\\d+ trips:\n%s\nPostgreSQL:\n%s", got, want);
    cr_assert(!strncmp(got, want, (size_t)(wdef - want)), "\\d+ trips:\n%s\nPostgreSQL:\n%s", got,
              want);
    cr_assert(strstr(gdef, "View definition:\n SELECT date_bin('1 hour', trips.pickup_at"), "%s",
              gdef);
    /* Not vacuous: the answers hold the views and their typed columns. */
    static char out[8192];
    psql_out(straum, "\\dv", out, sizeof out);
    cr_assert(strstr(out, " public | dropoffs | view |") && strstr(out, " public | trips    | view |"),
              "%s", out);
    psql_out(straum, "\\d trips", out, sizeof out);
    cr_assert(strstr(out, "View \"public.trips\"") &&
                  strstr(out, " bucket         | timestamp with time zone |") &&
                  strstr(out, " pu_location_id | integer                  |") &&
                  strstr(out, " borough        | text                     |") &&
                  strstr(out, " payment_type   | smallint                 |") &&
                  strstr(out, " trips          | bigint                   |") &&
                  strstr(out, " median_fare    | numeric                  |"),
              "%s", out);
}

/* The statements Grafana's PostgreSQL query builder sends for its schema,
 * table and column pickers (postgresMetaQuery.ts), and plain
 * information_schema queries, answer as PostgreSQL answers them. */
enum { ROWS, NO_ROWS };
/* PostgreSQL's rows but the raw tables' (a first column naming one), in
 * order, against Straum's; want_rows: whether there must be some. */
static void same_rows(PGconn *st, const char *sql, int want_rows)
{
    PGresult *w = PQexec(db.pg, sql), *g = PQexec(st, sql);
    cr_assert_eq(PQresultStatus(w), PGRES_TUPLES_OK, "%s: %s", sql, PQerrorMessage(db.pg));
    cr_assert_eq(PQresultStatus(g), PGRES_TUPLES_OK, "%s: %s", sql, PQerrorMessage(st));
    cr_assert_eq(PQnfields(g), PQnfields(w), "%s", sql);
    int rows[64], n = 0;
    for (int r = 0; r < PQntuples(w) && n < 64; r++)
        if (strcmp(PQgetvalue(w, r, 0), "yellow_trips") && strcmp(PQgetvalue(w, r, 0), "taxi_zones"))
            rows[n++] = r;
    cr_assert_eq(PQntuples(g), n, "%s: %d rows, PostgreSQL %d", sql, PQntuples(g), n);
    cr_assert_eq(n > 0, want_rows == ROWS, "%s: %d rows", sql, n);
    for (int f = 0; f < PQnfields(w); f++) {
        cr_assert_str_eq(PQfname(g, f), PQfname(w, f), "%s", sql);
        for (int r = 0; r < n; r++) {
            cr_assert_eq(PQgetisnull(g, r, f), PQgetisnull(w, rows[r], f), "%s (%d, %d)", sql, r, f);
            cr_assert_str_eq(PQgetvalue(g, r, f), PQgetvalue(w, rows[r], f), "%s (%d, %d): %s, PostgreSQL %s",
                             sql, r, f, PQgetvalue(g, r, f), PQgetvalue(w, rows[r], f));
        }
    }
    PQclear(w);
    PQclear(g);
}

static const char *const SEARCH_PATH_SCHEMAS =
    "quote_ident(table_schema) IN (SELECT CASE WHEN trim(s[i]) = '\"$user\"' THEN user ELSE "
    "trim(s[i]) END FROM generate_series(array_lower(string_to_array(current_setting("
    "'search_path'),','),1), array_upper(string_to_array(current_setting('search_path'),','),1)) "
    "as i, string_to_array(current_setting('search_path'),',') s)";

Test(serve_pg, grafana_and_information_schema)
{
    PGconn *c = connect_straum();
    char sql[4096];
    same_rows(c, "SELECT schema_name AS \"name\" FROM information_schema.schemata WHERE "
                 "schema_name NOT IN ('information_schema', 'pg_catalog', 'pg_toast', "
                 "'_timescaledb_cache', '_timescaledb_catalog', '_timescaledb_internal', "
                 "'_timescaledb_config', 'timescaledb_information', 'timescaledb_experimental') "
                 "ORDER BY schema_name", ROWS);
    /* The tables picker (PostgreSQL lists the raw tables too: same_rows
     * leaves them out). */
    same_rows(c, "SELECT quote_ident(table_name) AS \"table\" FROM information_schema.tables "
                 "WHERE quote_ident(table_schema) = 'public' ORDER BY 1", ROWS);
    snprintf(sql, sizeof sql,
             "SELECT CASE WHEN %s THEN quote_ident(table_name) ELSE quote_ident(table_schema) || "
             "'.' || quote_ident(table_name) END AS \"table\" FROM information_schema.tables "
             "WHERE quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog', "
             "'_timescaledb_cache', '_timescaledb_catalog', '_timescaledb_internal', "
             "'_timescaledb_config', 'timescaledb_information', 'timescaledb_experimental') "
             "ORDER BY CASE WHEN %s THEN 0 ELSE 1 END, 1",
             SEARCH_PATH_SCHEMAS, SEARCH_PATH_SCHEMAS);
    same_rows(c, sql, ROWS);
    /* The columns picker, for a view named bare. */
    snprintf(sql, sizeof sql,
             "SELECT quote_ident(column_name) AS \"column\", data_type AS \"type\" FROM "
             "information_schema.columns WHERE CASE WHEN array_length(parse_ident('trips'),1) = 2 "
             "THEN quote_ident(table_schema) = (parse_ident('trips'))[1] AND "
             "quote_ident(table_name) = (parse_ident('trips'))[2] ELSE quote_ident(table_name) = "
             "'trips' AND %s END",
             SEARCH_PATH_SCHEMAS);
    same_rows(c, sql, ROWS);
    same_rows(c, "SELECT table_schema, table_name, table_type FROM information_schema.tables "
                 "WHERE table_schema = 'public' AND table_type = 'VIEW' ORDER BY table_name", ROWS);
    same_rows(c, "SELECT column_name, data_type, ordinal_position, is_nullable, udt_name, "
                 "numeric_precision, numeric_precision_radix, numeric_scale, datetime_precision "
                 "FROM information_schema.columns WHERE table_schema = 'public' AND table_name = "
                 "'dropoffs' ORDER BY ordinal_position", ROWS);
    same_rows(c, "SELECT column_name FROM information_schema.columns WHERE table_name = 'nosuch'",
              NO_ROWS);
    same_rows(c, "SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'", NO_ROWS);
    /* A panel's query as Grafana sends it: $__timeFilter(bucket) expanded
     * to BETWEEN and RFC 3339 instants, the time column aliased "time". */
    const char *panel = "SELECT bucket AS time, trips FROM trips WHERE bucket BETWEEN "
                        "'2024-01-17T00:00:00Z' AND '2024-01-18T00:00:00Z' GROUP BY bucket "
                        "ORDER BY bucket";
    PGresult *pr = must(c, PQexec(c, panel), PGRES_TUPLES_OK, panel);
    cr_assert_str_eq(PQfname(pr, 0), "time");
    check_equal("panel", "SELECT date_bin('1 hour', pickup_at, timestamptz 'epoch') AS time, "
                         "count(*) AS trips FROM yellow_trips WHERE date_bin('1 hour', pickup_at, "
                         "timestamptz 'epoch') BETWEEN '2024-01-17T00:00:00Z' AND "
                         "'2024-01-18T00:00:00Z' GROUP BY 1 ORDER BY 1",
                pr);
    PQclear(pr);
    /* The same over the extended protocol, with binary results. */
    const char *q = "SELECT attname, attnum, atttypid FROM pg_catalog.pg_attribute WHERE attrelid = "
                    "'trips'::regclass AND attnum > 0 ORDER BY attnum";
    PGresult *r = must(c, PQexecParams(c, q, 0, NULL, NULL, NULL, NULL, 1), PGRES_TUPLES_OK, q);
    PGresult *w = must(db.pg, PQexecParams(db.pg, q, 0, NULL, NULL, NULL, NULL, 1),
                       PGRES_TUPLES_OK, q);
    cr_assert_eq(PQntuples(r), PQntuples(w));
    cr_assert_gt(PQntuples(r), 5);
    for (int i = 0; i < PQntuples(r); i++)
        for (int f = 0; f < 2; f++) {
            cr_assert_eq(PQgetlength(r, i, f), PQgetlength(w, i, f), "(%d, %d)", i, f);
            cr_assert(!memcmp(PQgetvalue(r, i, f), PQgetvalue(w, i, f), PQgetlength(r, i, f)),
                      "(%d, %d)", i, f);
        }
    PQclear(r);
    PQclear(w);
    /* A catalog relation Straum does not answer, a column it cannot read:
     * an error at the place, and the connection goes on. */
    expect_error(c, "SELECT proname FROM pg_catalog.pg_proc", "0A000", 21);
    expect_error(c, "SELECT count(*) FROM information_schema.tables", "0A000", 8);
    char *v = one(c, "SELECT 1");
    free(v);
    PQfinish(c);
}

/* The seed asks as JSON, for the clients in other languages. */
static void write_asks(const char *path)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("[", f);
    for (int i = 0; i < TAXI_NASKS; i++) {
        const struct taxi_ask *a = &TAXI_ASKS[i];
        const char *fields[3] = {a->name, a->postgres_sql, a->ask};
        fputs(i ? ",\n{" : "{", f);
        static const char *const keys[3] = {"name", "sql", "ask"};
        for (int k = 0; k < 3; k++) {
            fprintf(f, "\"%s\": \"", keys[k]);
            for (const char *p = fields[k]; *p; p++)
                fprintf(f, *p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
            fputs("\", ", f);
        }
        fputs("\"params\": [", f);
        for (int k = 0; a->params[k]; k++)
            fprintf(f, "%s\"%s\"", k ? ", " : "", a->params[k]);
        fputs("]}", f);
    }
    fputs("]\n", f);
    fclose(f);
}

Test(serve_pg, python_psycopg_and_psycopg2, .timeout = 300)
{
    char asks[128];
    snprintf(asks, sizeof asks, "%s.asks.json", db.store);
    write_asks(asks);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tests/e2e/pg_clients.py '%s' '%s' '%s' 2>&1",
             STRAUM_SOURCE_DIR, conninfo, db.conninfo, asks);
    FILE *p = popen(cmd, "r");
    static char out[1 << 16];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int rc = pclose(p);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "psycopg: 10 seed asks equal"), "%s", out);
    cr_assert(strstr(out, "psycopg2: 10 seed asks equal"), "%s", out);
    unlink(asks);
}

/* Runs cmd, its output into out; the exit status. */
static int run_cmd(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    return pclose(p);
}

Test(serve_pg, go_pgx, .timeout = 600)
{
    char asks[128];
    snprintf(asks, sizeof asks, "%s.asks.json", db.store);
    write_asks(asks);
    char bin[160], cmd[2048];
    static char out[1 << 16];
    snprintf(bin, sizeof bin, "%s.pgx", db.store);
    /* Offline, against Debian's packaged pgx v4 (no module download). */
    snprintf(cmd, sizeof cmd,
             "cd %s/tests/e2e/pg_clients_go && GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= "
             "GOCACHE=%s/gocache go build -o %s main.go 2>&1",
             STRAUM_SOURCE_DIR, STRAUM_BINARY_DIR, bin);
    cr_assert_eq(run_cmd(cmd, out, sizeof out), 0, "go build: %s", out);
    snprintf(cmd, sizeof cmd, "%s '%s' '%s' '%s' 2>&1", bin, conninfo, db.conninfo, asks);
    int rc = run_cmd(cmd, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "pgx: 10 seed asks equal") && strstr(out, "pgx: panel query and errors"),
              "%s", out);
    unlink(bin);
    unlink(asks);
}

Test(serve_pg, java_pgjdbc, .timeout = 600)
{
    char asks[128];
    snprintf(asks, sizeof asks, "%s.asks.json", db.store);
    write_asks(asks);
    char cmd[2048];
    static char out[1 << 16];
    snprintf(cmd, sizeof cmd,
             "java -cp /usr/share/java/postgresql.jar %s/tests/e2e/pg_clients_java/PgClients.java "
             "%d '%s' '%s' '%s' '%s' '%s' 2>&1",
             STRAUM_SOURCE_DIR, port, PQhost(db.pg), PQport(db.pg), PQdb(db.pg), PQuser(db.pg), asks);
    int rc = run_cmd(cmd, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "pgjdbc: 10 seed asks equal") && strstr(out, "pgjdbc: parameters and errors") &&
                  strstr(out, "pgjdbc: metadata lists the views"),
              "%s", out);
    unlink(asks);
}
