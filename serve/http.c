/* http.c -- straum-serve's HTTP server: connections on libmicrohttpd and
 * their limits, request bodies, the bearer token, the route table's
 * refusals, graceful stop. What each route answers is routes.c's; how a
 * response is made, response.c's (serve/http.h).
 *
 * Threads: MHD's internal polling threads (a pool of --threads, each with its
 * own epoll set) accept, read, call on_request and write. An ask runs on the
 * thread that read it; the engine is thread-safe and takes its own read
 * snapshot, so asks never wait on each other or on ingest. MHD bounds what
 * one client can hold: header bytes (the per-connection memory pool: a
 * header flood gets MHD's 431/413, not more memory), idle time (the
 * connection timeout drops slow and half-open clients) and connections.
 * MHD's timeout counts idle time only, so a client sending a byte a second
 * would never reach it: a sweeper thread also cuts a connection whose
 * request has not arrived whole within the same timeout of its first byte
 * (of the connection, or of the previous answer). Neither holds a worker:
 * a connection waiting for bytes costs an epoll entry, not a thread.
 *
 * A request's row in the route table is found by its path on its first
 * call, before any body is read: a path not in the table gets 404
 * not_found (naming the table's routes), a row's path with a method the
 * row does not take 405 with the row's methods in Allow, a row that needs
 * the token (when --token-file is set) 401 with WWW-Authenticate. A row
 * that reads a body gets it whole, up to --max-body (413 past it: on the
 * headers when Content-Length says so; a chunked body is dropped past the
 * limit and answered at its end); another row answers on the headers and
 * its body goes unread. Header floods get MHD's own 431. */
#include "base/listen.h"
#include "base/logfmt.h"
#include "base/scratch.h"
#include "serve/http.h"

#include "serve/gate.h"
#include "serve/listen.h"
#include "serve/pg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CONNECTION_TIMEOUT_S 30
#define CONNECTION_LIMIT 10000
/* Per-connection pool: request line and headers, the read buffer and the
 * response headers. It bounds a header flood per connection (MHD answers
 * 431) while headers of about 14 KiB still pass (cookies count twice, as
 * MHD keeps their split too: a Cookie header to about 6 KiB). Not MHD's
 * default 32 KiB:
 * MHD zeroes the pool between keep-alive requests, which at 32 KiB was 15%
 * of a /healthz's CPU. The /ask body is copied out as it arrives, so
 * --max-body, not this, bounds it. */
#define CONNECTION_MEMORY 16384
/* Bytes of an over-limit chunked /ask body read and dropped, past the
 * limit, before the connection is cut instead of answered 413. */
#define DISCARD_MAX (64u << 20)
/* What serve_stop waits for requests in flight before closing them. */
#define STOP_GRACE_MS 10000

struct conn_clock {
    int fd;
    int64_t since_ns;           /* started receiving a request */
    bool answering;             /* the request arrived whole */
    bool cut;
    bool ended;                 /* the last sweep saw the client's side closed, every
                                   byte read, and no request whole */
    struct conn_clock *prev, *next;
};

/* ---- Logging ----------------------------------------------------------------- */

/* Log lines are logfmt on stderr, written by base's writer
 * (base/logfmt.h), the one straum-ingest uses too. */
static void serve_log(enum logfmt_level level, const char *msg)
{
    logfmt_msg(level, "%s", msg);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    const struct serve_server *s = cls;
    if (s->quiet)
        return;
    logfmt_vfrom(LOGFMT_WARN, "libmicrohttpd", fmt, ap);
}

/* ---- The listen address -------------------------------------------------------- */

static bool is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    }
    if (ss->ss_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a))
            return true;
        return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
    }
    return false;
}

