/* gate.c -- the HTTP port's front gate (serve/gate.h): one thread accepts
 * every HTTP connection, peeks at its first bytes until the request head
 * has arrived, answers what cannot be HTTP/1.x with a status and a closed
 * connection, and hands the rest to libmicrohttpd (MHD_add_connection).
 *
 * Invariants:
 *  1. The gate never consumes a byte of a connection it hands over: it
 *     reads with MSG_PEEK, so libmicrohttpd parses the request from its
 *     first byte exactly as if it had accepted the connection itself.
 *  2. A connection the gate holds counts in straum_open_connections and
 *     against the limit shared with the PostgreSQL port, from its accept
 *     until it is handed over (libmicrohttpd counts it from then on) or
 *     closed.
 *  3. A held connection waiting for its head is closed at its deadline
 *     (the connection timeout from its accept): a client that sends a byte
 *     a second, or nothing, holds an epoll entry and a list node, never a
 *     thread, and for no longer than libmicrohttpd would hold it.
 *  4. A refusal is written whole or not at all (it is under 600 bytes, and
 *     the socket's send buffer is empty: nothing was sent before), then the
 *     write side is shut (the client reads the answer, then EOF at once).
 *     The gate then drains what the client still sends, for up to
 *     GATE_LINGER_MS, before closing: closing with unread bytes would send
 *     a reset, which can destroy the answer in the client's receive queue.
 *
 * Cost: the gate sees only a connection's start; requests on a kept-alive
 * connection never pass it. A new connection costs one peek (usually at
 * accept: the request is already there) and one wake-up of a
 * libmicrohttpd thread through its inter-thread channel. Later requests
 * on a kept-alive connection are libmicrohttpd's to parse: bytes that are
 * not HTTP there get its handling (a close, or the request deadline). */
#include "serve/gate.h"

#include "base/logfmt.h"
#include "serve/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* How long a refused connection is drained before it is closed (invariant
 * 4): long enough for a client that sent its garbage in one go to read the
 * answer; a client still sending past it is cut. */
#define GATE_LINGER_MS 2000
/* Bytes drained from a refused connection before it is closed anyway. */
#define GATE_DRAIN_MAX (1u << 20)
/* Connections accepted per wake-up before the gate looks at held ones. */
#define GATE_ACCEPT_BURST 64

/* ---- The classifier ---------------------------------------------------------------- */

/* RFC 9110 §5.6.2: tchar, the bytes of a method. */
static bool is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
        return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void verdict(struct gate_look *out, enum gate_verdict v, const char *why)
{
    out->verdict = v;
    out->why = why;
}

/* The end of the head after the request line's end at p[i]: an empty line.
 * Returns whether it is within p[0..n). */
static bool head_ends(const unsigned char *p, size_t n, size_t i)
{
    /* i is just past the request line's LF: an empty line there, or a LF
     * followed by an empty line later, ends the head. */
    if (i < n && p[i] == '\n')
        return true;
    if (i + 1 < n && p[i] == '\r' && p[i + 1] == '\n')
        return true;
    for (size_t k = i; k + 1 < n; k++)
        if (p[k] == '\n' && (p[k + 1] == '\n' || (k + 2 < n && p[k + 1] == '\r' && p[k + 2] == '\n')))
            return true;
    return false;
}

