/* test_serve_stream.c -- answers too long to build whole: streamed, equal to
 * PostgreSQL's, and the memory they took given back.
 *
 * One database of 200,000 trips made so that each has its own (hour,
 * pickup zone, payment type): 2,500 hours x 20 zones x 4 payment types.
 * The ask grouped by those three answers 200,000 rows, with a count, an
 * exact sum and a p99 per group; it goes out chunked over HTTP and row by
 * row over the PostgreSQL protocol (simple and extended query), and each
 * answer must equal PostgreSQL's GROUP BY over the raw rows. Then
 * straum-serve as its own process: after the same ask its anonymous
 * resident memory (/proc/PID/status RssAnon) must be back under 16 MiB.
 * That bound is the gcc tree's: AddressSanitizer keeps freed memory in
 * quarantine and shadows every byte, so the ASan tree builds this file
 * without the RSS case (the streamed answers are checked in both). */
#include "tests/kit/answer.h"
#include "tests/kit/sanitizer.h"
#include "serve/serve.h"
#include "tests/e2e/taxi_db.h"
#include "tests/serve/serve_test.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>


enum { HOURS = 2500, ZONES = 20, PAYMENTS = 4, GROUPS = HOURS * ZONES * PAYMENTS };

static struct taxi_db db;

static const char ask_text[] =
    "SELECT bucket, pu_location_id, payment_type, trips, fare, p99_fare FROM trips "
    "GROUP BY bucket, pu_location_id, payment_type";
static const char ask_body[] =
    "{\"ask\": \"SELECT bucket, pu_location_id, payment_type, trips, fare, p99_fare FROM trips "
    "GROUP BY bucket, pu_location_id, payment_type\"}";
static const char pg_sql[] =
    "SELECT date_bin('1 hour', pickup_at, timestamptz 'epoch') AS bucket, pu_location_id, "
    "payment_type, count(*) AS trips, sum(fare_amount) AS fare, "
    "percentile_disc(0.99) WITHIN GROUP (ORDER BY fare_amount) AS p99_fare "
    "FROM yellow_trips GROUP BY 1, 2, 3";

static void setup(void)
{
    taxi_db_create(&db, NULL, 0);
    /* Trip g: hour g / 80, zone 1 + g % 20, payment type 1 + (g / 20) % 4;
     * fares spread over 2.50 to 52.49. */
    taxi_exec(db.pg,
              "INSERT INTO yellow_trips SELECT 100000000 + g, 1, "
              "timestamptz '2024-01-01 00:00:00+00' + (g / 80) * interval '1 hour' "
              "+ (g %% 60) * interval '1 second', "
              "timestamptz '2024-01-01 00:20:00+00' + (g / 80) * interval '1 hour', "
              "1, 1.50, 1 + g %% %d, 1, 1 + (g / %d) %% %d, ((g * 37) %% 5000) / 100.0 + 2.50, "
              "0, ((g * 37) %% 5000) / 100.0 + 2.50 FROM generate_series(0, %d) AS g",
              ZONES, ZONES, PAYMENTS, GROUPS - 1);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
}

static void teardown(void) { taxi_db_destroy(&db); }

TestSuite(serve_stream, .init = setup, .fini = teardown, .timeout = 600);

static void pg_want(struct answer *out)
{
    PGresult *r = PQexec(db.pg, pg_sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(db.pg));
    cr_assert_eq(PQntuples(r), GROUPS);
    cr_assert_eq(answer_from_pg(r, out), 0);
    PQclear(r);
}

static void expect_equal(const char *what, struct answer *got)
{
    struct answer want;
    pg_want(&want);
    char why[1024];
    bool eq = answer_equal(&want, got, why, sizeof why);
    answer_free(&want);
    cr_assert(eq, "%s: %s", what, why);
}

/* The JSON answer's rows come in group order: bucket, zone, payment. */
static void expect_group_order(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    cr_assert_not_null(j);
    cJSON *rows = cJSON_GetObjectItem(j, "rows");
    cr_assert_eq(cJSON_GetArraySize(rows), GROUPS);
    const cJSON *prev = NULL;
    int n = 0;
    for (const cJSON *row = rows->child; row; prev = row, row = row->next, n++) {
        if (!prev)
            continue;
        const char *b0 = prev->child->valuestring, *b1 = row->child->valuestring;
        int c = strcmp(b0, b1);
        double z0 = prev->child->next->valuedouble, z1 = row->child->next->valuedouble;
        double p0 = prev->child->next->next->valuedouble, p1 = row->child->next->next->valuedouble;
        cr_assert(c < 0 || (c == 0 && (z0 < z1 || (z0 == z1 && p0 < p1))),
                  "row %d is out of group order", n);
    }
    cJSON_Delete(j);
}

/* POSTs the ask on fd and reads its answer, allowing two minutes: the
 * ASan tree on a loaded machine takes well past hc_request's 10 s. */