static void addr_text(const struct sockaddr_storage *ss, int port, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    if (ss->ss_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host, sizeof host);
    else if (ss->ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, host, sizeof host);
    snprintf(buf, len, ss->ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", host, port);
}

int serve_check_listen(const char *option, const char *where, bool token, bool public_bind,
                       char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    if (listen_parse(option, where, &ss, &sslen, err, errlen) != 0)
        return -1;
    if (!is_loopback(&ss) && !token && !public_bind) {
        snprintf(err, errlen,
                 "refusing to listen on %s (%s) without --token-file: anyone who can reach that "
                 "address could ask. Give --token-file FILE (clients then send "
                 "\"Authorization: Bearer <token>\", or the token as the PostgreSQL password), "
                 "or --public to serve it without a token",
                 where, option);
        return -1;
    }
    return 0;
}

/* HTTP is served unless only --pg-listen was given. */
static bool serves_http(const struct serve_options *o) { return o->listen || !o->pg_listen; }

int serve_check_options(const struct serve_options *o, char *err, size_t errlen)
{
    if (!o->store_dir || !*o->store_dir) {
        snprintf(err, errlen, "--store DIR is required");
        return -1;
    }
    bool token = o->token_file != NULL;
    if (serves_http(o) &&
        serve_check_listen("--listen", o->listen ? o->listen : SERVE_DEFAULT_LISTEN, token,
                           o->public_bind, err, errlen))
        return -1;
    if (o->pg_listen && serve_check_listen("--pg-listen", o->pg_listen, token, o->public_bind,
                                           err, errlen))
        return -1;
    return 0;
}

/* Our own listening socket, so SO_REUSEPORT is set before bind (several
 * straum-serve processes then share one port and the kernel spreads
 * connections over them) and a bind failure is reported in our words. */
int serve_listen_socket(const char *option, const char *where, bool reuse_port, int *fdp,
                        int *port, char *addr, size_t addrlen, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    if (listen_parse(option, where, &ss, &sslen, err, errlen) != 0)
        return -1;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    /* SO_REUSEADDR: a restart binds at once despite connections in TIME_WAIT. */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
        snprintf(err, errlen, "SO_REUSEPORT: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (bind(fd, (struct sockaddr *)&ss, sslen) != 0 || listen(fd, 1024) != 0) {
        snprintf(err, errlen, "cannot listen on %s (%s): %s%s", where, option, strerror(errno),
                 errno == EADDRINUSE && !reuse_port
                     ? " (another process has the port; --reuse-port lets several "
                       "straum-serve processes share it)"
                     : "");
        close(fd);
        return -1;
    }
    struct sockaddr_storage bound;
    socklen_t blen = sizeof bound;
    getsockname(fd, (struct sockaddr *)&bound, &blen);
    *port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                              : ((struct sockaddr_in *)&bound)->sin_port);
    addr_text(&bound, *port, addr, addrlen);
    *fdp = fd;
    return 0;
}

/* ---- The token ------------------------------------------------------------------- */

static int read_token(struct serve_server *s, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "--token-file %s: %s", path, strerror(errno));
        return -1;
    }
    /* The token is only as secret as its file: one that group or others
     * may read is refused, as ssh refuses such a private key. */
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || (st.st_mode & 077) != 0) {
        snprintf(err, errlen, "--token-file %s is readable by %s (mode %04o): run chmod 600 %s",
                 path, st.st_mode & 070 ? "its group" : "others", (unsigned)(st.st_mode & 07777),
                 path);
        fclose(f);
        return -1;
    }
    char buf[4097];
    size_t n = fread(buf, 1, sizeof buf, f);
    bool bad = ferror(f);
    fclose(f);
    if (bad || n == sizeof buf) {
        snprintf(err, errlen, "--token-file %s: %s", path,
                 bad ? "cannot read it" : "longer than 4096 bytes");
        return -1;
    }
    size_t a = 0;
    while (a < n && (buf[a] == ' ' || buf[a] == '\t' || buf[a] == '\n' || buf[a] == '\r'))
        a++;
    while (n > a && (buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\n' ||
                     buf[n - 1] == '\r'))
        n--;
    if (n == a) {
        snprintf(err, errlen, "--token-file %s is empty", path);
        return -1;
    }
    for (size_t i = a; i < n; i++)
        if ((unsigned char)buf[i] < 0x21 || (unsigned char)buf[i] > 0x7E) {
            snprintf(err, errlen, "--token-file %s: the token must be printable ASCII without "
                     "spaces", path);
            return -1;
        }
    s->token = malloc(n - a + 1);
    if (!s->token) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(s->token, buf + a, n - a);
    s->token[n - a] = '\0';
    s->token_len = n - a;
    return 0;
}

/* "Bearer <token>", compared in time that depends on the token's length
 * alone, so a client cannot find it byte by byte. */