void gate_classify(const unsigned char *p, size_t n, bool ended, struct gate_look *out)
{
    out->peer = GATE_PEER_UNKNOWN;
    verdict(out, GATE_MORE, NULL);
    /* Empty lines before the request line are ignored (RFC 9112 §2.2). */
    size_t i = 0;
    while (i < n && (p[i] == '\n' || (p[i] == '\r' && (i + 1 == n || p[i + 1] == '\n'))))
        i++;
    if (i > GATE_LINE_MAX) {
        verdict(out, GATE_BAD_LINE, "more empty lines than a request line holds came first");
        return;
    }
    if (i == n) {
        if (ended)
            verdict(out, i ? GATE_INCOMPLETE : GATE_CLOSED,
                    "the connection closed before a request line arrived");
        return;
    }
    size_t line = i;
    if (!is_tchar(p[i])) {
        /* TLS records of a handshake start with type 22; PostgreSQL
         * messages a client opens with (StartupMessage, SSLRequest,
         * GSSENCRequest, CancelRequest) with a 32-bit length whose first
         * byte is 0 and a 32-bit code. A 0 needs its 8 bytes to be told. */
        if (i == 0 && p[0] == 0x16) {
            out->peer = GATE_PEER_TLS;
        } else if (i == 0 && p[0] == 0) {
            if (n < 8 && !ended)
                return;
            if (n >= 8) {
                uint32_t code = be32(p + 4);
                if (code == 196608u || code == 80877103u || code == 80877104u ||
                    code == 80877102u)
                    out->peer = GATE_PEER_POSTGRES;
            }
        }
        verdict(out, GATE_NOT_HTTP, "these bytes cannot start an HTTP request");
        return;
    }
    /* method SP request-target SP HTTP-version CRLF (RFC 9112 §3). */
    while (i < n && is_tchar(p[i]))
        i++;
    enum { METHOD, TARGET, VERSION } part = METHOD;
    for (;;) {
        if (i - line > GATE_LINE_MAX) {
            verdict(out, GATE_LINE_TOO_LONG, "the request line is over its limit");
            return;
        }
        if (i == n) {
            if (ended)
                verdict(out, GATE_INCOMPLETE, "the connection closed inside the request line");
            return;
        }
        unsigned char c = p[i];
        if (part == METHOD) {
            if (c == '\r' || c == '\n') {
                verdict(out, GATE_BAD_LINE, "the request line has no target after its method");
                return;
            }
            if (c != ' ') {
                verdict(out, GATE_BAD_LINE, "the method holds a byte a method cannot");
                return;
            }
            part = TARGET;
            i++;
            if (i < n && (p[i] == ' ' || p[i] == '\r' || p[i] == '\n')) {
                verdict(out, GATE_BAD_LINE, "the request line has no target after its method");
                return;
            }
            while (i < n && p[i] > ' ' && p[i] != 0x7f)
                i++;
            continue;
        }
        if (part == TARGET) {
            if (c == '\r' || c == '\n') {
                /* A line end right after the target: HTTP/0.9's form,
                 * known once its LF is seen. */
                if (c == '\r' && i + 1 == n) {
                    if (ended)
                        verdict(out, GATE_INCOMPLETE,
                                "the connection closed inside the request line");
                    return;
                }
                if (c == '\r' && p[i + 1] != '\n') {
                    verdict(out, GATE_BAD_LINE, "the request line holds a bare CR");
                    return;
                }
                verdict(out, GATE_VERSION, "the request line has no HTTP version (HTTP/0.9)");
                return;
            }
            if (c != ' ') {
                verdict(out, GATE_BAD_LINE, "the target holds a control byte");
                return;
            }
            part = VERSION;
            i++;
            continue;
        }
        /* The version: HTTP/d.d, then CRLF (or a bare LF, as MHD takes). */
        static const char shape[] = "HTTP/d.d";
        size_t at = i;
        for (size_t k = 0; k < 8; k++) {
            if (at + k == n) {
                if (ended)
                    verdict(out, GATE_INCOMPLETE, "the connection closed inside the request line");
                return;
            }
            unsigned char v = p[at + k];
            if (shape[k] == 'd' ? !(v >= '0' && v <= '9') : v != (unsigned char)shape[k]) {
                verdict(out, GATE_BAD_LINE,
                        "the request line does not end with an HTTP version such as HTTP/1.1");
                return;
            }
        }
        size_t end = at + 8;
        if (end < n && p[end] == '\r')
            end++;
        if (end == n) {
            if (ended)
                verdict(out, GATE_INCOMPLETE, "the connection closed inside the request line");
            return;
        }
        if (p[end] != '\n') {
            verdict(out, GATE_BAD_LINE, "the request line goes on after its HTTP version");
            return;
        }
        if (at + 8 - line > GATE_LINE_MAX) {
            verdict(out, GATE_LINE_TOO_LONG, "the request line is over its limit");
            return;
        }
        if (p[at + 5] != '1') {
            verdict(out, GATE_VERSION, "the request is not HTTP/1.x");
            return;
        }
        /* The request line is good; the head's end decides the rest. */
        if (head_ends(p, n, end + 1) || n >= GATE_PEEK_MAX)
            verdict(out, GATE_PASS, NULL);
        else if (ended)
            verdict(out, GATE_INCOMPLETE, "the connection closed before the headers ended");
        return;
    }
}

