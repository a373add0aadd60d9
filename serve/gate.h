/* gate.h -- the HTTP port's front gate: accepts connections, reads (by
 * peeking, so nothing is consumed) the start of each one until its request
 * head has arrived, refuses at once what cannot be an HTTP/1.x request,
 * and hands the rest to libmicrohttpd. Private to serve/.
 *
 * Why a gate: libmicrohttpd 0.9.75 skips a line that starts with a NUL as
 * an empty one, waits for a line end that binary input never sends, and
 * closes a request line without a space with no answer; so a TLS
 * handshake, a PostgreSQL startup packet or garbage on the port got
 * silence until the connection timeout. It has no option for this
 * (MHD_OPTION_STRICT_FOR_CLIENT only tightens spaces and header lines). */
#ifndef STRAUM_SERVE_GATE_H
#define STRAUM_SERVE_GATE_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

struct metrics;

/* The longest request line taken (method, target and version, without its
 * line end): 8 KiB, as Apache's LimitRequestLine and nginx's header
 * buffers; every straum-serve target is a short path. Longer: 414. */
#define GATE_LINE_MAX 8192
/* Bytes of a connection's start the gate looks at: the request head must
 * end within them to be checked whole; a longer head (large headers) is
 * handed over as it is, and libmicrohttpd's per-connection memory (16 KiB)
 * bounds it with a 431. */
#define GATE_PEEK_MAX 16384

/* ---- The classifier (pure; fuzzed by tests/fuzz/fuzz_gate.c) ---------------- */

enum gate_verdict {
    GATE_MORE,          /* a valid start: wait for more bytes */
    GATE_PASS,          /* a whole HTTP/1.x request line and head: hand over */
    GATE_CLOSED,        /* closed before sending a byte: close, say nothing */
    GATE_NOT_HTTP,      /* 400 not_http: the first byte cannot start a request */
    GATE_BAD_LINE,      /* 400 bad_request_line */
    GATE_INCOMPLETE,    /* 400 incomplete_request: closed mid-head */
    GATE_LINE_TOO_LONG, /* 414 request_line_too_long */
    GATE_VERSION,       /* 505 http_version_not_supported: not HTTP/1.x */
};

/* What spoke, when the gate can tell (for the message of a 400). */
enum gate_peer { GATE_PEER_UNKNOWN, GATE_PEER_TLS, GATE_PEER_POSTGRES };

struct gate_look {
    enum gate_verdict verdict;
    enum gate_peer peer;   /* for GATE_NOT_HTTP */
    const char *why;       /* for a refusal: what is wrong, a static phrase */
};

/* Classifies p[0..n), the first bytes of a connection (n <= GATE_PEEK_MAX;
 * n == GATE_PEEK_MAX means more may exist than were seen). ended: the
 * client has closed its side, so no more bytes will come. Never fails.
 * Invariant: a verdict other than GATE_MORE for a prefix stays the verdict
 * for every longer input with that prefix, unless it is GATE_PASS and the
 * longer input is still a request (the gate decides on the first bytes
 * that decide). */
void gate_classify(const unsigned char *p, size_t n, bool ended, struct gate_look *out);

/* The HTTP status, error code and message of a refusal verdict; message
 * into buf (truncated to len, no quotes or backslashes: JSON-safe).
 * pg_addr: the --pg-listen address, or NULL. Returns the status, 0 for a
 * verdict that is not a refusal. */
int gate_refusal(const struct gate_look *look, const char *pg_addr, const char **code, char *buf,
                 size_t len);

/* ---- The gate thread ----------------------------------------------------------- */

struct gate_options {
    int listen_fd;              /* nonblocking, listening; not owned */
    struct MHD_Daemon *daemon;  /* started with MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC */
    struct metrics *metrics;    /* open connections and responses are counted here */
    int other_route;            /* metrics_http's route for responses no route made */
    int connection_limit;       /* HTTP and PostgreSQL connections together */
    unsigned timeout_s;         /* a request head arrives whole within this of the accept */
    const char *pg_addr;        /* named in the message to a PostgreSQL client; may be NULL */
    bool quiet;
};

struct gate;

/* Starts the gate's thread (named "straum-gate"). NULL with a message in
 * err when it cannot (out of memory, epoll, threads). */
struct gate *gate_start(const struct gate_options *o, char *err, size_t errlen);

/* Stops accepting and closes every connection the gate still holds (those
 * handed over are libmicrohttpd's). NULL is a no-op. */
void gate_stop(struct gate *g);

#endif
