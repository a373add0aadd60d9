/* test_serve_gate.c -- straum-serve's front gate (serve/gate.c): bytes on
 * the HTTP port that are not an HTTP/1.x request get a status and a closed
 * connection at once, not silence until a timeout; what is HTTP passes to
 * the server as before; others are answered meanwhile.
 *
 * Each case sends its bytes on a fresh connection and wants, within 1 s,
 * the status and the error JSON, then the connection closed cleanly (EOF,
 * not a reset that could lose the answer). */
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
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static char the_store[64];
static struct serve_server *server;
static int port;

static void setup(void)
{
    struct store_position pos = {.lsn = 0x16B3748ULL, .commit_time = wall_us() - 3600 * 1000000LL,
                                 .contact_time = wall_us()};
    fixture_make_store(the_store, &pos);
    struct serve_options o = {.store_dir = the_store};
    server = fixture_serve(&o);
    port = serve_port(server);
}

static void teardown(void)
{
    serve_stop(server);
    server = NULL;
    fixture_remove_store(the_store);
}

TestSuite(serve_gate, .init = setup, .fini = teardown, .timeout = 120);

static double since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* After a response: the server's end closed cleanly within 1 s (recv
 * gets 0), not held open and not reset. */
static void expect_eof(int fd, const char *what)
{
    struct timeval tv = {.tv_sec = 1};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[256];
    ssize_t n;
    while ((n = recv(fd, b, sizeof b, 0)) > 0)
        ;
    cr_assert_eq(n, 0, "%s: the connection is %s instead of closed", what,
                 n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? "still open after 1 s"
                                                                    : "reset");
}

/* Sends len bytes (then half-closes when shut), and wants status with the
 * error code (and a message naming `names`, when given) within 1 s, then
 * the connection closed. */
static void expect_refused(const char *what, const void *bytes, size_t len, bool shut,
                           int status, const char *code, const char *names)
{
    int fd = hc_connect(port);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert(hc_send(fd, bytes, len), "%s: send failed", what);
    if (shut)
        shutdown(fd, SHUT_WR);
    struct hc_response r;
    hc_read(fd, &r, 1000);
    cr_assert_eq(r.status, status, "%s: status %d within 1 s, want %d (%s)", what, r.status,
                 status, r.body ? r.body : "no body");
    cJSON *j = cJSON_Parse(r.body);
    cr_assert_not_null(j, "%s: not JSON: %s", what, r.body);
    cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
    cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
    cr_assert(cJSON_IsString(c) && cJSON_IsString(m), "%s: %s", what, r.body);
    cr_assert_str_eq(c->valuestring, code, "%s: %s", what, r.body);
    if (names)
        cr_assert(strstr(m->valuestring, names), "%s: the message does not name %s: %s", what,
                  names, m->valuestring);
    cJSON_Delete(j);
    char conn[32];
    cr_assert(hc_header(&r, "Connection", conn, sizeof conn) && strcmp(conn, "close") == 0,
              "%s: no Connection: close", what);
    hc_free(&r);
    expect_eof(fd, what);
    cr_assert_lt(since(&t0), 1.5, "%s: %.2f s to be refused", what, since(&t0));
    close(fd);
}

/* A ClientHello as a TLS 1.2/1.3 client opens (record header, handshake
 * header, version, the start of its random). */
static const unsigned char client_hello[] = {
    0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x5b, 0x8e, 0x1f, 0x27,
    0x90, 0xa2, 0x44, 0x0c, 0x3d, 0x71, 0x19, 0xe0, 0x4b, 0x6d, 0x2a, 0x8f, 0x00, 0x13, 0x01};
/* PostgreSQL's SSLRequest (what psql sends first) and a startup packet. */
static const unsigned char pg_ssl_request[] = {0x00, 0x00, 0x00, 0x08, 0x04, 0xd2, 0x16, 0x2f};
static const unsigned char pg_startup[] = {
    0x00, 0x00, 0x00, 0x25, 0x00, 0x03, 0x00, 0x00, 'u', 's', 'e', 'r', 0, 's', 't', 'r',
    'a', 'u', 'm', 0, 'd', 'a', 't', 'a', 'b', 'a', 's', 'e', 0, 't', 'a', 'x', 'i', 0, 0};