int gate_refusal(const struct gate_look *look, const char *pg_addr, const char **code, char *buf,
                 size_t len)
{
    switch (look->verdict) {
    case GATE_NOT_HTTP:
        *code = "not_http";
        if (look->peer == GATE_PEER_TLS)
            snprintf(buf, len, "this port speaks plain HTTP/1.1 and a TLS handshake arrived: "
                     "use http://, or put a TLS proxy in front of straum-serve");
        else if (look->peer == GATE_PEER_POSTGRES)
            snprintf(buf, len, "this is straum-serve's HTTP port and a PostgreSQL client "
                     "connected: %s%s", pg_addr ? "the PostgreSQL protocol is served on " : "",
                     pg_addr ? pg_addr : "start straum-serve with --pg-listen to serve it");
        else
            snprintf(buf, len, "%s: this port speaks HTTP/1.1 (POST /ask, GET /views, /healthz, "
                     "/readyz, /metrics)", look->why);
        return 400;
    case GATE_BAD_LINE:
        *code = "bad_request_line";
        snprintf(buf, len, "%s; a request starts with a line such as POST /ask HTTP/1.1",
                 look->why);
        return 400;
    case GATE_INCOMPLETE:
        *code = "incomplete_request";
        snprintf(buf, len, "%s", look->why);
        return 400;
    case GATE_LINE_TOO_LONG:
        *code = "request_line_too_long";
        snprintf(buf, len, "the request line is over %d bytes, the most straum-serve reads",
                 GATE_LINE_MAX);
        return 414;
    case GATE_VERSION:
        *code = "http_version_not_supported";
        snprintf(buf, len, "%s: straum-serve speaks HTTP/1.1 (and 1.0)", look->why);
        return 505;
    case GATE_MORE:
    case GATE_PASS:
    case GATE_CLOSED:
        break;
    }
    return 0;
}

/* ---- The gate thread ------------------------------------------------------------------- */

enum held_state { HELD_WAITING, HELD_LINGERING };

/* A connection the gate holds. Two lists, each in deadline order because
 * each list's deadlines are its entry time plus one constant. */
struct held {
    int fd;
    bool in_epoll;
    enum held_state state;
    int64_t deadline_ms;
    size_t drained;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    struct held *prev, *next;
};

struct held_list {
    struct held *head, *tail;
};

struct gate {
    struct gate_options o;
    int epoll_fd;
    int stop_pipe[2];
    pthread_t thread;
    bool running;
    struct held_list waiting, lingering;
    unsigned char peek[GATE_PEEK_MAX];
};

/* The stop pipe's epoll tag (connections are tagged by their node, the
 * listening socket by NULL). */
static char stop_tag;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void list_push(struct held_list *l, struct held *h)
{
    h->next = NULL;
    h->prev = l->tail;
    if (l->tail)
        l->tail->next = h;
    else
        l->head = h;
    l->tail = h;
}

static void list_remove(struct held_list *l, struct held *h)
{
    if (h->prev)
        h->prev->next = h->next;
    else
        l->head = h->next;
    if (h->next)
        h->next->prev = h->prev;
    else
        l->tail = h->prev;
    h->prev = h->next = NULL;
}

static struct held_list *list_of(struct gate *g, struct held *h)
{
    return h->state == HELD_WAITING ? &g->waiting : &g->lingering;
}

/* Forgets a held connection: out of its list and the open count; the
 * descriptor closed unless handed over. (close removes it from epoll.) */
static void release(struct gate *g, struct held *h, bool close_fd)
{
    list_remove(list_of(g, h), h);
    if (close_fd)
        close(h->fd);
    metrics_connection(g->o.metrics, -1);
    free(h);
}

/* Reads and drops what the client sent; true when it has closed its side
 * (or the connection failed, or sent too much): done lingering. */
static bool drain(struct gate *g, struct held *h)
{
    for (;;) {
        ssize_t n = recv(h->fd, g->peek, sizeof g->peek, MSG_DONTWAIT);
        if (n == 0)
            return true;
        if (n < 0)
            return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
        h->drained += (size_t)n;
        if (h->drained > GATE_DRAIN_MAX)
            return true;
    }
}

