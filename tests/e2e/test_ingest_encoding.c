/* test_ingest_encoding.c -- a source database that is not UTF-8. Ingest
 * asks every connection for client_encoding UTF8, so PostgreSQL converts
 * LATIN1 (or WIN1252) texts to UTF-8 on the way out, in the snapshot's
 * binary COPY and in the replication stream alike; the store, and so every
 * answer, holds UTF-8. Checked: non-ASCII texts in a fact key and in a dim
 * column, grouped and filtered, equal to PostgreSQL's own GROUP BY read
 * through a UTF-8 connection, after the snapshot and after changes
 * followed. */
#include "engine/engine.h"
#include "tests/e2e/oracle.h"
#include "tests/pg/pgtest.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char views_sql[] =
    "CREATE VIEW sales WITH (buckets = '1 hour, 1 day') AS\n"
    "SELECT date_bin('1 hour', s.at, timestamptz 'epoch') AS bucket, s.city AS city,\n"
    "       z.name AS zone_name, count(*) AS n, sum(s.amount) AS amount\n"
    "FROM public.sales AS s LEFT OUTER JOIN public.zones AS z ON z.id = s.zone\n"
    "GROUP BY 1, 2, 3;\n";

/* LATIN1 (and WIN1252) texts: the cities in add_sales, these zones. */
static const char *const zones[] = {"Île-de-France", "Ñuñoa", "½ way", "£ and ¥"};

static PGconn *connect_utf8(const char *conninfo)
{
    char ci[700];
    snprintf(ci, sizeof ci, "%s client_encoding=UTF8", conninfo);
    PGconn *c = PQconnectdb(ci);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    return c;
}

static void exec_ok(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    cr_assert(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s",
              sql, PQerrorMessage(c));
    PQclear(r);
}

static void add_sales(PGconn *c, int from, int n)
{
    char sql[600];
    snprintf(sql, sizeof sql,
             "INSERT INTO sales (at, city, zone, amount) SELECT "
             "'2024-01-01 00:00:00+00'::timestamptz + (i * 397 %% 172800) * interval '1 second', "
             "(ARRAY['Zürich','Malmö','São Paulo','Reykjavík','plain','Straße'])[1 + i %% 6], "
             "1 + i %% 5, (i %% 1000) / 100.0 FROM generate_series(%d, %d) AS i",
             from, from + n - 1);
    exec_ok(c, sql);
}

