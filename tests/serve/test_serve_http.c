/* test_serve_http.c -- straum-serve's HTTP layer in-process: every route
 * and status by a real request over a socket, the limits (body, headers,
 * slow clients), the token, keep-alive and /metrics.
 *
 * Each test makes a small taxi store (serve_test.c), starts a server on a
 * free loopback port and talks to it with the plain-socket client. */
#include "serve/serve.h"
#include "serve/http.h"
#include "tests/serve/serve_test.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static char the_store[64];
static struct serve_server *server;
static int port;

/* A store that is caught up: contact a moment ago, nothing behind. */
static void make_fresh_store(void)
{
    struct store_position pos = {.lsn = 0x16B3748ULL | (2ULL << 32),
                                 .commit_time = wall_us() - 3600 * 1000000LL,
                                 .contact_time = wall_us(), .bytes_behind = 0};
    fixture_make_store(the_store, &pos);
}

static void setup(void)
{
    make_fresh_store();
    struct serve_options o = {.store_dir = the_store, .max_lag_us = 60 * 1000000LL};
    server = fixture_serve(&o);
    port = serve_port(server);
}

static void teardown(void)
{
    serve_stop(server);
    server = NULL;
    fixture_remove_store(the_store);
}

TestSuite(serve_http, .init = setup, .fini = teardown, .timeout = 120);

/* Payment types over the first week: serve_test.c's STEADY_ASK. */
#define trips_ask STEADY_ASK

static void expect_error(const struct hc_response *r, int status, const char *code)
{
    cr_assert_eq(r->status, status, "status %d, want %d: %s", r->status, status,
                 r->body ? r->body : "(no body)");
    char ct[64];
    cr_assert_not_null(hc_header(r, "Content-Type", ct, sizeof ct));
    cr_assert_str_eq(ct, "application/json");
    cJSON *j = cJSON_Parse(r->body);
    cr_assert_not_null(j, "not JSON: %s", r->body);
    cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    cr_assert(cJSON_IsObject(e), "%s", r->body);
    cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
    cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
    cr_assert(cJSON_IsString(c) && cJSON_IsString(m) && *m->valuestring, "%s", r->body);
    if (code)
        cr_assert_str_eq(c->valuestring, code, "%s", r->body);
    cJSON_Delete(j);
}

static void post_ask(const char *body, struct hc_response *r) { hc_once(port, "POST", "/ask", NULL, body, r); }

/* ---- 200s ------------------------------------------------------------------------ */

Test(serve_http, healthz)
{
    struct hc_response r;
    hc_once(port, "GET", "/healthz", NULL, NULL, &r);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "{\"status\":\"ok\"}\n");
    hc_free(&r);
}

Test(serve_http, ask_answers_like_the_store)
{
    struct hc_response r;
    post_ask(trips_ask, &r);
    cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
    char ct[64];
    cr_assert_str_eq(hc_header(&r, "Content-Type", ct, sizeof ct), "application/json");
    cJSON *j = cJSON_Parse(r.body);
    cr_assert_not_null(j, "%s", r.body);
    cJSON *rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
    cr_assert_eq(cJSON_GetArraySize(rows), 6, "%s", r.body);
    int64_t total = 0;
    for (int p = 0; p < 6; p++) {
        cJSON *row = cJSON_GetArrayItem(rows, p);
        cr_assert_eq(cJSON_GetArrayItem(row, 0)->valuedouble, p);
        int64_t want = fixture_count(p, FIXTURE_START_US, FIXTURE_START_US + 7 * 86400000000LL);
        cr_assert_eq((int64_t)cJSON_GetArrayItem(row, 1)->valuedouble, want, "payment %d", p);
        total += want;
    }
    cr_assert_eq(total, FIXTURE_TRIPS);
    cJSON_Delete(j);
    hc_free(&r);

    /* A number parameter, a null time zone and params left out all parse. */
    post_ask("{\"ask\": \"SELECT trips FROM trips WHERE bucket >= '2024-01-01 00:00:00+00' AND "
             "bucket < '2024-01-02 00:00:00+00' AND payment_type = $1\", \"params\": [2], "
             "\"time_zone\": \"America/New_York\"}", &r);
    cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
    char want[64];
    snprintf(want, sizeof want, "[[%lld]]",
             (long long)fixture_count(2, FIXTURE_START_US, FIXTURE_START_US + 86400000000LL));
    cr_assert(strstr(r.body, want), "%s, want %s", r.body, want);
    hc_free(&r);
}

/* LIMIT and OFFSET at the ends of bigint: the rows after OFFSET, however
 * large LIMIT is (first + limit must not wrap), and none past the end. */
Test(serve_http, limit_and_offset_at_the_ends_of_bigint)
{
    static const struct {
        const char *tail;
        int first, count; /* payment types 0..5 in order */
    } cases[] = {
        {"LIMIT 9223372036854775807 OFFSET 1", 1, 5},
        {"LIMIT 9223372036854775807 OFFSET 5", 5, 1},
        {"LIMIT 9223372036854775807 OFFSET 9223372036854775807", 0, 0},
        {"LIMIT 9223372036854775806 OFFSET 2", 2, 4},
        {"LIMIT 2 OFFSET 9223372036854775807", 0, 0},
        {"OFFSET 9223372036854775807", 0, 0},
        {"LIMIT 9223372036854775807", 0, 6},
        {"LIMIT 0 OFFSET 1", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"ask\": \"SELECT payment_type, trips FROM trips WHERE bucket >= $1 AND "
                 "bucket < $2 GROUP BY payment_type ORDER BY payment_type %s\", \"params\": "
                 "[\"2024-01-01 00:00:00+00\", \"2024-01-08 00:00:00+00\"]}", cases[i].tail);
        struct hc_response r;
        post_ask(body, &r);
        cr_assert_eq(r.status, 200, "%s: %d %s", cases[i].tail, r.status, r.body);
        cJSON *j = cJSON_Parse(r.body);
        cr_assert_not_null(j, "%s", r.body);
        cJSON *rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
        cr_assert_eq(cJSON_GetArraySize(rows), cases[i].count, "%s: %s", cases[i].tail, r.body);
        for (int k = 0; k < cases[i].count; k++)
            cr_assert_eq(cJSON_GetArrayItem(cJSON_GetArrayItem(rows, k), 0)->valuedouble,
                         cases[i].first + k, "%s: %s", cases[i].tail, r.body);
        cJSON_Delete(j);
        hc_free(&r);
    }
}

