/* test_serve_replicas.c -- two straum-serve processes on one store while
 * ingest applies a 100k-row transaction: both keep answering throughout, and
 * both see the transaction whole — the total is the old one or the new one,
 * never anything between. */
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"
#include "tests/serve/serve_test.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t pg_count(PGconn *pg)
{
    PGresult *r = PQexec(pg, "SELECT count(*) FROM yellow_trips");
    int64_t n = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The total trips a server answers, over a kept-alive connection. */
static int64_t ask_total(int fd)
{
    static const char body[] =
        "{\"ask\": \"SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2\","
        " \"params\": [\"2000-01-01\", \"2030-01-01\"]}";
    struct hc_response r;
    hc_request(fd, "POST", "/ask", "Content-Type: application/json\r\n", body, strlen(body), &r);
    cr_assert_eq(r.status, 200, "status %d: %s", r.status, r.body ? r.body : "");
    const char *rows = strstr(r.body, "\"rows\":[[");
    cr_assert_not_null(rows, "%s", r.body);
    int64_t n = atoll(rows + 9);
    hc_free(&r);
    return n;
}

Test(serve_replicas, two_replicas_see_a_large_transaction_whole, .timeout = 300)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 3000);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    taxi_ingest_start(&db, NULL);
    int ports[2] = {hc_free_port(), hc_free_port()};
    pid_t serves[2] = {fixture_spawn_serve(db.store, ports[0]),
                       fixture_spawn_serve(db.store, ports[1])};
    int fds[2] = {hc_connect(ports[0]), hc_connect(ports[1])};
    int64_t before = pg_count(db.pg);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(ask_total(fds[i]), before, "replica %d before the transaction", i);

    pid_t writer = fork();
    if (writer == 0) { /* one transaction of 100,000 rows */
        PGconn *c = PQconnectdb(db.conninfo);
        PGresult *r = PQexec(c, "SELECT straum_generate_trips(100000, 0.5, 900000000)");
        _exit(PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : 1);
    }
    int64_t after = before + 100000, answered = 0;
    bool seen_new[2] = {false, false};
    int64_t deadline = now_ms() + 120000;
    while (!(seen_new[0] && seen_new[1]) && now_ms() < deadline) {
        for (int i = 0; i < 2; i++) {
            int64_t n = ask_total(fds[i]);
            cr_assert(n == before || n == after,
                      "replica %d answered %lld: neither %lld nor %lld, half a transaction", i,
                      (long long)n, (long long)before, (long long)after);
            seen_new[i] |= n == after;
            answered++;
        }
    }
    int status;
    waitpid(writer, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer failed");
    cr_assert(seen_new[0] && seen_new[1], "both replicas saw the transaction within 120 s");
    cr_assert_gt(answered, 10, "the replicas kept answering while it was applied (%lld asks)",
                 (long long)answered);
    for (int i = 0; i < 2; i++) {
        close(fds[i]);
        kill(serves[i], SIGTERM);
        waitpid(serves[i], &status, 0);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "straum-serve stops cleanly");
    }
    taxi_ingest_stop(&db);
    taxi_db_destroy(&db);
}

/* The status and body of one ask for the total over a kept-alive connection. */
static int ask_status(int fd, int64_t *total, char *body_out, size_t len)
{
    static const char body[] =
        "{\"ask\": \"SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2\","
        " \"params\": [\"2000-01-01\", \"2030-01-01\"]}";
    struct hc_response r;
    hc_request(fd, "POST", "/ask", "Content-Type: application/json\r\n", body, strlen(body), &r);
    int status = r.status;
    snprintf(body_out, len, "%s", r.body ? r.body : "");
    const char *rows = r.body ? strstr(r.body, "\"rows\":[[") : NULL;
    *total = rows ? atoll(rows + 9) : -1;
    hc_free(&r);
    return status;
}

/* straum-ingest --rebuild unlinks the files a running straum-serve maps and
 * makes a new store in their place: the server must notice (the store's
 * identity) and never answer from the deleted store; /readyz says 503
 * until it answers from the new one. */
Test(serve_replicas, a_replica_never_answers_from_a_store_rebuilt_under_it, .timeout = 300)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 1000);
    char log[8192], body[1024];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    int port = hc_free_port();
    pid_t serve = fixture_spawn_serve(db.store, port);
    int fd = hc_connect(port);
    int64_t total;
    cr_assert_eq(ask_status(fd, &total, body, sizeof body), 200, "%s", body);
    cr_assert_eq(total, pg_count(db.pg));

    taxi_db_add_trips(&db, 500, 0.41);
    const char *rebuild[] = {"--rebuild", NULL};
    cr_assert_eq(taxi_ingest_once_with(&db, rebuild, log, sizeof log), 0, "%s", log);
    int64_t now_total = pg_count(db.pg);
    int status = ask_status(fd, &total, body, sizeof body);
    cr_assert(status == 503 || (status == 200 && total == now_total),
              "after --rebuild: status %d, %lld trips (the rebuilt store has %lld): %s", status,
              (long long)total, (long long)now_total, body);
    struct hc_response r;
    hc_once(port, "GET", "/readyz", NULL, NULL, &r);
    cr_assert_eq(r.status, status, "/readyz agrees with /ask: %d, %s", r.status,
                 r.body ? r.body : "");
    if (status == 503)
        cr_assert(r.body && strstr(r.body, "replaced"), "%s", r.body ? r.body : "");
    hc_free(&r);
    close(fd);
    kill(serve, SIGTERM);
    waitpid(serve, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "straum-serve stops cleanly");
    /* A server started on the rebuilt store answers from it. */
    serve = fixture_spawn_serve(db.store, port);
    fd = hc_connect(port);
    cr_assert_eq(ask_status(fd, &total, body, sizeof body), 200, "%s", body);
    cr_assert_eq(total, now_total);
    close(fd);
    kill(serve, SIGTERM);
    waitpid(serve, &status, 0);
    taxi_db_destroy(&db);
}