/* Writes a whole JSON error response and shuts the write side
 * (invariant 4); counts and logs it. */
static void answer(struct gate *g, int fd, int status, const char *code, const char *msg)
{
    const char *reason = status == 414   ? "URI Too Long"
                         : status == 505 ? "HTTP Version Not Supported"
                         : status == 503 ? "Service Unavailable"
                                         : "Bad Request";
    char body[600], out[900];
    int blen = snprintf(body, sizeof body, "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\n",
                        code, msg);
    int len = snprintf(out, sizeof out, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                       "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
                       status, reason, blen, body);
    (void)!send(fd, out, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(fd, SHUT_WR);
    metrics_http(g->o.metrics, g->o.other_route, status);
    struct logfmt_line l;
    if (!g->o.quiet && logfmt_begin(&l, LOGFMT_DEBUG, "refused at the gate")) {
        logfmt_int(&l, "status", status);
        logfmt_str(&l, "code", code);
        logfmt_end(&l);
    }
}

/* Refuses a waiting connection by its verdict, then lingers or closes. */
static void refuse(struct gate *g, struct held *h, const struct gate_look *look)
{
    const char *code = "bad_request";
    char msg[400];
    int status = gate_refusal(look, g->o.pg_addr, &code, msg, sizeof msg);
    answer(g, h->fd, status, code, msg);
    if (drain(g, h)) {
        release(g, h, true);
        return;
    }
    list_remove(&g->waiting, h);
    h->state = HELD_LINGERING;
    h->deadline_ms = now_ms() + GATE_LINGER_MS;
    list_push(&g->lingering, h);
    if (!h->in_epoll) { /* refused on its first look, at accept */
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = h};
        if (epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, h->fd, &ev) != 0)
            release(g, h, true);
        else
            h->in_epoll = true;
    }
}

/* Hands a connection to libmicrohttpd (invariants 1 and 2). */
static void hand_over(struct gate *g, struct held *h)
{
    if (h->in_epoll)
        epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, h->fd, NULL);
    int fd = h->fd;
    struct sockaddr_storage addr = h->addr;
    socklen_t addrlen = h->addrlen;
    release(g, h, false);
    /* On failure (libmicrohttpd at its limit, out of memory) it has closed
     * the socket itself. */
    if (MHD_add_connection(g->o.daemon, fd, (const struct sockaddr *)&addr, addrlen) != MHD_YES &&
        !g->o.quiet)
        logfmt_msg(LOGFMT_WARN, "libmicrohttpd refused a connection: %s", strerror(errno));
}

/* Looks at a waiting connection's bytes so far and acts on its verdict.
 * Returns whether it still waits (h is freed otherwise, or lingers). */
static bool look_at(struct gate *g, struct held *h, bool ended)
{
    ssize_t n = recv(h->fd, g->peek, sizeof g->peek, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return true;
        release(g, h, true); /* reset or failed: nothing to answer */
        return false;
    }
    if (n == 0)
        ended = true;
    struct gate_look look;
    gate_classify(g->peek, (size_t)n, ended, &look);
    switch (look.verdict) {
    case GATE_MORE:
        return true;
    case GATE_PASS:
        hand_over(g, h);
        return false;
    case GATE_CLOSED:
        release(g, h, true);
        return false;
    default:
        refuse(g, h, &look);
        return false;
    }
}

/* Over the connection limit (shared with the PostgreSQL port): 503 and
 * closed, never held. */
static void refuse_full(struct gate *g, int fd)
{
    char msg[200];
    snprintf(msg, sizeof msg, "straum-serve holds %d HTTP and PostgreSQL connections, its limit: "
             "try again when some have closed", g->o.connection_limit);
    answer(g, fd, 503, "too_many_connections", msg);
    char drop[4096];
    while (recv(fd, drop, sizeof drop, MSG_DONTWAIT) > 0)
        ;
    close(fd);
}

