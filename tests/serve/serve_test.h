/* serve_test.h -- what the straum-serve tests share: a small taxi store made
 * through the store API, and a plain-socket HTTP/1.1 client (keep-alive,
 * Content-Length, chunked bodies), so the tests see exactly the bytes the
 * server sends without a client library's own handling in between. */
#ifndef STRAUM_TESTS_SERVE_TEST_H
#define STRAUM_TESTS_SERVE_TEST_H

#include "store/store.h"
#include "tests/kit/taxi_store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- The store -------------------------------------------------------------- */

/* The fixture's trips: FIXTURE_TRIPS rows from 2024-01-01 00:00 UTC over
 * FIXTURE_DAYS days, payment types 0..5, zones 1..12 (1..10 in the zone
 * table: Manhattan, Queens, Brooklyn): tests/kit/taxi_store.h's. */
#define FIXTURE_TRIPS 3000
#define FIXTURE_DAYS 7
#define FIXTURE_START_US 1704067200000000LL

struct trip fixture_trip(int i);

/* Makes a store with bench/taxi_views.sql in a fresh temp dir (into dir),
 * applies FIXTURE_TRIPS trips and the zone table, and commits with this
 * position. Returns 0 or fails the test. */
void fixture_make_store(char dir[64], const struct store_position *pos);
/* Applies one trip to every view of an open store: sign +1 adds it, -1
 * takes it away (a trip never added makes counts that go negative when
 * merged, as a corrupt change stream would). Fails the test on error. */
void fixture_apply_trip(struct store *s, const struct trip *t, int sign);
void fixture_remove_store(const char *dir);

/* Trips of a payment type (-1: all) in [from, to). */
int64_t fixture_count(int payment, int64_t from_us, int64_t to_us);

/* ---- The server in-process --------------------------------------------------- */

struct serve_server;
struct serve_options;

/* Starts a quiet server on 127.0.0.1 and a free port; fails the test when
 * it cannot start. */
struct serve_server *fixture_serve(struct serve_options *o);

/* ---- The server as a process ------------------------------------------------- */

/* straum-serve (STRAUM_SERVE_BIN, where the test defines it) on the store
 * and 127.0.0.1:port with two threads, killed if the test dies; returns
 * once /healthz answers 200, or fails the test after 10 s. */
pid_t fixture_spawn_serve(const char *store, int port);

/* ---- The HTTP client -------------------------------------------------------- */

struct hc_response {
    int status;          /* 0: no response (connection closed or timed out) */
    char *headers;       /* raw header block, NUL-terminated */
    char *body;          /* NUL-terminated */
    size_t body_len;
    bool closed;         /* the server closed the connection after it */
};

/* A loopback port free now (the kernel's pick), for a server started next. */
int hc_free_port(void);
/* Whether something accepts connections on the loopback port now. */
bool hc_listening(int port);
int hc_connect(int port);
/* Sends all of data; false when the server closed or reset the connection. */
bool hc_send(int fd, const void *data, size_t len);
/* Reads one response within timeout_ms. */
void hc_read(int fd, struct hc_response *r, int timeout_ms);
/* One request on an open connection: method, path, extra header lines
 * ("Name: value\r\n"...; may be NULL), body (may be NULL); its answer
 * within 10 s (status 0 past that). */
void hc_request(int fd, const char *method, const char *path, const char *extra,
                const char *body, size_t body_len, struct hc_response *r);
/* The same, the answer within timeout_ms. */
void hc_request_within(int fd, const char *method, const char *path, const char *extra,
                       const char *body, size_t body_len, int timeout_ms,
                       struct hc_response *r);
/* The same on a fresh connection, closed afterwards. */
void hc_once(int port, const char *method, const char *path, const char *extra,
             const char *body, struct hc_response *r);
void hc_free(struct hc_response *r);
/* The value of a response header (case-insensitive), copied into buf, or NULL. */
const char *hc_header(const struct hc_response *r, const char *name, char *buf, size_t len);

/* ---- Steady clients --------------------------------------------------------- */

/* Four threads asking STEADY_ASK over kept-alive connections to one port
 * until stopped: the "others" a hostile test wants still answered. */
struct steady {
    int port;
    atomic_bool stop;
    atomic_int answers, wrong;
    pthread_t threads[4];
};

/* Payment types over the fixture's first week (its first row payment 0). */
extern const char STEADY_ASK[];

void steady_start(struct steady *st, int port);
/* Stops them; fails the test unless every answer was right (and some came). */
void steady_stop(struct steady *st);

#endif