static bool authorized(const struct serve_server *s, struct MHD_Connection *c)
{
    if (!s->token)
        return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    h += 7;
    while (*h == ' ')
        h++;
    size_t n = strlen(h);
    while (n > 0 && h[n - 1] == ' ')
        n--;
    unsigned diff = n != s->token_len;
    for (size_t i = 0; i < s->token_len; i++)
        diff |= (unsigned char)s->token[i] ^ (unsigned char)(i < n ? h[i] : 0);
    return diff == 0;
}

/* ---- Request deadlines -------------------------------------------------------------------- */

/* A new connection: its clock starts now. NULL when out of memory (the
 * connection then has MHD's idle timeout only). */
static struct conn_clock *clock_start(struct serve_server *s, struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct conn_clock *k = ci ? calloc(1, sizeof *k) : NULL;
    if (!k)
        return NULL;
    k->fd = ci->connect_fd;
    k->since_ns = mono_ns();
    pthread_mutex_lock(&s->clocks_lock);
    k->next = s->clocks;
    if (s->clocks)
        s->clocks->prev = k;
    s->clocks = k;
    pthread_mutex_unlock(&s->clocks_lock);
    return k;
}

/* MHD notifies the close before it closes the socket: once this returns,
 * the sweeper no longer knows the descriptor, so it never shuts down a
 * number the kernel has given to another connection. */
static void clock_stop(struct serve_server *s, struct conn_clock *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&s->clocks_lock);
    if (k->prev)
        k->prev->next = k->next;
    else
        s->clocks = k->next;
    if (k->next)
        k->next->prev = k->prev;
    pthread_mutex_unlock(&s->clocks_lock);
    free(k);
}

/* answering: the request has arrived whole (its deadline no longer runs);
 * false: the answer went out, the next request's time starts. */
static void clock_answering(struct serve_server *s, struct MHD_Connection *c, bool answering)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn_clock *k = ci ? ci->socket_context : NULL;
    if (!k)
        return;
    pthread_mutex_lock(&s->clocks_lock);
    k->answering = answering;
    k->ended = false;
    if (!answering)
        k->since_ns = mono_ns();
    pthread_mutex_unlock(&s->clocks_lock);
}

/* Whether the client has closed its side and libmicrohttpd has read every
 * byte it sent (revents of a poll for POLLRDHUP). */
static bool peer_done(int fd, short revents)
{
    if (!(revents & (POLLRDHUP | POLLHUP | POLLERR)))
        return false;
    int unread = 0;
    return ioctl(fd, FIONREAD, &unread) != 0 || unread == 0;
}

/* Once a second, shuts down the socket of every connection whose request
 * has been arriving for longer than the timeout, or whose client closed
 * its side with no request whole and every byte read on two sweeps in a
 * row (the request can never complete; libmicrohttpd in epoll mode misses
 * a close that arrives with the last bytes of a chunked body, and would
 * wait out the timeout; two sweeps, so bytes read but not yet handed to
 * on_request are never mistaken for that). MHD then sees the socket end
 * and closes the connection in its own thread. One poll() over the
 * waiting connections per sweep, under the lock, as the shutdowns must be
 * (a descriptor is shut down only while its connection is open). */
static void *sweep(void *arg)
{
    struct serve_server *s = arg;
    struct pollfd *fds = NULL;
    size_t cap = 0;
    for (;;) {
        struct pollfd p = {.fd = s->sweep_pipe[0], .events = POLLIN};
        if (poll(&p, 1, 1000) > 0)
            break;
        int64_t limit = mono_ns() - (int64_t)s->timeout_s * 1000000000;
        pthread_mutex_lock(&s->clocks_lock);
        size_t n = 0;
        for (struct conn_clock *k = s->clocks; k; k = k->next) {
            if (k->answering || k->cut)
                continue;
            if (k->since_ns < limit) {
                shutdown(k->fd, SHUT_RDWR);
                k->cut = true;
                continue;
            }
            if (n == cap) {
                size_t ncap = cap ? cap * 2 : 64;
                struct pollfd *p2 = realloc(fds, ncap * sizeof *fds);
                if (!p2)
                    break; /* the rest are checked next sweep, or time out */
                fds = p2;
                cap = ncap;
            }
            fds[n++] = (struct pollfd){.fd = k->fd, .events = POLLRDHUP};
        }
        if (n > 0 && poll(fds, (nfds_t)n, 0) >= 0) {
            size_t i = 0;
            for (struct conn_clock *k = s->clocks; k && i < n; k = k->next) {
                if (k->answering || k->cut || fds[i].fd != k->fd)
                    continue;
                bool done = peer_done(k->fd, fds[i++].revents);
                if (done && k->ended) {
                    shutdown(k->fd, SHUT_RDWR);
                    k->cut = true;
                }
                k->ended = done;
            }
        }
        pthread_mutex_unlock(&s->clocks_lock);
    }
    free(fds);
    return NULL;
}