static void ask_slowly(int fd, struct hc_response *r)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n", strlen(ask_body));
    cr_assert(hc_send(fd, head, (size_t)n) && hc_send(fd, ask_body, strlen(ask_body)));
    hc_read(fd, r, 120000);
}

Test(serve_stream, http_answer_of_200000_rows_is_chunked_and_equals_postgresql)
{
    /* No time budget: the answers are what is tested, and the sanitized
     * tree on a busy machine may take longer than the default's 10 s. */
    struct serve_options o = {.store_dir = db.store, .ask_timeout_us = -1};
    struct serve_server *s = fixture_serve(&o);
    struct hc_response r;
    int fd = hc_connect(serve_port(s));
    for (int round = 0; round < 2; round++) { /* on one kept-alive connection */
        ask_slowly(fd, &r);
        cr_assert_eq(r.status, 200, "%.400s", r.body ? r.body : "");
        char te[64];
        cr_assert_not_null(hc_header(&r, "Transfer-Encoding", te, sizeof te), "%s", r.headers);
        cr_assert(strstr(te, "chunked"), "%s", te);
        struct answer got;
        char err[256];
        cr_assert_eq(answer_from_json(r.body, &got, err, sizeof err), 0, "%s", err);
        expect_equal("HTTP", &got);
        answer_free(&got);
        expect_group_order(r.body);
        hc_free(&r);
    }
    close(fd);
    /* A short answer still goes out whole, with its length. */
    hc_once(serve_port(s), "POST", "/ask", NULL, "{\"ask\": \"SELECT trips FROM trips\"}", &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    char len[32];
    cr_assert_not_null(hc_header(&r, "Content-Length", len, sizeof len), "%s", r.headers);
    cr_assert(strstr(r.body, "200000"), "%s", r.body);
    hc_free(&r);
    serve_stop(s);
}

Test(serve_stream, pg_answer_of_200000_rows_row_by_row_equals_postgresql)
{
    struct serve_options o = {.store_dir = db.store, .pg_listen = "127.0.0.1:0", .quiet = true,
                              .threads = 2, .ask_timeout_us = -1};
    char err[600];
    struct serve_server *s = serve_start(&o, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    char conninfo[256];
    snprintf(conninfo, sizeof conninfo,
             "host=127.0.0.1 port=%d user=grafana dbname=anything sslmode=disable",
             serve_pg_port(s));
    PGconn *c = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    for (int extended = 0; extended < 2; extended++) {
        PGresult *res = extended ? PQexecParams(c, ask_text, 0, NULL, NULL, NULL, NULL, 0)
                                 : PQexec(c, ask_text);
        cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQerrorMessage(c));
        cr_assert_eq(PQntuples(res), GROUPS);
        cr_assert_str_eq(PQcmdTuples(res), "200000");
        struct answer got;
        cr_assert_eq(answer_from_pg(res, &got), 0);
        expect_equal(extended ? "extended query" : "simple query", &got);
        answer_free(&got);
        PQclear(res);
    }
    PQfinish(c);
    serve_stop(s);
}

#if !UNDER_ASAN
/* kB of a /proc/PID/status line ("RssAnon:", "VmHWM:"), -1 when missing. */
static long status_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, strlen(field)))
            kb = strtol(line + strlen(field), NULL, 10);
    fclose(f);
    return kb;
}

static pid_t spawn_serve(int port)
{
    char listen[32];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execl(STRAUM_SERVE_BIN, STRAUM_SERVE_BIN, "--store", db.store, "--listen", listen,
              "--threads", "2", "--log-level", "error", "--ask-timeout", "0", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500; i++) { /* until it answers, at most 10 s */
        if (hc_listening(port)) {
            struct hc_response r;
            hc_once(port, "GET", "/healthz", NULL, NULL, &r);
            int status = r.status;
            hc_free(&r);
            if (status == 200)
                return pid;
        }
        usleep(20000);
    }
    kill(pid, SIGKILL);
    cr_assert_fail("straum-serve on port %d did not come up", port);
    return pid;
}

Test(serve_stream, anonymous_rss_returns_under_16_mib_after_heavy_asks)
{
    int port = hc_free_port();
    pid_t pid = spawn_serve(port);
    long rest = status_kb(pid, "RssAnon:");
    struct hc_response r;
    /* Each connection's asks run on one of the two workers: asked on
     * two, both workers' arenas have held a heavy ask's memory. */
    for (int i = 0; i < 4; i++) {
        int fd = hc_connect(port);
        ask_slowly(fd, &r);
        close(fd);
        cr_assert_eq(r.status, 200, "%.400s", r.body ? r.body : "");
        cr_assert_gt(r.body_len, (size_t)GROUPS * 40);
        hc_free(&r);
    }
    long after = status_kb(pid, "RssAnon:"), peak = status_kb(pid, "VmHWM:");
    kill(pid, SIGTERM);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    cr_assert_geq(rest, 0);
    cr_assert_leq(after, 16 << 10, "RssAnon %ld kB after the asks (%ld kB at rest, peak RSS %ld kB)",
                  after, rest, peak);
}
#endif
