/* pg_server.c -- the PostgreSQL listener: a thread per connection, the
 * startup exchange, the message loop, timeouts, the connection limit and
 * CancelRequest.
 *
 * A connection's thread blocks in poll on its socket only (pg.h invariant
 * 1): a slow or stalled client holds its own thread and nothing else, and
 * every other connection goes on being answered. Bounds, each answered with
 * an ErrorResponse the client can read before the socket is closed:
 *   - the startup packet: at most PG_MAX_STARTUP bytes, whole within the
 *     startup timeout (PostgreSQL's authentication_timeout, 60 s; here
 *     --connection-timeout, 30 s);
 *   - a message: a length field over PG_MAX_MESSAGE closes the connection
 *     (54000) before any byte of its body is read; a message begun must be
 *     whole within the same timeout;
 *   - idle between messages: --pg-idle-timeout (default 10 minutes:
 *     connection pools hold idle connections for minutes);
 *   - connections: HTTP's and PostgreSQL's together at most the HTTP
 *     connection limit (10,000); one more is refused with 53300.
 * Output is buffered and written before the thread blocks for more input,
 * so a pipelined Parse/Bind/Execute/Sync costs one write; a client that
 * does not read its answers is cut after the timeout. */
#include "serve/pg.h"

#include "serve/listen.h"
#include "serve/metrics.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/rand.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The longest a connection's blocking recv waits before its thread looks
 * at its deadline and at stopping again: a stopping server and a timed-out
 * client are noticed within this. */
#define RECV_WAIT_MS 1000

/* How long pg_server_stop waits for connection threads to finish. */
#define STOP_GRACE_MS 10000

struct conn_node {
    struct pg_conn c;
    unsigned char *in;          /* received, not yet consumed: [in_at, in_len) */
    size_t in_at, in_len, in_cap;
    struct conn_node *prev, *next;
};