/* One kind of bytes the gate refuses. group: which test it belongs to. */
struct gate_case {
    int group;
    const char *what;
    const void *bytes;
    size_t len;
    bool shut;          /* half-close after sending */
    int status;
    const char *code;
    const char *names;  /* the message names this, or NULL */
};

enum { NOT_HTTP, BAD_LINE, HALF_SENT };

#define CASE(s) s, sizeof s - 1

static unsigned char blob[4096];
static char long_line[9100], long_unended[9100];

static const struct gate_case cases[] = {
    {NOT_HTTP, "NUL-led garbage", CASE("\x00\x01\x02garbage\r\n\r\n"), false, 400, "not_http", NULL},
    {NOT_HTTP, "a binary blob", blob, sizeof blob, false, 400, "not_http", NULL},
    {NOT_HTTP, "a TLS ClientHello", client_hello, sizeof client_hello, false, 400, "not_http", "TLS"},
    {NOT_HTTP, "PostgreSQL's SSLRequest", pg_ssl_request, sizeof pg_ssl_request, false, 400,
     "not_http", "PostgreSQL"},
    {NOT_HTTP, "a PostgreSQL startup packet", pg_startup, sizeof pg_startup, false, 400, "not_http",
     "PostgreSQL"},
    {NOT_HTTP, "JSON without a request", CASE("{\"ask\": \"SELECT 1\"}\r\n"), false, 400, "not_http",
     NULL},
    {BAD_LINE, "a NUL in the request line", CASE("GET /hea\0lthz HTTP/1.1\r\nHost: x\r\n\r\n"),
     false, 400, "bad_request_line", NULL},
    {BAD_LINE, "a control byte in the target", CASE("GET /a\x01z HTTP/1.1\r\n\r\n"), false, 400,
     "bad_request_line", NULL},
    {BAD_LINE, "a bad method byte", CASE("GE(T /healthz HTTP/1.1\r\n\r\n"), false, 400,
     "bad_request_line", NULL},
    {BAD_LINE, "words after the version", CASE("GET /healthz HTTP/1.1 please\r\n\r\n"), false, 400,
     "bad_request_line", NULL},
    {BAD_LINE, "a misspelt version", CASE("GET /healthz HTTQ/1.1\r\n\r\n"), false, 400,
     "bad_request_line", NULL},
    {BAD_LINE, "a space in the target", CASE("GET /health z HTTP/1.1\r\n\r\n"), false, 400,
     "bad_request_line", NULL},
    {BAD_LINE, "HTTP/0.9", CASE("GET /healthz\r\n"), false, 505, "http_version_not_supported",
     "HTTP/1.1"},
    {BAD_LINE, "HTTP/2's preface", CASE("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), false, 505,
     "http_version_not_supported", "HTTP/1.1"},
    {BAD_LINE, "HTTP/3.0", CASE("GET /healthz HTTP/3.0\r\nHost: x\r\n\r\n"), false, 505,
     "http_version_not_supported", NULL},
    {BAD_LINE, "a request line past the limit, unended", long_unended, 5 + 9000, false, 414,
     "request_line_too_long", "8192"},
    {BAD_LINE, "a request line past the limit", long_line, 5 + 9000 + 13, false, 414,
     "request_line_too_long", "8192"},
    {HALF_SENT, "half a request line", CASE("GET /heal"), true, 400, "incomplete_request",
     "closed"},
    {HALF_SENT, "half the headers", CASE("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Ha"), true, 400,
     "incomplete_request", "closed"},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* The cases' bytes made at run time: a blob led by 0xff, request lines
 * of 9,000 bytes of target. */
static void make_cases(void)
{
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof blob; i++) {
        x = x * 1103515245u + 12345u;
        blob[i] = (unsigned char)(x >> 24);
    }
    blob[0] = 0xff;
    memcpy(long_unended, "GET /", 5);
    memset(long_unended + 5, 'a', 9000);
    memcpy(long_line, long_unended, 5 + 9000);
    memcpy(long_line + 5 + 9000, " HTTP/1.1\r\n\r\n", 13);
}

static void run_group(int group)
{
    make_cases();
    for (int i = 0; i < NCASES; i++)
        if (cases[i].group == group)
            expect_refused(cases[i].what, cases[i].bytes, cases[i].len, cases[i].shut,
                           cases[i].status, cases[i].code, cases[i].names);
}

Test(serve_gate, bytes_that_are_not_http_get_400_at_once) { run_group(NOT_HTTP); }

Test(serve_gate, bad_request_lines_get_a_status_at_once) { run_group(BAD_LINE); }

/* A client that stops mid-request and closes its side: answered at once,
 * not held until the timeout. */
Test(serve_gate, half_sent_then_closed_is_answered_at_once)
{
    run_group(HALF_SENT);
    /* Nothing sent: closed without a word. */
    int fd = hc_connect(port);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    shutdown(fd, SHUT_WR);
    expect_eof(fd, "a connection closed without a byte");
    cr_assert_lt(since(&t0), 1.5);
    close(fd);
}

/* Past the gate (the head whole): a body cut short by a close can never
 * complete, and the connection is closed within about a second (the
 * request deadline's sweep), not held until the 30 s timeout; a client that
 * half-closes after its last request is closed too, its answer sent. */
Test(serve_gate, a_body_cut_short_by_a_close_is_closed_soon)
{
    static const char *halves[] = {
        "POST /ask HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"ask",
        "POST /ask HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{\"ask",
        "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
    };
    /* Twenty of each at once: whether the close reaches the server before
     * or after libmicrohttpd's first read of the bytes is a race, and
     * the first order is the one that waited out the timeout. */
    enum { N = 20 };
    for (int i = 0; i < 3; i++) {
        int fds[N];
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int k = 0; k < N; k++) {
            fds[k] = hc_connect(port);
            hc_send(fds[k], halves[i], strlen(halves[i]));
            shutdown(fds[k], SHUT_WR);
        }
        for (int k = 0; k < N; k++) {
            struct timeval tv = {.tv_sec = 5};
            setsockopt(fds[k], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            char b[512];
            ssize_t n, got = 0;
            while ((n = recv(fds[k], b, sizeof b, 0)) > 0)
                got += n;
            double t = since(&t0);
            cr_assert(n == 0 || (n < 0 && errno == ECONNRESET),
                      "case %d, connection %d: not closed within %.1f s", i, k, t);
            cr_assert_lt(t, 3.5, "case %d, connection %d: closed after %.1f s", i, k, t);
            if (i == 2)
                cr_assert_gt(got, 0, "a whole request got no answer before the close");
            close(fds[k]);
        }
    }
}

/* What is HTTP/1.x passes: leading empty lines (RFC 9112 §2.2), a request
 * line split over sends, HTTP/1.0, a method no route takes. */
Test(serve_gate, http_passes_the_gate)
{
    struct hc_response r;
    int fd = hc_connect(port);
    static const char lead[] = "\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    hc_send(fd, lead, sizeof lead - 1);
    hc_read(fd, &r, 5000);
    cr_assert_eq(r.status, 200, "leading CRLFs: %d", r.status);
    hc_free(&r);
    /* The same connection goes on: the gate hands it over whole. */
    hc_request(fd, "GET", "/healthz", NULL, NULL, 0, &r);
    cr_assert_eq(r.status, 200);
    cr_assert(!r.closed);
    hc_free(&r);
    close(fd);

    fd = hc_connect(port);
    hc_send(fd, "GE", 2);
    hc_send(fd, "T /hea", 6);
    hc_send(fd, "lthz HTTP/1.0\r\n", 15);
    hc_send(fd, "\r\n", 2);
    hc_read(fd, &r, 5000);
    cr_assert_eq(r.status, 200, "split, HTTP/1.0: %d", r.status);
    hc_free(&r);
    close(fd);

    fd = hc_connect(port);
    static const char brew[] = "BREW /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    hc_send(fd, brew, sizeof brew - 1);
    hc_read(fd, &r, 5000);
    cr_assert_eq(r.status, 405, "an unknown method: %d %s", r.status, r.body);
    hc_free(&r);
    close(fd);

    /* A request with a body that arrives after the head. */
    static const char ask[] = "{\"ask\": \"SELECT trips FROM trips WHERE bucket >= "
                              "'2024-01-01 00:00:00+00' AND bucket < '2024-01-02 00:00:00+00'\"}";
    char head[200];
    snprintf(head, sizeof head, "POST /ask HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
             sizeof ask - 1);
    fd = hc_connect(port);
    hc_send(fd, head, strlen(head));
    hc_send(fd, ask, sizeof ask - 1);
    hc_read(fd, &r, 5000);
    cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
    hc_free(&r);
    close(fd);
}

/* A gauge or counter line of /metrics: the value after `line`. */
static double metric_line(const char *line)
{
    struct hc_response r;
    hc_once(port, "GET", "/metrics", NULL, NULL, &r);
    cr_assert_eq(r.status, 200);
    char want[200];
    snprintf(want, sizeof want, "\n%s ", line);
    const char *at = strstr(r.body, want);
    double v = at ? strtod(at + strlen(want), NULL) : 0;
    hc_free(&r);
    return v;
}

/* The gate's answers are counted as responses to "other", and the
 * connections it held are no longer open once refused. */
Test(serve_gate, refusals_are_counted_and_connections_released)
{
    const char *label = "straum_http_requests_total{path=\"other\",status=\"400\"}";
    double before = metric_line(label);
    for (int i = 0; i < 5; i++)
        expect_refused("garbage", CASE("\x00garbage\r\n\r\n"), false, 400, "not_http", NULL);
    cr_assert_eq(metric_line(label), before + 5);
    /* Only the /metrics connection itself is open (it counts while asking). */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double open;
    while ((open = metric_line("straum_open_connections")) > 1 && since(&t0) < 5)
        ;
    cr_assert_eq(open, 1, "%.0f connections open", open);
}

/* ---- Hostile soak: each kind tried many times while others ask ------------------------ */

/* Bytes sent to the PostgreSQL port that are no startup a client sends:
 * each must get an ErrorResponse ('E') and a close. */
static const struct {
    const char *what;
    const void *bytes;
    size_t len;
} pg_garbage[] = {
    {"HTTP on the PostgreSQL port", CASE("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")},
    {"a startup packet of protocol 2.0", CASE("\x00\x00\x00\x09\x00\x02\x00\x00\x00")},
    {"a length shorter than itself", CASE("\x00\x00\x00\x02\x00\x03\x00\x00")},
    {"a startup packet whose parameters never end",
     CASE("\x00\x00\x00\x11\x00\x03\x00\x00user\x00me\x00xx")},
};

/* Counts the hostile tries of one kind and how many were answered as they
 * must be. */
struct tally {
    const char *kind;
    int tried, right;
};

static void tally(struct tally *t, bool right)
{
    t->tried++;
    t->right += right;
}

/* One gate case, judged without failing the test (the soak counts). */
static bool gate_case_right(const struct gate_case *c)
{
    int fd = hc_connect(port);
    bool ok = hc_send(fd, c->bytes, c->len);
    if (c->shut)
        shutdown(fd, SHUT_WR);
    struct hc_response r;
    hc_read(fd, &r, 2000);
    ok = ok && r.status == c->status && r.body && strstr(r.body, c->code);
    hc_free(&r);
    if (ok) {
        struct timeval tv = {.tv_sec = 2};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        char b[256];
        ssize_t n;
        while ((n = recv(fd, b, sizeof b, 0)) > 0)
            ;
        ok = n == 0;
    }
    close(fd);
    return ok;
}

static bool pg_garbage_right(int pg_port, const void *bytes, size_t len)
{
    int fd = hc_connect(pg_port);
    bool ok = hc_send(fd, bytes, len);
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[1024];
    ssize_t n, total = 0;
    char first = 0;
    while ((n = recv(fd, b, sizeof b, 0)) > 0) {
        if (total == 0)
            first = b[0];
        total += n;
    }
    close(fd);
    return ok && first == 'E' && n == 0;
}

/* Every hostile kind the serve tests know, ROUNDS times each, while four
 * clients ask each server steadily: bytes that are not HTTP (every gate case), IN lists
 * of 30,000 values (answered exactly), asks past their time budget (cut
 * with 503 ask_timeout), and garbage on the PostgreSQL port. Prints the
 * counts (bench/RESULTS.json's reliability entry records them). */
Test(serve_gate, hostile_soak_while_others_are_answered, .timeout = 600)
{
    /* 25 in the test command; STRAUM_HOSTILE_ROUNDS=N for a longer soak. */
    const char *env = getenv("STRAUM_HOSTILE_ROUNDS");
    int rounds = env && atoi(env) > 0 ? atoi(env) : 25;
    make_cases();
    struct serve_options po = {.store_dir = the_store, .pg_listen = "127.0.0.1:0"};
    struct serve_server *pg = fixture_serve(&po);
    struct serve_options bo = {.store_dir = the_store, .ask_timeout_us = 1};
    struct serve_server *budget = fixture_serve(&bo);
    struct steady st;
    steady_start(&st, port);
    struct steady st_pg;
    steady_start(&st_pg, serve_port(pg));

    size_t cap = 70000;
    char *in_list = malloc(cap);
    size_t n = (size_t)snprintf(in_list, cap, "{\"ask\": \"SELECT trips FROM trips WHERE bucket >= "
                                "'2024-01-01 00:00:00+00' AND bucket < '2024-01-08 00:00:00+00' AND "
                                "pu_location_id IS NOT NULL AND payment_type IN (");
    for (int i = 0; i < 30000; i++)
        n += (size_t)snprintf(in_list + n, cap - n, i ? ",%d" : "%d", i == 29999 ? 3 : 2);
    n += (size_t)snprintf(in_list + n, cap - n, ")\"}");
    cr_assert_lt(n, cap);
    int64_t week = 7 * 86400000000LL;
    char in_want[64];
    snprintf(in_want, sizeof in_want, "\"rows\":[[%lld]]",
             (long long)(fixture_count(2, FIXTURE_START_US, FIXTURE_START_US + week) +
                         fixture_count(3, FIXTURE_START_US, FIXTURE_START_US + week)));
    const char *slow = "{\"ask\": \"SELECT bucket, pu_location_id, payment_type, trips FROM trips "
                       "WHERE bucket >= '2024-01-01 00:00:00+00' AND bucket < '2024-01-08 00:00:00+00' "
                       "GROUP BY bucket, pu_location_id, payment_type\"}";

    struct tally t[4] = {{"bytes that are not HTTP", 0, 0}, {"IN lists of 30,000 values", 0, 0},
                         {"asks past their time budget", 0, 0},
                         {"garbage on the PostgreSQL port", 0, 0}};
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < NCASES; i++)
            tally(&t[0], gate_case_right(&cases[i]));
        struct hc_response r;
        hc_once(port, "POST", "/ask", NULL, in_list, &r);
        tally(&t[1], r.status == 200 && r.body && strstr(r.body, in_want));
        hc_free(&r);
        for (int i = 0; i < 4; i++) {
            hc_once(serve_port(budget), "POST", "/ask", NULL, slow, &r);
            tally(&t[2], r.status == 503 && r.body && strstr(r.body, "ask_timeout"));
            hc_free(&r);
        }
        for (size_t i = 0; i < sizeof pg_garbage / sizeof pg_garbage[0]; i++)
            tally(&t[3], pg_garbage_right(serve_pg_port(pg), pg_garbage[i].bytes,
                                          pg_garbage[i].len));
    }
    steady_stop(&st);
    steady_stop(&st_pg);
    int tried = 0, right = 0;
    for (int k = 0; k < 4; k++) {
        cr_expect_eq(t[k].right, t[k].tried, "%s: %d of %d answered as they must be", t[k].kind,
                     t[k].right, t[k].tried);
        tried += t[k].tried;
        right += t[k].right;
    }
    fprintf(stderr, "hostile soak: %d rounds, %d tried, %d answered as they must be (%s %d, "
            "%s %d, %s %d, %s %d); %d other asks answered meanwhile, none wrong\n",
            rounds, tried, right, t[0].kind, t[0].tried, t[1].kind, t[1].tried, t[2].kind, t[2].tried,
            t[3].kind, t[3].tried, atomic_load(&st.answers) + atomic_load(&st_pg.answers));
    free(in_list);
    serve_stop(budget);
    serve_stop(pg);
}