static int sweeper_start(struct serve_server *s)
{
    if (pipe2(s->sweep_pipe, O_CLOEXEC) != 0)
        return -1;
    int rc = pthread_create(&s->sweeper, NULL, sweep, s);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    s->sweeping = true;
    return 0;
}

static void sweeper_stop(struct serve_server *s)
{
    if (s->sweeping) {
        char c = 1;
        ssize_t rc = write(s->sweep_pipe[1], &c, 1);
        (void)rc; /* an empty pipe takes a byte */
        pthread_join(s->sweeper, NULL);
        s->sweeping = false;
    }
    for (int i = 0; i < 2; i++)
        if (s->sweep_pipe[i] >= 0) {
            close(s->sweep_pipe[i]);
            s->sweep_pipe[i] = -1;
        }
}

/* ---- The MHD callbacks ------------------------------------------------------------------- */

/* Per-request state of a row that reads a body: its row and the body as
 * it arrives. Other rows answer on their first call and keep `answered` as
 * their state instead. */
struct body_ctx {
    int route;
    char *body;
    size_t len, cap;
    bool too_big;
};

/* Request states that need no allocation. `pending`: a request without a
 * body, answered on MHD's next call, once the request is complete (a
 * response queued on the first call makes MHD 0.9.75 close the connection,
 * which would cost keep-alive). `answered`: a response is queued. */
static char pending, answered;

/* Path, method and token by the route table, before any body is read: 0
 * to go on, or the error response queued (its MHD result in *rc). */
static int refuse(struct serve_server *s, struct MHD_Connection *c, const char *url,
                  const char *method, int route, enum MHD_Result *rc)
{
    if (route == s->nroutes) {
        *rc = send_error(s, c, route, 404, "not_found", s->not_found, NULL);
        return 404;
    }
    const struct serve_route *r = &s->routes[route];
    if (!route_takes(r, method)) {
        const char *allow = route_allow(r->methods);
        char msg[200];
        snprintf(msg, sizeof msg, "%s takes %s only", url, allow);
        *rc = send_error(s, c, route, 405, "method_not_allowed", msg, allow);
        return 405;
    }
    /* /metrics is marked token in the table; --public-metrics opens it. */
    bool needs_token = r->token && !(s->public_metrics && strcmp(r->path, "/metrics") == 0);
    if (needs_token && !authorized(s, c)) {
        *rc = send_error(s, c, route, 401, "unauthorized",
                         strcmp(r->path, "/metrics") == 0
                             ? "/metrics needs \"Authorization: Bearer <token>\" with the token "
                               "of the --token-file, unless straum-serve runs with --public-metrics"
                             : "this server needs \"Authorization: Bearer <token>\" with the token "
                               "of its --token-file",
                         NULL);
        return 401;
    }
    return 0;
}

/* A complete request without a body (or one whose body does not matter). */
static enum MHD_Result answer(struct serve_server *s, struct MHD_Connection *c, const char *url,
                              const char *method)
{
    int route = route_find(s, url);
    enum MHD_Result rc;
    if (refuse(s, c, url, method, route, &rc))
        return rc;
    return s->routes[route].handler(s, c, route, "", 0);
}