Test(serve_http, views)
{
    struct hc_response r;
    hc_once(port, "GET", "/views", NULL, NULL, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert(strstr(r.body, "\"trips\"") && strstr(r.body, "\"dropoffs\""), "%s", r.body);
    hc_free(&r);
}

Test(serve_http, readyz_when_caught_up)
{
    struct hc_response r;
    hc_once(port, "GET", "/readyz", NULL, NULL, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cJSON *j = cJSON_Parse(r.body);
    cr_assert_not_null(j, "%s", r.body);
    cr_assert_str_eq(cJSON_GetObjectItem(j, "status")->valuestring, "ready");
    /* Idle source: the old commit time does not count, the contact does. */
    cr_assert_lt(cJSON_GetObjectItem(j, "lag_seconds")->valuedouble, 30.0, "%s", r.body);
    cr_assert_str_eq(cJSON_GetObjectItem(j, "position")->valuestring, "2/016B3748");
    cJSON_Delete(j);
    hc_free(&r);
}

Test(serve_http, head_on_a_get_route)
{
    struct hc_response r;
    int fd = hc_connect(port);
    const char *head = "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    hc_send(fd, head, strlen(head));
    /* HEAD has headers only: read them and check the connection still works. */
    char buf[1024];
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    cr_assert_gt(n, 0);
    buf[n] = '\0';
    cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%s", buf);
    hc_request(fd, "GET", "/healthz", NULL, NULL, 0, &r);
    cr_assert_eq(r.status, 200);
    hc_free(&r);
    close(fd);
}

/* ---- 400s ------------------------------------------------------------------------ */

Test(serve_http, bad_bodies_are_400)
{
    static const struct {
        const char *body, *code;
        int line, column; /* 0: not checked */
    } cases[] = {
        {"{\"ask\": \"SELECT 1\",\n  \"params\": [1,,2]}", "invalid_json", 2, 16},
        {"not json at all", "invalid_json", 1, 1},
        {"", "invalid_json", 0, 0},
        {"{\"ask\": \"x\"} trailing", "invalid_json", 1, 14},
        {"{\"ask\": \"caf\xC3\"}", "invalid_json", 1, 13},
        {"{\"ask\": \"a\\u0000b\"}", "invalid_json", 1, 11},
        {"{\"params\": []}", "invalid_request", 0, 0},
        {"[1, 2]", "invalid_request", 0, 0},
        {"{\"ask\": 42}", "invalid_request", 0, 0},
        {"{\"ask\": \"SELECT\", \"ask\": \"SELECT\"}", "invalid_request", 0, 0},
        {"{\"ask\": \"SELECT trips FROM trips\", \"colour\": \"blue\"}", "invalid_request", 0, 0},
        {"{\"ask\": \"SELECT trips FROM trips\", \"time_zone\": 5}", "invalid_request", 0, 0},
        {"{\"ask\": \"SELECT trips FROM trips\", \"params\": {\"a\": 1}}", "bad_parameter", 0, 0},
        {"{\"ask\": \"SELECT trips FROM trips\", \"params\": [1, {\"a\": 1}]}", "bad_parameter", 0, 0},
        {"{\"ask\": \"SELECT trips FROM trips\", \"params\": [[1]]}", "bad_parameter", 0, 0},
        {"{\"ask\": \"SELECT trips FROM trips\", \"params\": [+1]}", "invalid_json", 1, 47},
        {"{\"ask\": \"SELECT trips FROM trips\", \"params\": [01]}", "invalid_json", 1, 47},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct hc_response r;
        post_ask(cases[i].body, &r);
        expect_error(&r, 400, cases[i].code);
        if (cases[i].line) {
            cJSON *j = cJSON_Parse(r.body);
            cJSON *e = cJSON_GetObjectItem(j, "error");
            cJSON *l = cJSON_GetObjectItem(e, "line"), *c = cJSON_GetObjectItem(e, "column");
            cr_assert(l && c, "case %zu: no line/column: %s", i, r.body);
            cr_assert_eq(l->valueint, cases[i].line, "case %zu: %s", i, r.body);
            cr_assert_eq(c->valueint, cases[i].column, "case %zu: %s", i, r.body);
            cJSON_Delete(j);
        }
        hc_free(&r);
    }
}

Test(serve_http, engine_errors_keep_their_status_and_place)
{
    struct hc_response r;
    post_ask("{\"ask\": \"SELECT trips\\nFROM trips WHERE bucket >= $1 AND bucket <\"}", &r);
    expect_error(&r, 400, NULL);
    cr_assert(strstr(r.body, "\"line\":2"), "%s", r.body);
    hc_free(&r);

    post_ask("{\"ask\": \"SELECT trips FROM nosuch WHERE bucket >= $1 AND bucket < $2\", "
             "\"params\": [\"2024-01-01 00:00:00+00\", \"2024-01-02 00:00:00+00\"]}", &r);
    expect_error(&r, 404, NULL);
    hc_free(&r);

    /* A string where the key wants an integer: the engine's refusal (it
     * reads well-formed JSON that does not fit the ask: 422). */
    post_ask("{\"ask\": \"SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2 AND "
             "payment_type = $3\", \"params\": [\"2024-01-01 00:00:00+00\", "
             "\"2024-01-02 00:00:00+00\", \"card\"]}", &r);
    cr_assert(r.status == 400 || r.status == 422, "%d %s", r.status, r.body);
    expect_error(&r, r.status, "bad_parameter");
    hc_free(&r);
}

/* ---- 404, 405 ---------------------------------------------------------------------- */

Test(serve_http, unknown_path_is_404)
{
    struct hc_response r;
    hc_once(port, "GET", "/nowhere", NULL, NULL, &r);
    expect_error(&r, 404, "not_found");
    hc_free(&r);
    hc_once(port, "POST", "/ask/more", NULL, "{}", &r);
    expect_error(&r, 404, "not_found");
    hc_free(&r);
}

/* A method the path's route does not take: 405 with this Allow. */
static void expect_405(int at, const char *method, const char *path, const char *body,
                       const char *want_allow)
{
    struct hc_response r;
    char allow[64];
    hc_once(at, method, path, NULL, body, &r);
    expect_error(&r, 405, "method_not_allowed");
    const char *got = hc_header(&r, "Allow", allow, sizeof allow);
    cr_assert_not_null(got, "%s %s: no Allow", method, path);
    cr_assert_str_eq(got, want_allow, "%s %s", method, path);
    hc_free(&r);
}

Test(serve_http, wrong_method_is_405_with_allow)
{
    expect_405(port, "GET", "/ask", NULL, "POST");
    expect_405(port, "POST", "/healthz", "{}", "GET, HEAD");
    expect_405(port, "DELETE", "/views", NULL, "GET, HEAD");
}

/* ---- 413 ---------------------------------------------------------------------------- */

/* Sends a whole request while reading, so a server that answers early and
 * closes cannot leave us blocked in send; returns the response. */
static void send_while_reading(int fd, const char *head, const char *body, size_t len,
                               struct hc_response *r)
{
    struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    hc_send(fd, head, strlen(head));
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, body + off, len - off > 65536 ? 65536 : len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break; /* closed, reset, or the server stopped reading */
        off += (size_t)n;
    }
    hc_read(fd, r, 10000);
}

Test(serve_http, big_body_is_413_and_others_go_on)
{
    size_t len = 10u << 20;
    char *body = malloc(len);
    memset(body, ' ', len);
    memcpy(body, "{\"ask\": \"", 9);

    /* Declared length: refused before the body is read. */
    int fd = hc_connect(port);
    char head[256];
    snprintf(head, sizeof head, "POST /ask HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", len);
    struct hc_response r;
    send_while_reading(fd, head, body, len, &r);
    expect_error(&r, 413, "body_too_large");
    hc_free(&r);
    close(fd);

    /* Chunked, no length: the server drops what passes the limit and
     * answers 413 at the end of the body (MHD 0.9.75 cannot answer while a
     * body is still arriving). */
    fd = hc_connect(port);
    struct timeval tv = {.tv_sec = 0, .tv_usec = 500000};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    const char *chead = "POST /ask HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    bool ok = hc_send(fd, chead, strlen(chead));
    for (size_t off = 0; ok && off < len; off += 65536) {
        char size[32];
        snprintf(size, sizeof size, "%x\r\n", 65536);
        ok = hc_send(fd, size, strlen(size)) && hc_send(fd, body + off, 65536) &&
             hc_send(fd, "\r\n", 2);
    }
    if (ok)
        hc_send(fd, "0\r\n\r\n", 5);
    hc_read(fd, &r, 10000);
    expect_error(&r, 413, "body_too_large");
    hc_free(&r);
    close(fd);
    free(body);

    hc_once(port, "GET", "/healthz", NULL, NULL, &r);
    cr_assert_eq(r.status, 200);
    hc_free(&r);
    post_ask(trips_ask, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    hc_free(&r);
}

Test(serve_http, body_at_the_limit_is_read)
{
    /* 1 MiB exactly (the default limit): read, then the engine's own limit
     * on the ask's length (64 KiB) answers. */
    size_t len = 1u << 20;
    char *body = malloc(len + 1);
    memset(body, 'x', len);
    memcpy(body, "{\"ask\": \"", 9);
    memcpy(body + len - 2, "\"}", 2);
    body[len] = '\0';
    struct hc_response r;
    int fd = hc_connect(port);
    hc_request(fd, "POST", "/ask", NULL, body, len, &r);
    cr_assert_geq(r.status, 400, "%s", r.body);
    cr_assert_null(strstr(r.body, "body_too_large"), "%s", r.body);
    hc_free(&r);
    close(fd);
    free(body);
}

/* ---- Header floods and slow clients -------------------------------------------------- */

Test(serve_http, header_flood_is_refused_and_others_go_on)
{
    /* 10,000 headers. */
    size_t cap = 400000, n = 0;
    char *flood = malloc(cap);
    n += (size_t)snprintf(flood, cap, "GET /healthz HTTP/1.1\r\nHost: x\r\n");
    for (int i = 0; i < 10000; i++)
        n += (size_t)snprintf(flood + n, cap - n, "X-Flood-%d: %d\r\n", i, i);
    n += (size_t)snprintf(flood + n, cap - n, "\r\n");
    int fd = hc_connect(port);
    struct hc_response r;
    send_while_reading(fd, "", flood, n, &r);
    cr_assert(r.status == 431 || r.status == 413 || r.status == 400 || r.status == 0,
              "status %d", r.status);
    hc_free(&r);
    close(fd);
    free(flood);

    /* One 1 MiB header. */
    size_t big = 1u << 20;
    char *h = malloc(big + 128);
    n = (size_t)snprintf(h, big + 128, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(h + n, 'a', big);
    n += big;
    memcpy(h + n, "\r\n\r\n", 4);
    n += 4;
    fd = hc_connect(port);
    send_while_reading(fd, "", h, n, &r);
    cr_assert(r.status == 431 || r.status == 413 || r.status == 400 || r.status == 0,
              "status %d", r.status);
    hc_free(&r);
    close(fd);
    free(h);

    /* Ordinary large headers still pass: 8 KiB of one header, and 4 KiB
     * of cookies (MHD keeps cookies twice: the header and its split). */
    char *pad = malloc(8300);
    strcpy(pad, "X-Pad: ");
    memset(pad + 7, 'p', 8192);
    strcpy(pad + 7 + 8192, "\r\n");
    hc_once(port, "GET", "/healthz", pad, NULL, &r);
    cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
    hc_free(&r);
    strcpy(pad, "Cookie: ");
    for (int i = 0; i < 40; i++)
        snprintf(pad + strlen(pad), 200, "%scookie%02d=%090d", i ? "; " : "", i, i);
    strcat(pad, "\r\n");
    hc_once(port, "GET", "/healthz", pad, NULL, &r);
    cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
    hc_free(&r);
    free(pad);

    for (int i = 0; i < 5; i++) {
        hc_once(port, "GET", "/healthz", NULL, NULL, &r);
        cr_assert_eq(r.status, 200);
        hc_free(&r);
    }
    post_ask(trips_ask, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    hc_free(&r);
}

Test(serve_http, half_requests_do_not_block_others)
{
    /* Clients that stop mid-request: in the headers, in a declared body,
     * and one that connects and says nothing. Two server threads, so more
     * stalled clients than threads. */
    int stalled[6];
    const char *halves[] = {
        "POST /ask HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"ask\": \"SEL",
        "GET /healthz HTTP/1.1\r\nHos",
        "",
        "POST /ask HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"ask\"",
        "POST /ask HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n",
        "GET",
    };
    for (int i = 0; i < 6; i++) {
        stalled[i] = hc_connect(port);
        hc_send(stalled[i], halves[i], strlen(halves[i]));
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 20; i++) {
        struct hc_response r;
        post_ask(trips_ask, &r);
        cr_assert_eq(r.status, 200, "%s", r.body);
        hc_free(&r);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_assert_lt(secs, 5.0, "20 asks took %.2f s beside stalled clients", secs);
    for (int i = 0; i < 6; i++)
        close(stalled[i]);
}

Test(serve_http, slow_clients_are_dropped, .timeout = 60)
{
    /* A server with a 1 s connection timeout closes a stalled client. */
    struct serve_options o = {.store_dir = the_store, .connection_timeout_s = 1};
    struct serve_server *s2 = fixture_serve(&o);
    int fd = hc_connect(serve_port(s2));
    const char *half = "POST /ask HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{";
    hc_send(fd, half, strlen(half));
    char b[256];
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t n = recv(fd, b, sizeof b, 0);
    cr_assert_leq(n, 0, "the stalled connection got %zd bytes instead of being closed", n);
    close(fd);
    serve_stop(s2);
}

/* A connection still open after the server's timeout: false when the
 * server closed it (recv gets 0 or an error). Non-blocking peek. */
static bool still_open(int fd)
{
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

Test(serve_http, a_byte_a_second_is_dropped_and_others_go_on, .timeout = 60)
{
    /* Idle time alone never runs out for a client that keeps trickling:
     * a request must arrive whole within the timeout of its first byte. */
    struct serve_options o = {.store_dir = the_store, .connection_timeout_s = 2};
    struct serve_server *s2 = fixture_serve(&o);
    int p2 = serve_port(s2);
    static const char headers[] = "POST /ask HTTP/1.1\r\nHost: x\r\nContent-Length: 9000\r\n"
                                  "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    int slow[2] = {hc_connect(p2), hc_connect(p2)};
    /* The second trickles its body, its headers sent whole. */
    const char *whole = "POST /ask HTTP/1.1\r\nHost: x\r\nContent-Length: 9000\r\n\r\n";
    hc_send(slow[1], whole, strlen(whole));
    /* A kept-alive client asking every 300 ms is never cut: each answer
     * starts its next request's time afresh. */
    int steady = hc_connect(p2);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool open[2] = {true, true};
    double closed_at[2] = {0, 0};
    for (int i = 0; i < 30 && (open[0] || open[1]); i++) {
        for (int k = 0; k < 2; k++) {
            if (open[k] && (!hc_send(slow[k], k ? "{" : &headers[i % (sizeof headers - 1)], 1) ||
                            !still_open(slow[k]))) {
                open[k] = false;
                clock_gettime(CLOCK_MONOTONIC, &t);
                closed_at[k] = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
            }
        }
        struct hc_response r;
        hc_request(steady, "POST", "/ask", NULL, trips_ask, strlen(trips_ask), &r);
        cr_assert_eq(r.status, 200, "a steady client beside slow ones: %d", r.status);
        cr_assert(!r.closed);
        hc_free(&r);
        usleep(300000);
    }
    for (int k = 0; k < 2; k++) {
        cr_assert(!open[k], "the %s trickle was never dropped", k ? "body" : "header");
        cr_assert(closed_at[k] >= 1.5 && closed_at[k] < 5.0,
                  "the %s trickle was dropped after %.1f s, want about 2 s", k ? "body" : "header",
                  closed_at[k]);
        close(slow[k]);
    }
    struct hc_response r;
    hc_request(steady, "GET", "/healthz", NULL, NULL, 0, &r);
    cr_assert_eq(r.status, 200, "the steady client kept its connection past the timeout");
    hc_free(&r);
    close(steady);
    serve_stop(s2);
}

/* ---- Keep-alive and concurrency --------------------------------------------------------- */

Test(serve_http, keep_alive_100_requests)
{
    int fd = hc_connect(port);
    for (int i = 0; i < 100; i++) {
        struct hc_response r;
        if (i % 2)
            hc_request(fd, "POST", "/ask", NULL, trips_ask, strlen(trips_ask), &r);
        else
            hc_request(fd, "GET", "/healthz", NULL, NULL, 0, &r);
        cr_assert_eq(r.status, 200, "request %d: %d %s", i, r.status, r.body);
        cr_assert(!r.closed, "request %d closed the connection", i);
        hc_free(&r);
    }
    /* An error answer keeps the connection too. */
    struct hc_response r;
    hc_request(fd, "POST", "/ask", NULL, "{\"nope\": 1}", 11, &r);
    expect_error(&r, 400, "invalid_request");
    cr_assert(!r.closed);
    hc_free(&r);
    hc_request(fd, "GET", "/healthz", NULL, NULL, 0, &r);
    cr_assert_eq(r.status, 200);
    hc_free(&r);
    close(fd);
}

static void *asker(void *arg)
{
    long bad = (long)arg;
    int fd = hc_connect(port);
    for (int i = 0; i < 50; i++) {
        struct hc_response r;
        if (bad)
            hc_request(fd, "POST", "/ask", NULL, "{\"ask\": [", 9, &r);
        else
            hc_request(fd, "POST", "/ask", NULL, trips_ask, strlen(trips_ask), &r);
        int want = bad ? 400 : 200;
        bool ok = r.status == want;
        hc_free(&r);
        if (!ok) {
            close(fd);
            return (void *)1;
        }
    }
    close(fd);
    return NULL;
}

Test(serve_http, bad_requests_do_not_disturb_good_ones)
{
    pthread_t t[8];
    for (long i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, asker, (void *)(i % 2));
    for (int i = 0; i < 8; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        cr_assert_null(rc, "thread %d saw a wrong status", i);
    }
}

/* ---- /metrics ----------------------------------------------------------------------------- */

/* Each of want[0..n) is somewhere in body. */
static void expect_all(const char *body, const char *const *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(strstr(body, want[i]), "missing %s in\n%s", want[i], body);
}

Test(serve_http, metrics_after_asks)
{
    struct hc_response r;
    for (int i = 0; i < 3; i++) {
        post_ask(trips_ask, &r);
        cr_assert_eq(r.status, 200);
        hc_free(&r);
    }
    post_ask("{\"ask\": \"SELECT trips FROM dropoffs WHERE\"}", &r);
    cr_assert_eq(r.status, 400);
    hc_free(&r);
    post_ask("{\"ask\": 1}", &r);
    hc_free(&r);
    hc_once(port, "GET", "/nowhere", NULL, NULL, &r);
    hc_free(&r);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    hc_once(port, "GET", "/metrics", NULL, NULL, &r);
    cr_assert_eq(r.status, 200);
    char ct[80];
    cr_assert_str_eq(hc_header(&r, "Content-Type", ct, sizeof ct),
                     "text/plain; version=0.0.4; charset=utf-8");
    static const char *const want[] = {
        "# TYPE straum_asks_total counter\n",
        "straum_asks_total{view=\"trips\",status=\"200\"} 3\n",
        "straum_asks_total{view=\"dropoffs\",status=\"400\"} 1\n",
        "straum_asks_total{view=\"?\",status=\"400\"} 1\n",
        "# TYPE straum_ask_duration_seconds histogram\n",
        "straum_ask_duration_seconds_bucket{view=\"trips\",le=\"5e-05\"} ",
        "straum_ask_duration_seconds_bucket{view=\"trips\",le=\"0.001\"} ",
        "straum_ask_duration_seconds_bucket{view=\"trips\",le=\"+Inf\"} 3\n",
        "straum_ask_duration_seconds_sum{view=\"trips\"} ",
        "straum_ask_duration_seconds_count{view=\"trips\"} 3\n",
        "straum_http_requests_total{path=\"/ask\",status=\"200\"} 3\n",
        "straum_http_requests_total{path=\"/ask\",status=\"400\"} 2\n",
        "straum_http_requests_total{path=\"other\",status=\"404\"} 1\n",
        "# TYPE straum_open_connections gauge\nstraum_open_connections ",
        "straum_store_position_lsn 8613738312\n",
        "# TYPE straum_store_lag_seconds gauge\nstraum_store_lag_seconds ",
    };
    expect_all(r.body, want, sizeof want / sizeof want[0]);
    /* The connection asking for /metrics is open while it is written. */
    cr_assert_null(strstr(r.body, "straum_open_connections 0\n"), "%s", r.body);
    const char *lag = strstr(r.body, "\nstraum_store_lag_seconds ");
    double metric_lag = strtod(lag + strlen("\nstraum_store_lag_seconds "), NULL);
    hc_free(&r);

    /* The lag is /readyz's figure (store_lag_usec), read a moment later. */
    hc_once(port, "GET", "/readyz", NULL, NULL, &r);
    cJSON *j = cJSON_Parse(r.body);
    cr_assert_not_null(j, "%s", r.body);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double between = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    double ready_lag = cJSON_GetObjectItem(j, "lag_seconds")->valuedouble;
    /* Both printed to the microsecond: 1e-6 of rounding. */
    cr_assert(ready_lag >= metric_lag && ready_lag - metric_lag <= between + 1e-6,
              "metrics %f, readyz %f, %f s apart", metric_lag, ready_lag, between);
    cJSON_Delete(j);
    hc_free(&r);
}

/* ---- 401 ---------------------------------------------------------------------------------- */

Test(serve_http, token_required_for_asks_and_views)
{
    char token_path[] = "/tmp/straum-token-XXXXXX";
    int tfd = mkstemp(token_path);
    cr_assert_geq(tfd, 0);
    const char content[] = "  s3cret-Token_42 \n";
    cr_assert_eq(write(tfd, content, sizeof content - 1), (ssize_t)sizeof content - 1);
    close(tfd);
    struct serve_options o = {.store_dir = the_store, .token_file = token_path,
                              .max_lag_us = 60 * 1000000LL};
    struct serve_server *s2 = fixture_serve(&o);
    int p2 = serve_port(s2);

    struct hc_response r;
    char hdr[80];
    hc_once(p2, "POST", "/ask", NULL, trips_ask, &r);
    expect_error(&r, 401, "unauthorized");
    cr_assert_not_null(hc_header(&r, "WWW-Authenticate", hdr, sizeof hdr));
    hc_free(&r);
    hc_once(p2, "POST", "/ask", "Authorization: Bearer s3cret-Token_41\r\n", trips_ask, &r);
    expect_error(&r, 401, "unauthorized");
    hc_free(&r);
    hc_once(p2, "POST", "/ask", "Authorization: Bearer s3cret-Token_42x\r\n", trips_ask, &r);
    expect_error(&r, 401, "unauthorized");
    hc_free(&r);
    hc_once(p2, "POST", "/ask", "Authorization: Basic czNjcmV0\r\n", trips_ask, &r);
    expect_error(&r, 401, "unauthorized");
    hc_free(&r);
    hc_once(p2, "GET", "/views", NULL, NULL, &r);
    expect_error(&r, 401, "unauthorized");
    hc_free(&r);

    hc_once(p2, "POST", "/ask", "Authorization: Bearer s3cret-Token_42\r\n", trips_ask, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    hc_free(&r);
    hc_once(p2, "GET", "/views", "authorization: bearer s3cret-Token_42\r\n", NULL, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    hc_free(&r);

    /* Health and readiness stay open for probes and load balancers;
     * metrics (views, traffic, the store's position) need the token. */
    const char *open_paths[] = {"/healthz", "/readyz"};
    for (int i = 0; i < 2; i++) {
        hc_once(p2, "GET", open_paths[i], NULL, NULL, &r);
        cr_assert_eq(r.status, 200, "%s: %s", open_paths[i], r.body);
        hc_free(&r);
    }
    hc_once(p2, "GET", "/metrics", NULL, NULL, &r);
    expect_error(&r, 401, "unauthorized");
    cr_assert(strstr(r.body, "--public-metrics"), "%s", r.body);
    hc_free(&r);
    hc_once(p2, "GET", "/metrics", "Authorization: Bearer s3cret-Token_42\r\n", NULL, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert(strstr(r.body, "straum_asks_total"), "%s", r.body);
    hc_free(&r);
    serve_stop(s2);

    /* --public-metrics opens /metrics to scrapers without the token. */
    o.public_metrics = true;
    s2 = fixture_serve(&o);
    hc_once(serve_port(s2), "GET", "/metrics", NULL, NULL, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    hc_free(&r);
    hc_once(serve_port(s2), "POST", "/ask", NULL, trips_ask, &r);
    expect_error(&r, 401, "unauthorized");
    hc_free(&r);
    serve_stop(s2);
    unlink(token_path);
}

/* A token file others can read is refused at start, as ssh refuses such a
 * key: the token is only as secret as the file. */
Test(serve_http, token_file_readable_by_others_is_refused)
{
    char token_path[] = "/tmp/straum-token-XXXXXX";
    int tfd = mkstemp(token_path);
    cr_assert_geq(tfd, 0);
    cr_assert_eq(write(tfd, "tok\n", 4), 4);
    close(tfd);
    struct serve_options o = {.store_dir = the_store, .token_file = token_path,
                              .listen = "127.0.0.1:0", .quiet = true};
    static const mode_t refused[] = {0640, 0604, 0644, 0660, 0666, 0610};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        cr_assert_eq(chmod(token_path, refused[i]), 0);
        char err[600];
        cr_assert_null(serve_start(&o, err, sizeof err), "mode %o was taken", refused[i]);
        cr_assert(strstr(err, token_path) && strstr(err, "chmod 600"), "%s", err);
    }
    static const mode_t taken[] = {0600, 0400};
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
        cr_assert_eq(chmod(token_path, taken[i]), 0);
        char err[600];
        struct serve_server *s2 = serve_start(&o, err, sizeof err);
        cr_assert_not_null(s2, "mode %o: %s", taken[i], err);
        serve_stop(s2);
    }
    unlink(token_path);
}

/* ---- The route table ------------------------------------------------------------------ */

/* A row's handler: what the row read, back. */
static enum MHD_Result echo(struct serve_server *s, struct MHD_Connection *c, int route,
                            const char *body, size_t len)
{
    struct buf b = {0};
    buf_puts(&b, "echo:");
    buf_put(&b, body, len);
    return send_buf(s, c, route, 200, &b, "text/plain", NULL);
}

/* An endpoint is one row: rows added to straum-serve's table are served
 * beside its own, each method a row does not take gets 405 with the row's
 * methods in Allow, a row's token column asks for the token, the 404 names
 * the rows, and /metrics counts each row under its label. */
Test(serve_http, a_route_added_to_the_table_is_served)
{
    char token_path[] = "/tmp/straum-token-XXXXXX";
    int tfd = mkstemp(token_path);
    cr_assert_geq(tfd, 0);
    cr_assert_eq(write(tfd, "t0k\n", 4), 4);
    close(tfd);
    struct serve_route routes[32];
    cr_assert_lt(serve_nroutes + 2, 32);
    memcpy(routes, serve_routes, (size_t)serve_nroutes * sizeof *routes);
    int n = serve_nroutes;
    routes[n++] = (struct serve_route){"/echo", ROUTE_GET | ROUTE_POST, false, true, false, echo,
                                       "/echo"};
    routes[n++] = (struct serve_route){"/secret", ROUTE_GET, true, false, false, echo, "/secret"};
    struct serve_options o = {.store_dir = the_store, .listen = "127.0.0.1:0", .quiet = true,
                              .threads = 2, .token_file = token_path,
                              .public_metrics = true}; /* /metrics read below without it */
    char err[600];
    struct serve_server *s2 = serve_start_routes(&o, routes, n, err, sizeof err);
    cr_assert_not_null(s2, "serve_start_routes: %s", err);
    int p2 = serve_port(s2);

    struct hc_response r;
    hc_once(p2, "POST", "/echo", NULL, "hello", &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert_str_eq(r.body, "echo:hello");
    hc_free(&r);
    hc_once(p2, "GET", "/echo", NULL, NULL, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert_str_eq(r.body, "echo:");
    hc_free(&r);
    expect_405(p2, "DELETE", "/echo", NULL, "GET, HEAD, POST");
    expect_405(p2, "PUT", "/secret", "x", "GET, HEAD");
    hc_once(p2, "GET", "/secret", NULL, NULL, &r);
    expect_error(&r, 401, "unauthorized");
    hc_free(&r);
    hc_once(p2, "GET", "/secret", "Authorization: Bearer t0k\r\n", NULL, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    hc_free(&r);
    hc_once(p2, "GET", "/healthz", NULL, NULL, &r); /* the table's own rows still answer */
    cr_assert_eq(r.status, 200, "%s", r.body);
    hc_free(&r);
    hc_once(p2, "GET", "/nowhere", NULL, NULL, &r);
    expect_error(&r, 404, "not_found");
    cr_assert(strstr(r.body, "GET /views, /healthz, /readyz, /metrics, GET or POST /echo and "
                             "GET /secret"), "%s", r.body);
    hc_free(&r);

    hc_once(p2, "GET", "/metrics", NULL, NULL, &r);
    cr_assert_eq(r.status, 200);
    static const char *const want[] = {
        "straum_http_requests_total{path=\"/healthz\",status=\"200\"} 1\n",
        "straum_http_requests_total{path=\"/echo\",status=\"200\"} 2\n",
        "straum_http_requests_total{path=\"/echo\",status=\"405\"} 1\n",
        "straum_http_requests_total{path=\"/secret\",status=\"200\"} 1\n",
        "straum_http_requests_total{path=\"/secret\",status=\"401\"} 1\n",
        "straum_http_requests_total{path=\"/secret\",status=\"405\"} 1\n",
        "straum_http_requests_total{path=\"other\",status=\"404\"} 1\n",
    };
    expect_all(r.body, want, sizeof want / sizeof want[0]);
    hc_free(&r);
    serve_stop(s2);
    unlink(token_path);
}

/* ---- 503 ---------------------------------------------------------------------------------- */

Test(serve_http, readyz_503_when_the_store_lags)
{
    /* Last contact an hour ago, and behind at it. */
    char lag_dir[64];
    struct store_position pos = {.lsn = 42, .commit_time = wall_us() - 7200 * 1000000LL,
                                 .contact_time = wall_us() - 3600 * 1000000LL,
                                 .bytes_behind = 4096};
    fixture_make_store(lag_dir, &pos);
    struct serve_options o = {.store_dir = lag_dir, .max_lag_us = 10 * 1000000LL};
    struct serve_server *s2 = fixture_serve(&o);
    struct hc_response r;
    hc_once(serve_port(s2), "GET", "/readyz", NULL, NULL, &r);
    expect_error(&r, 503, "not_ready");
    cr_assert(strstr(r.body, "--max-lag"), "%s", r.body);
    hc_free(&r);
    /* Not ready is not unhealthy, and asks are still answered. */
    hc_once(serve_port(s2), "GET", "/healthz", NULL, NULL, &r);
    cr_assert_eq(r.status, 200);
    hc_free(&r);
    serve_stop(s2);

    /* Idle but in touch: an old commit, a fresh contact, nothing behind. */
    char idle_dir[64];
    pos = (struct store_position){.lsn = 42, .commit_time = wall_us() - 7200 * 1000000LL,
                                  .contact_time = wall_us(), .bytes_behind = 0};
    fixture_make_store(idle_dir, &pos);
    o.store_dir = idle_dir;
    s2 = fixture_serve(&o);
    hc_once(serve_port(s2), "GET", "/readyz", NULL, NULL, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    hc_free(&r);
    serve_stop(s2);

    /* Idle, in touch an hour ago: lagging. --max-lag 0 turns the check off. */
    pos.contact_time = wall_us() - 3600 * 1000000LL;
    fixture_remove_store(idle_dir);
    fixture_make_store(idle_dir, &pos);
    s2 = fixture_serve(&o);
    hc_once(serve_port(s2), "GET", "/readyz", NULL, NULL, &r);
    expect_error(&r, 503, "not_ready");
    hc_free(&r);
    serve_stop(s2);
    o.max_lag_us = 0;
    s2 = fixture_serve(&o);
    hc_once(serve_port(s2), "GET", "/readyz", NULL, NULL, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    hc_free(&r);
    serve_stop(s2);

    fixture_remove_store(lag_dir);
    fixture_remove_store(idle_dir);
}

Test(serve_http, readyz_503_before_the_first_position)
{
    char dir[64];
    struct store_position pos = {0};
    fixture_make_store(dir, &pos);
    struct serve_options o = {.store_dir = dir, .max_lag_us = 10 * 1000000LL};
    struct serve_server *s2 = fixture_serve(&o);
    struct hc_response r;
    hc_once(serve_port(s2), "GET", "/readyz", NULL, NULL, &r);
    expect_error(&r, 503, "not_ready");
    hc_free(&r);
    serve_stop(s2);
    fixture_remove_store(dir);
}

/* ---- 422, 503 and 500 from the engine --------------------------------------------- */

Test(serve_http, engine_limits_map_to_422_and_503)
{
    struct serve_options o = {.store_dir = the_store, .max_groups = 2};
    struct serve_server *s2 = fixture_serve(&o);
    struct hc_response r;
    hc_once(serve_port(s2), "POST", "/ask", NULL, trips_ask, &r);
    expect_error(&r, 422, NULL);
    hc_free(&r);
    serve_stop(s2);

    o = (struct serve_options){.store_dir = the_store, .ask_timeout_us = 1};
    s2 = fixture_serve(&o);
    hc_once(serve_port(s2), "POST", "/ask", NULL, trips_ask, &r);
    expect_error(&r, 503, NULL);
    hc_free(&r);
    hc_once(serve_port(s2), "GET", "/healthz", NULL, NULL, &r);
    cr_assert_eq(r.status, 200);
    hc_free(&r);
    serve_stop(s2);
}

/* ---- Hostile asks: each meets its limit, and others go on ------------------------------- */

/* Clients asking steadily on their own connections until told to stop;
 * each counts answers that were not a right 200. */
/* A gauge of /metrics (with the token when one is given). */
static double metric(int p, const char *name)
{
    struct hc_response r;
    hc_once(p, "GET", "/metrics", NULL, NULL, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    char want[128];
    snprintf(want, sizeof want, "\n%s ", name);
    const char *at = strstr(r.body, want);
    cr_assert_not_null(at, "no %s in\n%s", name, r.body);
    double v = strtod(at + strlen(want), NULL);
    hc_free(&r);
    return v;
}

/* IN lists of 30,000 values (the most a 64 KiB ask holds), on a fact key
 * and on a dim column: exact answers, probed as sets. A second condition
 * makes the ask read the fine cells, not a rollup's few rows. */
Test(serve_http, hostile_in_lists_answer_exactly_and_others_go_on)
{
    struct steady st;
    steady_start(&st, port);
    enum { NVALUES = 30000 };
    size_t cap = 70000;
    char *body = malloc(cap);
    size_t n = (size_t)snprintf(body, cap, "{\"ask\": \"SELECT trips FROM trips WHERE bucket >= "
                                "'2024-01-01 00:00:00+00' AND bucket < '2024-01-08 00:00:00+00' AND "
                                "pu_location_id IS NOT NULL AND payment_type IN (");
    for (int i = 0; i < NVALUES; i++)
        n += (size_t)snprintf(body + n, cap - n, i ? ",%d" : "%d", i == NVALUES - 1 ? 3 : 2);
    n += (size_t)snprintf(body + n, cap - n, ")\"}");
    cr_assert_lt(n, cap);
    for (int round = 0; round < 20; round++) {
        struct hc_response r;
        post_ask(body, &r);
        cr_assert_eq(r.status, 200, "%d %.300s", r.status, r.body);
        char want[64];
        int64_t week = 7 * 86400000000LL;
        snprintf(want, sizeof want, "\"rows\":[[%lld]]",
                 (long long)(fixture_count(2, FIXTURE_START_US, FIXTURE_START_US + week) +
                             fixture_count(3, FIXTURE_START_US, FIXTURE_START_US + week)));
        cr_assert(strstr(r.body, want), "%s, want %s", r.body, want);
        hc_free(&r);
    }
    /* Boroughs: Queens (zones 1, 4, 7, 10) 6,000 times, and one that is none. */
    n = (size_t)snprintf(body, cap, "{\"ask\": \"SELECT trips FROM trips WHERE bucket >= "
                         "'2024-01-01 00:00:00+00' AND bucket < '2024-01-08 00:00:00+00' AND "
                         "borough IN ('Nowhere'");
    for (int i = 0; i < 6000; i++)
        n += (size_t)snprintf(body + n, cap - n, ",'Queens'");
    n += (size_t)snprintf(body + n, cap - n, ")\"}");
    cr_assert_lt(n, cap);
    int64_t queens = 0;
    for (int i = 0; i < FIXTURE_TRIPS; i++) {
        struct trip tr = fixture_trip(i);
        queens += tr.pu <= 10 && tr.pu % 3 == 1;
    }
    struct hc_response r;
    post_ask(body, &r);
    cr_assert_eq(r.status, 200, "%d %.300s", r.status, r.body);
    char want[64];
    snprintf(want, sizeof want, "\"rows\":[[%lld]]", (long long)queens);
    cr_assert(strstr(r.body, want), "%s, want %s", r.body, want);
    hc_free(&r);
    free(body);
    steady_stop(&st);
}

/* Distinct ask texts, small and at the 64 KiB limit: the compiled-ask cache
 * stays within its entries and bytes (the least recently asked go), every
 * ask is still answered right, and others go on. */
Test(serve_http, hostile_distinct_asks_keep_the_cache_bounded_and_others_go_on)
{
    struct serve_options o = {.store_dir = the_store, .ask_cache = 40,
                              .ask_cache_bytes = 4u << 20};
    struct serve_server *s2 = fixture_serve(&o);
    int p2 = serve_port(s2);
    struct steady st;
    steady_start(&st, p2);
    size_t cap = 66000;
    char *body = malloc(cap);
    for (int i = 0; i < 600; i++) {
        /* Every tenth ask a long one: a comment pads it to about 60 KiB. */
        int pad = i % 10 == 9 ? 60000 : 0;
        int n = snprintf(body, cap, "{\"ask\": \"SELECT trips FROM trips WHERE bucket >= $1 AND "
                         "bucket < $2 /* %d %*s */\", \"params\": [\"2024-01-01 00:00:00+00\", "
                         "\"2024-01-08 00:00:00+00\"]}", i, pad, "");
        cr_assert_lt((size_t)n, cap);
        struct hc_response r;
        hc_once(p2, "POST", "/ask", NULL, body, &r);
        char want[32];
        snprintf(want, sizeof want, "\"rows\":[[%d]]", FIXTURE_TRIPS);
        cr_assert(r.status == 200 && strstr(r.body, want), "ask %d: %d %.200s", i, r.status, r.body);
        hc_free(&r);
        if (i % 50 == 49) {
            cr_assert_leq(metric(p2, "straum_ask_cache_entries"), 40);
            cr_assert_leq(metric(p2, "straum_ask_cache_bytes"), 4u << 20);
        }
    }
    cr_assert_gt(metric(p2, "straum_ask_cache_entries"), 0);
    free(body);
    steady_stop(&st);
    serve_stop(s2);
}

/* An ask past its time budget is cut inside its scan (within BUDGET_CELLS
 * cells), not at the end of a segment, and others go on. */
Test(serve_http, hostile_slow_ask_is_cut_inside_its_scan_and_others_go_on)
{
    struct serve_options o = {.store_dir = the_store, .ask_timeout_us = 1};
    struct serve_server *s2 = fixture_serve(&o);
    int p2 = serve_port(s2);
    /* The same ask answers whole on the server at hand (the default budget). */
    const char *fine = "{\"ask\": \"SELECT bucket, pu_location_id, payment_type, trips FROM trips "
                       "WHERE bucket >= '2024-01-01 00:00:00+00' AND bucket < '2024-01-08 00:00:00+00' "
                       "GROUP BY bucket, pu_location_id, payment_type\"}";
    struct hc_response r;
    post_ask(fine, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cJSON *j = cJSON_Parse(r.body);
    int cells = cJSON_GetArraySize(cJSON_GetObjectItem(j, "rows"));
    cr_assert_gt(cells, 2048, "%d cells", cells);
    cJSON_Delete(j);
    hc_free(&r);
    struct steady st;
    steady_start(&st, port);
    /* Twenty cut asks, and more until the steady clients have been
     * answered meanwhile: twenty cut within their first cells can all end
     * before a steady client's first answer. */
    for (int i = 0; i < 20 || (atomic_load(&st.answers) == 0 && i < 20000); i++) {
        hc_once(p2, "POST", "/ask", NULL, fine, &r);
        expect_error(&r, 503, "ask_timeout");
        const char *after = strstr(r.body, " after ");
        cr_assert_not_null(after, "%s", r.body);
        long read = strtol(after + 7, NULL, 10);
        cr_assert_leq(read, 1024, "cut after %ld cells: %s", read, r.body);
        hc_free(&r);
        hc_once(p2, "GET", "/healthz", NULL, NULL, &r);
        cr_assert_eq(r.status, 200);
        hc_free(&r);
    }
    steady_stop(&st);
    serve_stop(s2);
}

/* An ask whose scratch passes --ask-memory is refused at once with 422
 * ask_memory naming the limit, and the same server goes on answering the
 * asks that fit, each under its own budget (a budget is an ask's, not the
 * server's: twenty refusals leave nothing held). */
Test(serve_http, hostile_ask_past_ask_memory_is_422_and_others_go_on)
{
    struct serve_options o = {.store_dir = the_store, .ask_memory = 256 << 10};
    struct serve_server *s2 = fixture_serve(&o);
    int p2 = serve_port(s2);
    /* Every (hour, zone, payment type) of a week, with a median: over a
     * thousand groups, each with its value counts. */
    const char *heavy = "{\"ask\": \"SELECT bucket, pu_location_id, payment_type, trips, median_fare "
                        "FROM trips WHERE bucket >= '2024-01-01 00:00:00+00' AND "
                        "bucket < '2024-01-08 00:00:00+00' "
                        "GROUP BY bucket, pu_location_id, payment_type\"}";
    struct hc_response r;
    post_ask(heavy, &r); /* the default budget answers it */
    cr_assert_eq(r.status, 200, "%s", r.body);
    cJSON *j = cJSON_Parse(r.body);
    int groups = cJSON_GetArraySize(cJSON_GetObjectItem(j, "rows"));
    cr_assert_gt(groups, 1000, "%d groups", groups);
    cJSON_Delete(j);
    hc_free(&r);
    struct steady st;
    steady_start(&st, p2);
    /* Twenty refusals, and more until the steady clients have been
     * answered meanwhile (a refusal comes within the ask's first
     * allocations: twenty can all end before a steady client's first answer). */
    for (int i = 0; i < 20 || (atomic_load(&st.answers) == 0 && i < 20000); i++) {
        hc_once(p2, "POST", "/ask", NULL, heavy, &r);
        expect_error(&r, 422, "ask_memory");
        cr_assert(strstr(r.body, "--ask-memory") && strstr(r.body, "256 KiB"),
                  "%s", r.body);
        hc_free(&r);
    }
    steady_stop(&st);
    serve_stop(s2);
}

/* Flips bytes inside every segment block of the trips view, in the file. */
static void corrupt_trips_segments(const char *dir)
{
    struct store *st;
    struct store_error err;
    cr_assert_eq(store_open(dir, STORE_READ_ONLY, &st, &err), 0, "%s", err.message);
    struct store_read *rd;
    cr_assert_eq(store_read_begin(st, &rd, &err), 0);
    struct { unsigned char *bytes; size_t len; } blocks[256];
    int nblocks = 0;
    for (int w = 0; w < store_views(st)->views[0].nwidths; w++) {
        struct store_segment_iter it;
        struct store_segment seg;
        cr_assert_eq(store_segments_begin(rd, 0, w, INT64_MIN, INT64_MAX, &it, &err), 0);
        while (store_segments_next(&it, &seg, &err) == 1 && nblocks < 256) {
            blocks[nblocks].bytes = malloc(seg.len);
            memcpy(blocks[nblocks].bytes, seg.bytes, seg.len);
            blocks[nblocks++].len = seg.len;
        }
        store_segments_end(&it);
    }
    store_read_end(rd);
    store_close(st);
    cr_assert_gt(nblocks, 0);

    char path[128];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    unsigned char *file = malloc((size_t)size);
    fseek(f, 0, SEEK_SET);
    cr_assert_eq(fread(file, 1, (size_t)size, f), (size_t)size);
    for (int b = 0; b < nblocks; b++) {
        unsigned char *at = memmem(file, (size_t)size, blocks[b].bytes, blocks[b].len);
        cr_assert_not_null(at, "block %d not found in data.mdb", b);
        for (int k = 1; k < 8; k++)
            at[blocks[b].len * (size_t)k / 8] ^= 0x5A;
        free(blocks[b].bytes);
    }
    fseek(f, 0, SEEK_SET);
    cr_assert_eq(fwrite(file, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    free(file);
}

Test(serve_http, corrupt_block_is_500_naming_it)
{
    char dir[64];
    struct store_position pos = {.lsn = 1, .contact_time = wall_us()};
    fixture_make_store(dir, &pos);
    corrupt_trips_segments(dir);
    struct serve_options o = {.store_dir = dir};
    struct serve_server *s2 = fixture_serve(&o);
    struct hc_response r;
    const char *ask = "{\"ask\": \"SELECT payment_type, trips, fare, median_fare FROM trips "
                      "WHERE bucket >= $1 AND bucket < $2 GROUP BY payment_type\", \"params\": "
                      "[\"2024-01-01 00:00:00+00\", \"2024-01-08 00:00:00+00\"]}";
    hc_once(serve_port(s2), "POST", "/ask", NULL, ask, &r);
    expect_error(&r, 500, "corrupt_store"); /* the message names the block */
    hc_free(&r);
    /* The other view and the server are untouched. */
    hc_once(serve_port(s2), "POST", "/ask", NULL,
            "{\"ask\": \"SELECT trips FROM dropoffs WHERE bucket >= '2024-01-01 00:00:00+00' "
            "AND bucket < '2024-01-08 00:00:00+00'\"}", &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    hc_free(&r);
    serve_stop(s2);
    fixture_remove_store(dir);
}

/* A delta block taking away a trip that was never there (payment type 9)
 * is only found out where it is merged (SPEC.md §4.3 "Delta blocks"): an
 * ask whose groups it reaches is a 500 naming the cause, and every other
 * ask answers, whatever segments its plan looks at. Asks read a segment's
 * base and deltas apart: merging them to plan an ask would re-encode the
 * segment each time (the widest width's one holds every row). */
Test(serve_http, a_delta_gone_negative_fails_only_the_asks_that_reach_it)
{
    char dir[64];
    struct store_position pos = {.lsn = 1, .contact_time = wall_us()};
    fixture_make_store(dir, &pos);
    struct store *st;
    struct store_error err;
    cr_assert_eq(store_open(dir, STORE_READ_WRITE, &st, &err), 0, "%s", err.message);
    struct trip ghost = fixture_trip(0);
    ghost.payment = 9;
    ghost.pickup_at = FIXTURE_START_US + 3 * 86400000000LL + 1800000000LL;
    fixture_apply_trip(st, &ghost, -1);
    pos.lsn = 2;
    cr_assert_eq(store_commit(st, &pos, &err), 0, "%s", err.message);
    store_close(st);

    struct serve_options o = {.store_dir = dir};
    struct serve_server *s2 = fixture_serve(&o);
    struct hc_response r;
    static const char *const others[] = {
        "SELECT payment_type, trips FROM trips WHERE bucket >= '2024-01-01 00:00:00+00' AND "
        "bucket < '2024-01-08 00:00:00+00' AND payment_type IN (0, 1) GROUP BY payment_type",
        "SELECT trips FROM trips WHERE bucket >= '2024-01-02 07:00:00+00' AND "
        "bucket < '2024-01-06 00:00:00+00' AND payment_type = 1",
        "SELECT payment_type, trips FROM trips WHERE payment_type < 2 GROUP BY payment_type",
        "SELECT date_trunc('day', bucket) AS d, trips FROM trips WHERE payment_type = 0 "
        "GROUP BY d",
    };
    for (size_t a = 0; a < sizeof others / sizeof others[0]; a++) {
        char body[1024];
        snprintf(body, sizeof body, "{\"ask\": \"%s\"}", others[a]);
        hc_once(serve_port(s2), "POST", "/ask", NULL, body, &r);
        cr_assert_eq(r.status, 200, "%s: %s", others[a], r.body);
        hc_free(&r);
    }
    hc_once(serve_port(s2), "POST", "/ask", NULL,
            "{\"ask\": \"SELECT payment_type, trips FROM trips GROUP BY payment_type\"}", &r);
    expect_error(&r, 500, "corrupt_store");
    /* The message names the segment that holds the ghost, with the reason. */
    const char *span = strstr(r.body, "span ");
    cr_assert(span && strstr(r.body, "went negative"), "%s", r.body);
    long long span_start = strtoll(span + 5, NULL, 10);
    cr_assert(span_start <= ghost.pickup_at && ghost.pickup_at - span_start < 366 * 86400000000LL,
              "%s", r.body);
    hc_free(&r);
    serve_stop(s2);
    fixture_remove_store(dir);
}

/* ---- Start-up refusals ------------------------------------------------------------------- */

Test(serve_http, refuses_bad_options)
{
    char err[600];
    struct serve_options o = {.store_dir = the_store, .listen = "0.0.0.0:0", .quiet = true};
    cr_assert_null(serve_start(&o, err, sizeof err));
    cr_assert(strstr(err, "--token-file") && strstr(err, "--public"), "%s", err);
    o.listen = "[::]:0";
    cr_assert_null(serve_start(&o, err, sizeof err));
    o.listen = "::1:8080";
    cr_assert_null(serve_start(&o, err, sizeof err));
    cr_assert(strstr(err, "brackets"), "%s", err);
    o.listen = "127.0.0.1:99999";
    cr_assert_null(serve_start(&o, err, sizeof err));
    o.listen = "127.0.0.1:0";
    o.store_dir = "/nonexistent/store";
    cr_assert_null(serve_start(&o, err, sizeof err));
    cr_assert(strstr(err, "/nonexistent/store"), "%s", err);
    /* The same port twice without --reuse-port. */
    char where[32];
    snprintf(where, sizeof where, "127.0.0.1:%d", port);
    o.store_dir = the_store;
    o.listen = where;
    cr_assert_null(serve_start(&o, err, sizeof err));
    cr_assert(strstr(err, "--reuse-port"), "%s", err);
}

Test(serve_http, loopback_forms_of_listen)
{
    const char *forms[] = {":0", "localhost:0", "[::1]:0", "127.0.0.2:0"};
    for (int i = 0; i < 4; i++) {
        char err[600];
        struct serve_options o = {.store_dir = the_store, .listen = forms[i], .quiet = true,
                                  .threads = 1};
        struct serve_server *s2 = serve_start(&o, err, sizeof err);
        if (!s2 && i == 2 && strstr(err, "cannot listen"))
            continue; /* no IPv6 on this machine */
        cr_assert_not_null(s2, "%s: %s", forms[i], err);
        serve_stop(s2);
    }
}
