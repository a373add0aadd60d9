/* serve.h -- the front door of straum-serve: options, run until asked to
 * stop, and a start/stop pair for tests and embedding.
 *
 * The HTTP layer (serve/http.c, routes.c, response.c: serve/http.h) owns
 * sockets, limits, the route table, status lines, the bearer token and
 * metrics; the engine (engine/engine.h) owns meaning. */
#ifndef STRAUM_SERVE_SERVE_H
#define STRAUM_SERVE_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SERVE_DEFAULT_LISTEN "127.0.0.1:8080"
#define SERVE_DEFAULT_MAX_LAG_US 10000000   /* 10 s */
#define SERVE_DEFAULT_MAX_BODY (1u << 20)   /* 1 MiB */
/* An ask's time budget unless --ask-timeout says otherwise: the longest a
 * hostile or careless ask holds a worker thread. 10 s: past what a
 * dashboard waits for, and under the 30 s read timeout of the nginx
 * configuration (SPEC.md 8.3), so a slow ask ends in serve's 503. */
#define SERVE_DEFAULT_ASK_TIMEOUT_US 10000000LL
#define SERVE_DEFAULT_PG_IDLE_S 600         /* 10 minutes: pools hold idle connections */

struct serve_options {
    const char *store_dir;      /* required */
    const char *listen;         /* "host:port", "[v6]:port", ":port"; NULL: the default */
    int threads;                /* MHD worker threads; <= 0: the number of CPUs */
    int64_t max_lag_us;         /* /readyz fails beyond it; 0: lag never fails it */
    const char *token_file;     /* NULL: no token; else /ask, /views and /metrics need
                                   it; a file group or others may read is refused */
    bool public_metrics;        /* /metrics answers without the token */
    bool reuse_port;            /* SO_REUSEPORT: several processes share the port */
    bool public_bind;           /* allow a non-loopback address without a token */
    size_t max_body;            /* /ask body limit; 0: the default */
    int max_groups;             /* engine: groups held at once; <= 0: the engine's default */
    size_t ask_memory;          /* engine: scratch bytes per ask; 0: ENGINE_DEFAULT_ASK_MEMORY */
    int64_t ask_timeout_us;     /* engine: time budget per ask; 0: the default
                                   (SERVE_DEFAULT_ASK_TIMEOUT_US); < 0: none */
    int ask_cache;              /* compiled asks kept; 0: ENGINE_DEFAULT_CACHED_ASKS */
    size_t ask_cache_bytes;     /* their bytes; 0: ENGINE_DEFAULT_CACHED_BYTES */
    unsigned connection_timeout_s; /* idle/slow connections dropped; 0: 30 s */
    bool quiet;                 /* no log lines (tests) */
    const char *pg_listen;      /* NULL: no PostgreSQL protocol; else "host:port".
                                   With pg_listen and no listen, no HTTP. */
    unsigned pg_idle_timeout_s; /* PostgreSQL connections idle between
                                   messages are closed; 0: never */
};

/* Checks options that need no store or socket (the listen address, the
 * token rule). 0, or -1 with a message for the user in err. */
int serve_check_options(const struct serve_options *o, char *err, size_t errlen);

/* Opens the store, binds, serves until serve_request_stop() (or SIGTERM/
 * SIGINT handled by the caller calling it), then finishes in-flight
 * requests and returns 0. 1 when it cannot start (a message on stderr),
 * 2 when the options are refused. */
int serve_run(const struct serve_options *o);

/* Async-signal-safe: makes serve_run return. */
void serve_request_stop(void);

/* For tests and embedding: a running server. serve_start returns NULL with
 * a message in err; serve_port is the bound port (useful with port 0);
 * serve_stop stops accepting, waits (bounded) for requests in flight, then
 * closes every connection and the store. */
struct serve_server;
struct serve_server *serve_start(const struct serve_options *o, char *err, size_t errlen);
int serve_port(const struct serve_server *s);
/* The PostgreSQL port (--pg-listen), 0 when not serving it. */
int serve_pg_port(const struct serve_server *s);
void serve_stop(struct serve_server *s);

#endif