static int ingest(const char *conninfo, const char *views, const char *store, const char *slot)
{
    const char *argv[] = {STRAUM_INGEST_BIN, "run", "--source", conninfo, "--views", views,
                          "--store", store, "--slot", slot, "--commit-interval", "5ms",
                          "--exit-when-caught-up", NULL};
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The ask's rows and PostgreSQL's, each as "city|zone|n|amount" lines
 * sorted bytewise (the order is not what is checked: the texts are). */
static void compare(const char *store, PGconn *pg, const char *where_sql, const char *where_ask,
                    const char *param)
{
    struct store_error err;
    struct engine *e = engine_open(store, NULL, &err);
    cr_assert_not_null(e, "%s", err.message);
    char ask[600];
    snprintf(ask, sizeof ask,
             "SELECT city, zone_name, n, amount FROM sales WHERE bucket >= '2024-01-01 00:00:00+00' "
             "AND bucket < '2024-01-04 00:00:00+00'%s GROUP BY city, zone_name", where_ask);
    struct ask_value pv = {.kind = ASK_STRING, .text = param, .len = param ? strlen(param) : 0};
    struct ask_request req = {.ask = ask, .params = param ? &pv : NULL, .nparams = param ? 1 : 0};
    struct buf out = {0};
    struct ask_error aerr;
    cr_assert_eq(engine_ask(e, &req, &out, &aerr), 0, "%s", aerr.message);
    buf_put(&out, "", 1);
    cJSON *j = cJSON_Parse(out.data);
    cr_assert_not_null(j, "not JSON (UTF-8): %s", out.data);
    cJSON *rows = cJSON_GetObjectItem(j, "rows");

    char sql[800];
    snprintf(sql, sizeof sql,
             "SELECT s.city, z.name, count(*), sum(s.amount) FROM sales s LEFT JOIN zones z "
             "ON z.id = s.zone WHERE s.at >= '2024-01-01 00:00:00+00' AND s.at < '2024-01-04 "
             "00:00:00+00'%s GROUP BY 1, 2", where_sql);
    PGresult *r = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
    int n = PQntuples(r);
    cr_assert_gt(n, 0);
    cr_assert_eq(cJSON_GetArraySize(rows), n, "%d rows, PostgreSQL %d: %s",
                 cJSON_GetArraySize(rows), n, out.data);
    char **ours = calloc((size_t)n, sizeof *ours), **theirs = calloc((size_t)n, sizeof *theirs);
    for (int i = 0; i < n; i++) {
        cJSON *row = cJSON_GetArrayItem(rows, i), *zone = cJSON_GetArrayItem(row, 1);
        cJSON *amount = cJSON_GetArrayItem(row, 3);
        double a = cJSON_IsString(amount) ? strtod(amount->valuestring, NULL) : amount->valuedouble;
        ours[i] = malloc(256);
        snprintf(ours[i], 256, "%s|%s|%lld|%.2f", cJSON_GetArrayItem(row, 0)->valuestring,
                 cJSON_IsNull(zone) ? "NULL" : zone->valuestring,
                 (long long)cJSON_GetArrayItem(row, 2)->valuedouble, a);
        theirs[i] = malloc(256);
        snprintf(theirs[i], 256, "%s|%s|%s|%.2f", PQgetvalue(r, i, 0),
                 PQgetisnull(r, i, 1) ? "NULL" : PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
                 strtod(PQgetvalue(r, i, 3), NULL));
    }
    qsort(ours, (size_t)n, sizeof *ours, cmp_str);
    qsort(theirs, (size_t)n, sizeof *theirs, cmp_str);
    for (int i = 0; i < n; i++) {
        cr_assert_str_eq(ours[i], theirs[i], "row %d: store %s, PostgreSQL %s (%s)", i, ours[i], theirs[i], ask);
        free(ours[i]);
        free(theirs[i]);
    }
    free(ours);
    free(theirs);
    PQclear(r);
    cJSON_Delete(j);
    buf_free(&out);
    engine_close(e);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void latin1_case(const char *encoding)
{
    const char *cluster = pgtest_conninfo();
    cr_assert_not_null(cluster);
    PGconn *admin = PQconnectdb(cluster);
    cr_assert_eq(PQstatus(admin), CONNECTION_OK, "%s", PQerrorMessage(admin));
    char name[64], sql[300];
    snprintf(name, sizeof name, "enc_%s_%d_%ld", encoding, getpid(), (long)time(NULL) % 100000);
    for (char *c = name; *c; c++)
        *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
    snprintf(sql, sizeof sql,
             "CREATE DATABASE %s ENCODING '%s' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0", name,
             encoding);
    exec_ok(admin, sql);
    char conninfo[600];
    snprintf(conninfo, sizeof conninfo, "%s dbname=%s", cluster, name);
    PGconn *pg = connect_utf8(conninfo);
    PGresult *enc = PQexec(pg, "SHOW server_encoding");
    cr_assert_str_eq(PQgetvalue(enc, 0, 0), encoding);
    PQclear(enc);
    exec_ok(pg, "CREATE TABLE sales (id serial PRIMARY KEY, at timestamptz NOT NULL, city text, "
                "zone int, amount numeric(10,2));"
                "CREATE TABLE zones (id int PRIMARY KEY, name text);"
                "ALTER TABLE sales REPLICA IDENTITY FULL; ALTER TABLE zones REPLICA IDENTITY FULL;"
                "CREATE PUBLICATION straum FOR TABLE sales, zones");
    for (int z = 0; z < 4; z++) {
        snprintf(sql, sizeof sql, "INSERT INTO zones VALUES (%d, '%s')", z + 1, zones[z]);
        exec_ok(pg, sql);
    }
    add_sales(pg, 0, 3000);

    char views[] = "/tmp/straum-enc-views-XXXXXX", store[] = "/tmp/straum-enc-XXXXXX", slot[80];
    int fd = mkstemp(views);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, views_sql, strlen(views_sql)), (ssize_t)strlen(views_sql));
    close(fd);
    cr_assert_not_null(mkdtemp(store));
    snprintf(slot, sizeof slot, "%s_slot", name);
    cr_assert_eq(ingest(conninfo, views, store, slot), 0, "the snapshot");
    compare(store, pg, "", "", NULL);
    compare(store, pg, " AND s.city = 'Zürich'", " AND city = $1", "Zürich");
    compare(store, pg, " AND z.name IN ('Ñuñoa', '½ way')", " AND zone_name IN ('Ñuñoa', '½ way')",
            NULL);

    /* Changes followed: more rows, a renamed zone, a deleted city. */
    add_sales(pg, 3000, 1500);
    exec_ok(pg, "UPDATE zones SET name = 'Øresund' WHERE id = 2");
    exec_ok(pg, "DELETE FROM sales WHERE city = 'Malmö' AND id % 2 = 0");
    cr_assert_eq(ingest(conninfo, views, store, slot), 0, "following changes");
    compare(store, pg, "", "", NULL);
    compare(store, pg, " AND z.name = 'Øresund'", " AND zone_name = $1", "Øresund");
    compare(store, pg, " AND s.city = 'Straße'", " AND city = 'Straße'", NULL);

    snprintf(sql, sizeof sql, "SELECT pg_drop_replication_slot('%s')", slot);
    exec_ok(pg, sql);
    PQfinish(pg);
    snprintf(sql, sizeof sql, "DROP DATABASE %s", name);
    exec_ok(admin, sql);
    PQfinish(admin);
    unlink(views);
    nftw(store, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

Test(ingest_encoding, a_latin1_database_answers_in_utf8_equal_to_postgresql, .timeout = 300)
{
    latin1_case("LATIN1");
}

Test(ingest_encoding, a_win1252_database_answers_in_utf8_equal_to_postgresql, .timeout = 300)
{
    latin1_case("WIN1252");
}