static void accept_some(struct gate *g)
{
    for (int i = 0; i < GATE_ACCEPT_BURST; i++) {
        struct held *h = calloc(1, sizeof *h);
        if (!h)
            return;
        h->addrlen = sizeof h->addr;
        int fd = accept4(g->o.listen_fd, (struct sockaddr *)&h->addr, &h->addrlen,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            free(h);
            if (errno == EMFILE || errno == ENFILE) {
                struct timespec ts = {0, 10 * 1000000};
                nanosleep(&ts, NULL); /* descriptors are short: let some close */
            }
            return;
        }
        if (metrics_connections_open(g->o.metrics) >= g->o.connection_limit) {
            free(h);
            refuse_full(g, fd);
            continue;
        }
        h->fd = fd;
        h->state = HELD_WAITING;
        h->deadline_ms = now_ms() + (int64_t)g->o.timeout_s * 1000;
        list_push(&g->waiting, h);
        metrics_connection(g->o.metrics, 1);
        /* Usually the request is already here: decided now, without
         * epoll. */
        if (!look_at(g, h, false))
            continue;
        /* Edge-triggered: the gate only peeks, so the bytes stay and a
         * level-triggered entry would fire without end. Adding reports
         * bytes that came since the look, so no arrival is missed. */
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = h};
        if (epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            release(g, h, true);
            continue;
        }
        h->in_epoll = true;
    }
}

/* Closes held connections past their deadlines; returns the ms until the
 * next one (-1: none). */
static int expire(struct gate *g)
{
    int64_t now = now_ms();
    while (g->waiting.head && g->waiting.head->deadline_ms <= now)
        release(g, g->waiting.head, true);
    while (g->lingering.head && g->lingering.head->deadline_ms <= now)
        release(g, g->lingering.head, true);
    int64_t next = -1;
    if (g->waiting.head)
        next = g->waiting.head->deadline_ms;
    if (g->lingering.head && (next < 0 || g->lingering.head->deadline_ms < next))
        next = g->lingering.head->deadline_ms;
    return next < 0 ? -1 : (int)(next - now);
}

static void *gate_main(void *arg)
{
    struct gate *g = arg;
    pthread_setname_np(pthread_self(), "straum-gate");
    struct epoll_event evs[64];
    for (;;) {
        int timeout = expire(g);
        int n = epoll_wait(g->epoll_fd, evs, 64, timeout);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            void *tag = evs[i].data.ptr;
            if (tag == &stop_tag)
                return NULL;
            if (!tag) {
                accept_some(g);
                continue;
            }
            struct held *h = tag;
            bool ended = (evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
            if (h->state == HELD_LINGERING) {
                if (drain(g, h))
                    release(g, h, true);
            } else {
                look_at(g, h, ended);
            }
        }
    }
    return NULL;
}

struct gate *gate_start(const struct gate_options *o, char *err, size_t errlen)
{
    struct gate *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    g->o = *o;
    g->stop_pipe[0] = g->stop_pipe[1] = -1;
    g->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (g->epoll_fd < 0 || pipe2(g->stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, errlen, "cannot start the HTTP gate: %s", strerror(errno));
        gate_stop(g);
        return NULL;
    }
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    struct epoll_event sev = {.events = EPOLLIN, .data.ptr = &stop_tag};
    if (epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, o->listen_fd, &lev) != 0 ||
        epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, g->stop_pipe[0], &sev) != 0) {
        snprintf(err, errlen, "cannot start the HTTP gate: epoll: %s", strerror(errno));
        gate_stop(g);
        return NULL;
    }
    int rc = pthread_create(&g->thread, NULL, gate_main, g);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the HTTP gate's thread: %s", strerror(rc));
        gate_stop(g);
        return NULL;
    }
    g->running = true;
    return g;
}

void gate_stop(struct gate *g)
{
    if (!g)
        return;
    if (g->running) {
        (void)!write(g->stop_pipe[1], "x", 1);
        pthread_join(g->thread, NULL);
    }
    while (g->waiting.head)
        release(g, g->waiting.head, true);
    while (g->lingering.head)
        release(g, g->lingering.head, true);
    for (int i = 0; i < 2; i++)
        if (g->stop_pipe[i] >= 0)
            close(g->stop_pipe[i]);
    if (g->epoll_fd >= 0)
        close(g->epoll_fd);
    free(g);
}
