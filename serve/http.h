/* http.h -- what serve/'s HTTP files share: the server, its route table
 * and its responses. Private to serve/.
 *
 *   gate.c      the front gate: accepts connections and refuses at once
 *               what is not HTTP/1.x, before libmicrohttpd sees them.
 *   http.c      connections and their limits: libmicrohttpd's callbacks,
 *               request bodies, deadlines, the listen address, the token;
 *               start and stop. It finds a request's row in the route table
 *               and refuses what the row does not take (404, 405 with Allow,
 *               401), before any body is read.
 *   routes.c    the route table and its handlers: what each path answers.
 *   response.c  responses: bodies, error JSON, statuses and their headers,
 *               each one counted and logged.
 *
 * An endpoint is one row of the table (struct serve_route): its path, its
 * methods, whether it needs the bearer token, whether it reads a body, its
 * handler and its metric label. The 404 message, the 405's Allow header and
 * the label set of straum_http_requests_total all come from the table. */
#ifndef STRAUM_SERVE_HTTP_H
#define STRAUM_SERVE_HTTP_H

#include "serve/serve.h"

#include "engine/engine.h"
#include "serve/metrics.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* ---- The route table ------------------------------------------------------ */

/* Methods of a row: ROUTE_GET takes GET and HEAD (MHD sends a HEAD's
 * headers only). */
enum { ROUTE_GET = 1u << 0, ROUTE_POST = 1u << 1 };

struct serve_server;

/* A row's handler, for a complete request the row takes (path, method and
 * token checked): body and len are the request body of a row that reads
 * one ("" and 0 when none came), else "" and 0. It queues one response
 * (response.c, with `route` for its counts) and returns MHD's result. */
typedef enum MHD_Result (*serve_handler)(struct serve_server *s, struct MHD_Connection *c,
                                         int route, const char *body, size_t len);

struct serve_route {
    const char *path;          /* matched exactly */
    unsigned methods;          /* ROUTE_GET, ROUTE_POST or both */
    bool token;                /* needs the bearer token when --token-file is set */
    bool body;                 /* reads a request body, up to --max-body; a row
                                  without one answers on the headers, the body unread */
    bool asks;                 /* answers asks: counted in straum_ask_* by view
                                  (its 413s too), and its handler logs each one */
    serve_handler handler;
    const char *label;         /* straum_http_requests_total{path} */
};

/* straum-serve's routes (routes.c), in the order of /metrics's lines. */
extern const struct serve_route serve_routes[];
extern const int serve_nroutes;

/* serve_start on another route table (tests and embedding): routes (not
 * copied: it outlives the server) instead of serve_routes. */
struct serve_server *serve_start_routes(const struct serve_options *o,
                                        const struct serve_route *routes, int nroutes,
                                        char *err, size_t errlen);

/* The row of a path in the server's table, or nroutes when none. */
int route_find(const struct serve_server *s, const char *url);
/* Whether a row takes the method (HEAD as GET). */
bool route_takes(const struct serve_route *r, const char *method);
/* The Allow header of a row's methods: "GET, HEAD", "POST" or "GET, HEAD, POST". */
const char *route_allow(unsigned methods);
/* The 404 message, naming every row of the table with its methods, into
 * buf (truncated to len). */
void routes_not_found(const struct serve_route *routes, int nroutes, char *buf, size_t len);

/* ---- The server ------------------------------------------------------------ */

struct conn_clock;

struct serve_server {
    struct MHD_Daemon *daemon;
    int listen_fd;              /* ours; the gate accepts on it */
    int port;
    char addr[80];              /* "127.0.0.1:8080" as bound, for the log */
    struct engine *engine;
    struct metrics *metrics;
    const struct serve_route *routes;
    int nroutes;
    char not_found[400];        /* the 404 message (routes_not_found) */
    char *token;                /* NULL: no token needed */
    size_t token_len;
    size_t max_body;
    int64_t max_lag_us;
    bool quiet;
    bool public_metrics;        /* /metrics without the token */
    atomic_int inflight;        /* requests between their first call and completion */
    struct MHD_Response *healthz;
    struct pg_server *pg;       /* --pg-listen: the PostgreSQL front door */
    struct gate *gate;          /* accepts HTTP connections (serve/gate.h) */

    /* Request deadlines (http.c's top): every open connection, its socket
     * and since when it has been receiving a request. */
    unsigned timeout_s;
    pthread_mutex_t clocks_lock;
    struct conn_clock *clocks;
    pthread_t sweeper;
    bool sweeping;
    int sweep_pipe[2];          /* a byte: stop sweeping */
};

static inline int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- Responses (response.c) ------------------------------------------------
 * Each queues one response to route (nroutes: "other") and counts it
 * (metrics_http); the result is MHD's (MHD_NO when none could be made). */

/* A body of b's bytes (taken: freed by MHD, or here); a buffer that ran out
 * of memory answers 500 instead. allow: an Allow header, or NULL. */
enum MHD_Result send_buf(struct serve_server *s, struct MHD_Connection *c, int route, int status,
                         struct buf *b, const char *content_type, const char *allow);
/* {"error":{"code","message"}} with this status. */
enum MHD_Result send_error(struct serve_server *s, struct MHD_Connection *c, int route,
                           int status, const char *code, const char *message,
                           const char *allow);
/* An engine or request error; a status the HTTP layer does not expect from
 * them becomes 500 (logged), so a bug cannot pass for success. */
enum MHD_Result send_ask_error(struct serve_server *s, struct MHD_Connection *c, int route,
                               struct ask_error *err);
struct request_body;

/* Bytes of a streamed answer made at a time (engine_answer_json): an
 * answer that ends within the first part goes out whole with its length;
 * a longer one is sent chunked, a part at a time as the client reads, so
 * the server holds one part of its text, never the whole. 256 KiB: a
 * part's cost beside its rows' is nothing, and a dashboard's answers fit
 * one. */
#define STREAM_PART_BYTES ((size_t)256 << 10)
/* A 200 whose body is the answer's JSON: first (taken) holds its first
 * part, the rest is made as MHD sends (chunked). answer and rb are taken,
 * closed and freed when the response ends, whether it is sent whole or
 * the client goes. An error after the first part cuts the connection
 * (logged): a client never reads a cut answer as a whole one. */
enum MHD_Result send_answer_stream(struct serve_server *s, struct MHD_Connection *c, int route,
                                   struct engine_answer *answer, struct request_body *rb,
                                   struct buf *first);
/* A response queued by MHD_queue_response directly: counted, and logged
 * at debug level unless the row logs its own (asks). */
void sent(struct serve_server *s, int route, int status);

#endif