static enum MHD_Result first_call(struct serve_server *s, struct MHD_Connection *c,
                                  const char *url, const char *method, void **state)
{
    atomic_fetch_add(&s->inflight, 1);
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *te =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    unsigned long long declared = 0;
    if (cl) {
        char *end;
        errno = 0;
        declared = strtoull(cl, &end, 10);
        if (errno == ERANGE)
            declared = ULLONG_MAX;
    }
    if (declared == 0 && !te) {
        *state = &pending;
        return MHD_YES;
    }

    /* A body follows. Refusals are answered now, before a byte of it is
     * read (MHD then closes the connection rather than read it). */
    *state = &answered;
    int route = route_find(s, url);
    enum MHD_Result rc;
    if (refuse(s, c, url, method, route, &rc))
        return rc;
    const struct serve_route *r = &s->routes[route];
    if (!r->body) /* a GET with a body: answered, the body unread */
        return answer(s, c, url, method);
    if (declared > s->max_body) {
        char msg[200];
        snprintf(msg, sizeof msg, "the body is %llu bytes; this server takes at most %zu "
                 "(--max-body)", declared, s->max_body);
        if (r->asks)
            metrics_ask(s->metrics, -1, 413, 0);
        return send_error(s, c, route, 413, "body_too_large", msg, NULL);
    }
    struct body_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return MHD_NO;
    ctx->route = route;
    if (declared > 0) {
        ctx->body = malloc((size_t)declared);
        ctx->cap = ctx->body ? (size_t)declared : 0;
    }
    *state = ctx;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **state)
{
    (void)version;
    struct serve_server *s = cls;
    if (*state == NULL) {
        enum MHD_Result rc = first_call(s, c, url, method, state);
        if (*state == &answered) /* answered on the headers */
            clock_answering(s, c, true);
        return rc;
    }
    if (*upload_data_size == 0) /* the request has arrived whole */
        clock_answering(s, c, true);
    if (*state == &answered) { /* nothing more to read for a request answered */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*state == &pending) {
        *upload_data_size = 0;
        *state = &answered;
        return answer(s, c, url, method);
    }
    struct body_ctx *ctx = *state;
    size_t n = *upload_data_size;
    if (n > 0) {
        *upload_data_size = 0;
        if (ctx->too_big) {
            /* A body without Content-Length that passed the limit. MHD
             * 0.9.75 will not queue a response while a body is still
             * arriving (MHD_queue_response returns MHD_NO), so the rest is
             * read and dropped, never kept, and the 413 goes out at its
             * end; a client still sending DISCARD_MAX bytes past the limit
             * is cut off without one. */
            ctx->len += n;
            return ctx->len - s->max_body > DISCARD_MAX ? MHD_NO : MHD_YES;
        }
        if (n > s->max_body - ctx->len) {
            ctx->too_big = true;
            free(ctx->body);
            ctx->body = NULL;
            ctx->len += n;
            return MHD_YES;
        }
        if (ctx->len + n > ctx->cap) {
            size_t cap = ctx->cap ? ctx->cap : 1024;
            while (cap < ctx->len + n)
                cap *= 2;
            if (cap > s->max_body)
                cap = s->max_body;
            char *p = realloc(ctx->body, cap);
            if (!p)
                return MHD_NO;
            ctx->body = p;
            ctx->cap = cap;
        }
        memcpy(ctx->body + ctx->len, upload_data, n);
        ctx->len += n;
        return MHD_YES;
    }
    /* The whole body has arrived. */
    if (ctx->too_big) {
        char msg[200];
        snprintf(msg, sizeof msg, "the body is over %zu bytes, the most this server takes "
                 "(--max-body)", s->max_body);
        if (s->routes[ctx->route].asks)
            metrics_ask(s->metrics, -1, 413, 0);
        return send_error(s, c, ctx->route, 413, "body_too_large", msg, NULL);
    }
    return s->routes[ctx->route].handler(s, c, ctx->route, ctx->body ? ctx->body : "", ctx->len);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    struct serve_server *s = cls;
    clock_answering(s, c, false); /* the next request's time starts now */
    if (*state == NULL)
        return;
    if (*state != &answered && *state != &pending) {
        struct body_ctx *ctx = *state;
        free(ctx->body);
        free(ctx);
    }
    *state = NULL;
    atomic_fetch_sub(&s->inflight, 1);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_state,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct serve_server *s = cls;
    metrics_connection(s->metrics, toe == MHD_CONNECTION_NOTIFY_STARTED ? 1 : -1);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED)
        *socket_state = clock_start(s, c);
    else
        clock_stop(s, *socket_state);
}

/* ---- Start and stop ------------------------------------------------------------------------ */

int serve_port(const struct serve_server *s) { return s->port; }
int serve_pg_port(const struct serve_server *s) { return s->pg ? pg_server_port(s->pg) : 0; }