struct pg_server {
    struct pg_server_options o;
    char *token;
    struct pg_scram_secret scram;
    int listen_fd, port;
    char addr[80];
    int stop_pipe[2];
    pthread_t acceptor;
    bool accepting;
    atomic_bool stopping;
    pthread_mutex_t lock;       /* conns, nconns, next_pid */
    pthread_cond_t drained;
    struct conn_node *conns;
    int nconns;
    int32_t next_pid;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- Socket I/O ------------------------------------------------------------------ */

static int flush_out(struct pg_conn *c)
{
    struct pg_server *s = c->srv;
    if (c->out.failed)
        return -1;
    size_t at = 0;
    int64_t deadline = mono_ms() + (int64_t)s->o.startup_timeout_s * 1000;
    while (at < c->out.len) {
        ssize_t n = send(c->fd, c->out.data + at, c->out.len - at, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            at += (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        int64_t left = deadline - mono_ms();
        if (left <= 0 || atomic_load(&s->stopping))
            return -1; /* the client stopped reading */
        struct pollfd p = {.fd = c->fd, .events = POLLOUT};
        poll(&p, 1, (int)(left < 1000 ? left : 1000));
    }
    c->out.len = 0;
    return 0;
}

/* Ensures n bytes are buffered. Waits up to timeout_ms (< 0: forever, as
 * far as stopping allows). Before it blocks it writes what is pending, so
 * answers leave when the client waits for them. 0, or -1 (closed, timed
 * out, stopping, or n over the bound). */
static int need(struct conn_node *k, size_t n, int64_t timeout_ms)
{
    struct pg_conn *c = &k->c;
    if (k->in_len - k->in_at >= n)
        return 0;
    if (k->in_at > 0) {
        memmove(k->in, k->in + k->in_at, k->in_len - k->in_at);
        k->in_len -= k->in_at;
        k->in_at = 0;
    }
    if (n > k->in_cap) {
        size_t cap = k->in_cap ? k->in_cap : 8192;
        while (cap < n)
            cap *= 2;
        unsigned char *p = realloc(k->in, cap);
        if (!p)
            return -1;
        k->in = p;
        k->in_cap = cap;
    }
    /* The answers leave first: a client that waits for them sends nothing
     * more until they arrive. Then recv blocks, for at most RECV_WAIT_MS
     * (SO_RCVTIMEO, set at accept) between looks at the deadline and at
     * stopping: one system call a message where a recv that would block,
     * a poll and a recv again took three. Past the deadline, bytes already
     * there are still taken, without waiting. */
    if (c->out.len && flush_out(c))
        return -1;
    int64_t deadline = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
    while (k->in_len < n) {
        bool last = (deadline >= 0 && mono_ms() >= deadline) || atomic_load(&c->srv->stopping);
        ssize_t got = recv(c->fd, k->in + k->in_len, k->in_cap - k->in_len,
                           last ? MSG_DONTWAIT : 0);
        if (got > 0)
            k->in_len += (size_t)got;
        else if (got == 0 || last || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return -1;
    }
    return 0;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A FATAL error, written out before the caller closes. */
static void fatal(struct pg_conn *c, const char *sqlstate, const char *msg, const char *hint)
{
    pg_put_error(&c->out, "FATAL", sqlstate, msg, hint, 0);
    flush_out(c);
}

/* Reads one regular message: type, and body into *body (in the input
 * buffer, valid until the next read). 0, or -1 (closed or refused: an
 * error was written where one helps). */
static int read_message(struct conn_node *k, int64_t idle_ms, char *type, unsigned char **body,
                        size_t *len)
{
    struct pg_conn *c = &k->c;
    int64_t msg_ms = (int64_t)c->srv->o.startup_timeout_s * 1000;
    if (need(k, 1, idle_ms))
        return -1;
    if (need(k, 5, msg_ms))
        return -1;
    *type = (char)k->in[k->in_at];
    uint32_t n = be32(k->in + k->in_at + 1);
    if (n < 4 || n > PG_MAX_MESSAGE + 4) {
        char msg[160];
        snprintf(msg, sizeof msg, "invalid message length %u (at most %u bytes)", n,
                 PG_MAX_MESSAGE);
        fatal(c, n < 4 ? "08P01" : "54000", msg, NULL);
        return -1;
    }
    if (need(k, 1 + n, msg_ms))
        return -1;
    *body = k->in + k->in_at + 5;
    *len = n - 4;
    k->in_at += 1 + n;
    return 0;
}

static int read_password(struct pg_conn *c, unsigned char **body, size_t *len)
{
    struct conn_node *k = (struct conn_node *)c;
    char type;
    unsigned char *b;
    if (read_message(k, (int64_t)c->srv->o.startup_timeout_s * 1000, &type, &b, len))
        return -1;
    if (type != 'p') {
        fatal(c, "08P01", "expected a password message", NULL);
        return -1;
    }
    *body = malloc(*len + 1);
    if (!*body)
        return -1;
    memcpy(*body, b, *len);
    return 0;
}

/* ---- Startup ------------------------------------------------------------------------ */

static void cancel(struct pg_server *s, int32_t pid, int32_t key)
{
    pthread_mutex_lock(&s->lock);
    for (struct conn_node *k = s->conns; k; k = k->next)
        if (k->c.pid == pid && k->c.secret == key)
            atomic_store(&k->c.cancel, true);
    pthread_mutex_unlock(&s->lock);
}

/* Applies a startup setting as the SET it stands for; 0, or -1 with the
 * error written (FATAL). */
static int startup_set(struct pg_conn *c, const char *name, const char *value)
{
    char stmt[512], quoted[300];
    size_t q = 0;
    for (const char *p = value; *p && q + 3 < sizeof quoted; p++) {
        if (*p == '\'')
            quoted[q++] = '\'';
        quoted[q++] = *p;
    }
    quoted[q] = '\0';
    snprintf(stmt, sizeof stmt, "SET %s TO '%s'", name, quoted);
    struct buf saved = c->out, scratch = {0};
    c->out = scratch;
    int rc = pg_session_run(c, stmt, strlen(stmt), false, false);
    scratch = c->out;
    c->out = saved;
    if (rc) {
        /* The ErrorResponse is in scratch: send it as FATAL. */
        buf_put(&c->out, scratch.data, scratch.len);
        if (!c->out.failed) {
            char *sev = memmem(c->out.data, c->out.len, "ERROR", 6);
            if (sev)
                memcpy(sev, "FATAL", 5);
            char *sev2 = sev ? memmem(sev + 6, c->out.len - (size_t)(sev + 6 - c->out.data), "ERROR", 6) : NULL;
            if (sev2)
                memcpy(sev2, "FATAL", 5);
        }
    }
    buf_free(&scratch);
    return rc;
}

/* "-c name=value" and "--name=value" words of the options parameter. */
static int startup_options(struct pg_conn *c, const char *options)
{
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", options);
    char *save, *w = strtok_r(copy, " \t", &save);
    while (w) {
        char *setting = NULL;
        if (!strcmp(w, "-c"))
            setting = strtok_r(NULL, " \t", &save);
        else if (!strncmp(w, "--", 2))
            setting = w + 2;
        else if (!strncmp(w, "-c", 2))
            setting = w + 2;
        char *eq = setting ? strchr(setting, '=') : NULL;
        if (!eq) {
            char msg[300];
            snprintf(msg, sizeof msg, "startup option \"%.200s\" is not -c name=value", w);
            fatal(c, "42601", msg, NULL);
            return -1;
        }
        *eq = '\0';
        if (startup_set(c, setting, eq + 1)) {
            flush_out(c);
            return -1;
        }
        w = strtok_r(NULL, " \t", &save);
    }
    return 0;
}

static void put_status(struct pg_conn *c)
{
    static const char *const fixed[][2] = {
        {"server_version", "15.0 (Straum " STRAUM_VERSION ")"},
        {"server_encoding", "UTF8"},
        {"client_encoding", "UTF8"},
        {"DateStyle", "ISO, MDY"},
        {"IntervalStyle", "postgres"},
        {"integer_datetimes", "on"},
        {"standard_conforming_strings", "on"},
        {"is_superuser", "off"},
        {"default_transaction_read_only", "on"},
        {"in_hot_standby", "off"},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        pg_put_parameter_status(&c->out, fixed[i][0], fixed[i][1]);
    pg_put_parameter_status(&c->out, "session_authorization", c->user);
    pg_put_parameter_status(&c->out, "application_name", c->application_name);
    pg_put_parameter_status(&c->out, "TimeZone", c->time_zone);
}

/* The startup exchange: 0 when the session may begin, -1 to close. */
static int startup(struct conn_node *k)
{
    struct pg_conn *c = &k->c;
    struct pg_server *s = c->srv;
    int64_t timeout = (int64_t)s->o.startup_timeout_s * 1000;
    int64_t deadline = mono_ms() + timeout;
    struct pg_startup st;
    for (int round = 0;; round++) {
        int64_t left = deadline - mono_ms();
        if (left <= 0 || need(k, 4, left))
            return -1;
        uint32_t n = be32(k->in + k->in_at);
        if (n < 8 || n > PG_MAX_STARTUP) {
            fatal(c, "08P01", "invalid length of startup packet", NULL);
            return -1;
        }
        if (need(k, n, deadline - mono_ms()))
            return -1;
        char why[200];
        int rc = pg_parse_startup(k->in + k->in_at + 4, n - 4, &st, why, sizeof why);
        k->in_at += n;
        if (rc) {
            fatal(c, "08P01", why, NULL);
            return -1;
        }
        if (st.code == PG_CANCEL_REQUEST) {
            cancel(s, st.cancel_pid, st.cancel_key);
            return -1;
        }
        if (st.code != PG_SSL_REQUEST && st.code != PG_GSSENC_REQUEST)
            break;
        /* No TLS, no GSSAPI: 'N', and the client goes on in the clear or,
         * with sslmode=require, closes with libpq's "server does not
         * support SSL, but SSL was required". */
        if (round > 2 || k->in_len > k->in_at) {
            fatal(c, "08P01", "unexpected bytes after an SSL request", NULL);
            return -1;
        }
        if (send(c->fd, "N", 1, MSG_NOSIGNAL) != 1)
            return -1;
    }
    /* Bytes past the startup packet before the server answered: the
     * protocol has the client wait, so they are garbage. */
    const char *user = pg_startup_param(&st, "user");
    if (!user || !*user) {
        fatal(c, "28000", "no PostgreSQL user name specified in startup packet", NULL);
        return -1;
    }
    if (pg_startup_param(&st, "replication")) {
        fatal(c, "0A000", "replication connections are not supported", NULL);
        return -1;
    }
    const char *db = pg_startup_param(&st, "database");
    snprintf(c->user, sizeof c->user, "%s", user);
    snprintf(c->database, sizeof c->database, "%s", db && *db ? db : user);
    snprintf(c->time_zone, sizeof c->time_zone, "UTC");
    c->extra_float_digits = 1;
    c->txn = 'I';
    for (int i = 0; i < st.nparams; i++) {
        const char *name = st.names[i];
        if (!strcmp(name, "user") || !strcmp(name, "database"))
            continue;
        if (!strcmp(name, "options")) {
            if (startup_options(c, st.values[i]))
                return -1;
            continue;
        }
        /* Drivers send settings as parameters too (pgjdbc: TimeZone,
         * DateStyle, extra_float_digits, client_encoding). */
        if (startup_set(c, name, st.values[i])) {
            flush_out(c);
            return -1;
        }
    }
    c->out.len = 0; /* what the startup SETs wrote: put_status says it once */
    snprintf(c->startup_time_zone, sizeof c->startup_time_zone, "%s", c->time_zone);

    if (s->token) {
        struct pg_auth_io io = {flush_out, read_password};
        int rc = pg_auth_scram(c, &s->scram, &io);
        if (rc) {
            flush_out(c);
            return -1;
        }
    }
    size_t at = pg_msg_begin(&c->out, 'R');
    pg_put_int32(&c->out, 0); /* AuthenticationOk */
    pg_msg_end(&c->out, at);
    put_status(c);
    at = pg_msg_begin(&c->out, 'K');
    pg_put_int32(&c->out, c->pid);
    pg_put_int32(&c->out, c->secret);
    pg_msg_end(&c->out, at);
    pg_put_ready(&c->out, 'I');
    return flush_out(c);
}

/* ---- A connection ------------------------------------------------------------------------ */

static void unlink_conn(struct pg_server *s, struct conn_node *k)
{
    pthread_mutex_lock(&s->lock);
    if (k->prev)
        k->prev->next = k->next;
    else
        s->conns = k->next;
    if (k->next)
        k->next->prev = k->prev;
    s->nconns--;
    pthread_cond_broadcast(&s->drained);
    pthread_mutex_unlock(&s->lock);
}

static void *serve_conn(void *arg)
{
    struct conn_node *k = arg;
    struct pg_conn *c = &k->c;
    struct pg_server *s = c->srv;
    if (startup(k) == 0) {
        int64_t idle = s->o.idle_timeout_s ? (int64_t)s->o.idle_timeout_s * 1000 : -1;
        for (;;) {
            char type;
            unsigned char *body;
            size_t len;
            if (read_message(k, idle, &type, &body, &len))
                break;
            struct pg_message *m = malloc(sizeof *m);
            if (!m) {
                fatal(c, "53200", "out of memory", NULL);
                break;
            }
            const char *state = "08P01";
            char why[200];
            if (pg_parse_message(type, body, len, m, &state, why, sizeof why)) {
                fatal(c, state, why, NULL);
                free(m);
                break;
            }
            int rc = pg_handle_message(c, m);
            free(m);
            if (rc)
                break;
            if (c->out.failed) {
                c->out.len = 0;
                c->out.failed = false;
                fatal(c, "53200", "out of memory writing the answer", NULL);
                break;
            }
            /* Answer when the client waits: Sync, Query and Flush end a
             * batch; need() writes before blocking anyway. */
            if ((type == 'S' || type == 'Q' || type == 'H') && flush_out(c))
                break;
        }
        flush_out(c);
    }
    pg_conn_reset(c);
    buf_free(&c->out);
    close(c->fd);
    free(k->in);
    if (s->o.metrics)
        metrics_connection(s->o.metrics, -1);
    unlink_conn(s, k);
    free(k);
    return NULL;
}

/* Refuses a connection over the limit with an ErrorResponse (what libpq
 * shows: "sorry, too many clients already"), without reading its startup
 * packet: the message is readable whatever the client sent first. */
static void refuse(int fd)
{
    struct buf b = {0};
    pg_put_error(&b, "FATAL", "53300", "sorry, too many clients already",
                 "straum-serve serves at most 10000 HTTP and PostgreSQL connections together.", 0);
    if (!b.failed)
        (void)!send(fd, b.data, b.len, MSG_NOSIGNAL | MSG_DONTWAIT);
    buf_free(&b);
    close(fd);
}

static void *accept_loop(void *arg)
{
    struct pg_server *s = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = s->listen_fd, .events = POLLIN},
                              {.fd = s->stop_pipe[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents || atomic_load(&s->stopping))
            break;
        if (!(p[0].revents & POLLIN))
            continue;
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) {
                struct timespec ts = {0, 10 * 1000000};
                nanosleep(&ts, NULL); /* descriptors are short: let some close */
            }
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct timeval wait = {RECV_WAIT_MS / 1000, RECV_WAIT_MS % 1000 * 1000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
        pthread_mutex_lock(&s->lock);
        int total = s->nconns;
        pthread_mutex_unlock(&s->lock);
        if (s->o.metrics)
            total = (int)metrics_connections_open(s->o.metrics);
        if (total >= s->o.connection_limit) {
            refuse(fd);
            continue;
        }
        struct conn_node *k = calloc(1, sizeof *k);
        if (!k) {
            close(fd);
            continue;
        }
        k->c.srv = s;
        k->c.engine = s->o.engine;
        k->c.fd = fd;
        k->c.flush = flush_out;
        atomic_init(&k->c.cancel, false);
        if (RAND_bytes((unsigned char *)&k->c.secret, sizeof k->c.secret) != 1)
            k->c.secret = (int32_t)mono_ms();
        pthread_mutex_lock(&s->lock);
        k->c.pid = ++s->next_pid;
        k->next = s->conns;
        if (s->conns)
            s->conns->prev = k;
        s->conns = k;
        s->nconns++;
        pthread_mutex_unlock(&s->lock);
        if (s->o.metrics)
            metrics_connection(s->o.metrics, 1);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 1 << 20);
        pthread_t t;
        if (pthread_create(&t, &attr, serve_conn, k) != 0) {
            unlink_conn(s, k);
            if (s->o.metrics)
                metrics_connection(s->o.metrics, -1);
            refuse(fd);
            free(k);
        }
        pthread_attr_destroy(&attr);
    }
    return NULL;
}

/* ---- Start and stop ---------------------------------------------------------------------- */

int pg_server_port(const struct pg_server *s) { return s->port; }
const char *pg_server_addr(const struct pg_server *s) { return s->addr; }

void pg_server_stop(struct pg_server *s)
{
    if (!s)
        return;
    atomic_store(&s->stopping, true);
    if (s->accepting) {
        (void)!write(s->stop_pipe[1], "x", 1);
        pthread_join(s->acceptor, NULL);
    }
    /* Connection threads see stopping within a second (their polls wake
     * at least that often) and close. */
    pthread_mutex_lock(&s->lock);
    for (struct conn_node *k = s->conns; k; k = k->next)
        shutdown(k->c.fd, SHUT_RDWR);
    int64_t until = mono_ms() + STOP_GRACE_MS;
    while (s->nconns > 0 && mono_ms() < until) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&s->drained, &s->lock, &ts);
    }
    int left = s->nconns;
    pthread_mutex_unlock(&s->lock);
    if (left > 0)
        return; /* threads still hold it: leak it rather than free it under them */
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    for (int i = 0; i < 2; i++)
        if (s->stop_pipe[i] >= 0)
            close(s->stop_pipe[i]);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->drained);
    free(s->token);
    free(s);
}

struct pg_server *pg_server_start(const struct pg_server_options *o, char *err, size_t errlen)
{
    struct pg_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->o = *o;
    s->listen_fd = -1;
    s->stop_pipe[0] = s->stop_pipe[1] = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->drained, NULL);
    atomic_init(&s->stopping, false);
    if (!s->o.startup_timeout_s)
        s->o.startup_timeout_s = 30;
    if (o->token) {
        s->token = strdup(o->token);
        if (!s->token || pg_scram_secret_init(&s->scram, s->token)) {
            snprintf(err, errlen, "cannot derive the SCRAM secret from the token");
            goto fail;
        }
    }
    if (pipe2(s->stop_pipe, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    if (serve_listen_socket("--pg-listen", o->listen, o->reuse_port, &s->listen_fd, &s->port,
                            s->addr, sizeof s->addr, err, errlen))
        goto fail;
    if (pthread_create(&s->acceptor, NULL, accept_loop, s) != 0) {
        snprintf(err, errlen, "cannot start the PostgreSQL listener thread");
        goto fail;
    }
    s->accepting = true;
    return s;
fail:
    pg_server_stop(s);
    return NULL;
}