void serve_stop(struct serve_server *s)
{
    if (!s)
        return;
    pg_server_stop(s->pg);
    /* Stop accepting (the gate accepts, and closes what it still holds),
     * let requests in flight finish (bounded), then close every
     * connection. */
    gate_stop(s->gate);
    sweeper_stop(s);
    if (s->daemon) {
        for (int waited = 0; atomic_load(&s->inflight) > 0 && waited < STOP_GRACE_MS; waited += 5)
            usleep(5000);
        MHD_stop_daemon(s->daemon);
    }
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    if (s->healthz)
        MHD_destroy_response(s->healthz);
    engine_close(s->engine);
    metrics_free(s->metrics);
    free(s->token);
    pthread_mutex_destroy(&s->clocks_lock);
    free(s);
}

struct serve_server *serve_start(const struct serve_options *o, char *err, size_t errlen)
{
    return serve_start_routes(o, serve_routes, serve_nroutes, err, errlen);
}

struct serve_server *serve_start_routes(const struct serve_options *o,
                                        const struct serve_route *routes, int nroutes,
                                        char *err, size_t errlen)
{
    if (serve_check_options(o, err, errlen) != 0)
        return NULL;
    scratch_process_setup(); /* before the workers allocate: heavy asks' blocks mapped */
    struct serve_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->routes = routes;
    s->nroutes = nroutes;
    routes_not_found(routes, nroutes, s->not_found, sizeof s->not_found);
    s->listen_fd = -1;
    s->sweep_pipe[0] = s->sweep_pipe[1] = -1;
    pthread_mutex_init(&s->clocks_lock, NULL);
    s->timeout_s = o->connection_timeout_s ? o->connection_timeout_s : CONNECTION_TIMEOUT_S;
    s->max_body = o->max_body ? o->max_body : SERVE_DEFAULT_MAX_BODY;
    s->max_lag_us = o->max_lag_us;
    s->quiet = o->quiet;
    s->public_metrics = o->public_metrics;
    atomic_init(&s->inflight, 0);

    /* The store first: a server that cannot answer should not take the port. */
    struct engine_limits lim = {
        .max_groups = o->max_groups,
        .ask_memory = o->ask_memory,
        .max_ask_us = o->ask_timeout_us > 0    ? o->ask_timeout_us
                      : o->ask_timeout_us == 0 ? SERVE_DEFAULT_ASK_TIMEOUT_US
                                               : 0,
        .max_ask_bytes = 64 * 1024,
        .max_params = 256,
        .max_cached_asks = o->ask_cache,
        .max_cached_bytes = o->ask_cache_bytes,
    };
    struct store_error serr = {0};
    s->engine = engine_open(o->store_dir, &lim, &serr);
    if (!s->engine) {
        snprintf(err, errlen, "cannot open the store %s: %s", o->store_dir, serr.message);
        goto fail;
    }
    const struct sql_view_list *views = store_views(engine_store(s->engine));
    int nviews = views ? views->nviews : 0;
    const char **names = calloc((size_t)nviews + 1, sizeof *names);
    if (!names) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    const char **labels = calloc((size_t)nroutes + 1, sizeof *labels);
    if (!labels) {
        free(names);
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (int i = 0; i < nviews; i++)
        names[i] = views->views[i].name;
    for (int i = 0; i < nroutes; i++)
        labels[i] = routes[i].label;
    s->metrics = metrics_new(names, nviews, labels, nroutes);
    free(names);
    free(labels);
    static const char ok[] = "{\"status\":\"ok\"}\n";
    s->healthz = MHD_create_response_from_buffer(sizeof ok - 1, (void *)ok, MHD_RESPMEM_PERSISTENT);
    if (!s->metrics || !s->healthz) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    MHD_add_response_header(s->healthz, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (o->token_file && read_token(s, o->token_file, err, errlen) != 0)
        goto fail;
    if (o->pg_listen) {
        struct pg_server_options po = {
            .listen = o->pg_listen, .reuse_port = o->reuse_port, .token = s->token,
            .engine = s->engine, .metrics = s->metrics, .connection_limit = CONNECTION_LIMIT,
            .startup_timeout_s = s->timeout_s, .idle_timeout_s = o->pg_idle_timeout_s,
            .workers = o->threads, .quiet = o->quiet};
        if (!(s->pg = pg_server_start(&po, err, errlen)))
            goto fail;
    }
    if (!serves_http(o))
        return s;
    if (serve_listen_socket("--listen", o->listen ? o->listen : SERVE_DEFAULT_LISTEN,
                            o->reuse_port, &s->listen_fd, &s->port, s->addr, sizeof s->addr, err,
                            errlen) != 0)
        goto fail;

    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = o->threads > 0 ? (unsigned)o->threads : cpus > 0 ? (unsigned)cpus : 1;
    /* No listening socket: the gate accepts and hands over what is HTTP
     * (MHD_add_connection, which needs MHD_USE_ITC to wake a thread). */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET;
    /* One thread is MHD's internal polling thread without a pool: a pool
     * size of 0 or 1 is taken as that but logged as a warning, so for one
     * thread the option is not given (the list ends where it would be). */
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
        MHD_OPTION_CONNECTION_TIMEOUT, s->timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTION_LIMIT,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
        threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, threads,
        MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, errlen, "libmicrohttpd could not start on %s", s->addr);
        goto fail;
    }
    if (sweeper_start(s) != 0) {
        snprintf(err, errlen, "cannot start the request deadline thread: %s", strerror(errno));
        goto fail;
    }
    struct gate_options go = {
        .listen_fd = s->listen_fd, .daemon = s->daemon, .metrics = s->metrics,
        .other_route = nroutes, .connection_limit = CONNECTION_LIMIT,
        .timeout_s = s->timeout_s, .pg_addr = s->pg ? pg_server_addr(s->pg) : NULL,
        .quiet = o->quiet};
    if (!(s->gate = gate_start(&go, err, errlen)))
        goto fail;
    return s;
fail:
    serve_stop(s);
    return NULL;
}

/* ---- Running until a signal ------------------------------------------------------------------ */

/* serve_request_stop may run in a signal handler: it sets a flag and writes
 * a byte to a pipe that serve_run sleeps on. The pipe lives as long as the
 * process, so the handler never writes to a closed (or reused) descriptor. */
static atomic_bool stop_requested;
static atomic_int stop_pipe_w = -1;
static int stop_pipe_r = -1;

void serve_request_stop(void)
{
    atomic_store(&stop_requested, true);
    int fd = atomic_load(&stop_pipe_w);
    if (fd >= 0) {
        char c = 1;
        ssize_t rc = write(fd, &c, 1);
        (void)rc; /* a full pipe already says "stop" */
    }
}

int serve_run(const struct serve_options *o)
{
    char err[600];
    if (serve_check_options(o, err, sizeof err) != 0) {
        serve_log(LOGFMT_ERROR, err);
        return 2;
    }
    if (stop_pipe_r < 0) {
        int p[2];
        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
            logfmt_msg(LOGFMT_ERROR, "pipe failed: %s", strerror(errno));
            return 1;
        }
        stop_pipe_r = p[0];
        atomic_store(&stop_pipe_w, p[1]);
    }
    int64_t t0 = mono_ns();
    struct serve_server *s = serve_start(o, err, sizeof err);
    if (!s) {
        serve_log(LOGFMT_ERROR, err);
        return 1;
    }
    struct logfmt_line l;
    if (!o->quiet && logfmt_begin(&l, LOGFMT_INFO, "straum-serve listening")) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        int threads = o->threads > 0 ? o->threads : cpus > 0 ? (int)cpus : 1;
        if (serves_http(o))
            logfmt_str(&l, "addr", s->addr);
        if (s->pg)
            logfmt_str(&l, "pg_addr", pg_server_addr(s->pg));
        logfmt_str(&l, "store", o->store_dir);
        logfmt_int(&l, "threads", threads);
        logfmt_str(&l, "token", o->token_file ? "required" : "none");
        logfmt_printf(&l, "start_ms", "%.1f", (double)(mono_ns() - t0) / 1e6);
        logfmt_end(&l);
    }
    while (!atomic_load(&stop_requested)) {
        struct pollfd pfd = {.fd = stop_pipe_r, .events = POLLIN};
        if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
            break;
        char drain[16];
        while (read(stop_pipe_r, drain, sizeof drain) > 0)
            ;
    }
    if (!o->quiet && logfmt_begin(&l, LOGFMT_INFO, "stopping: finishing requests in flight")) {
        logfmt_int(&l, "inflight", atomic_load(&s->inflight));
        logfmt_end(&l);
    }
    serve_stop(s);
    if (!o->quiet)
        serve_log(LOGFMT_INFO, "straum-serve stopped");
    return 0;
}
