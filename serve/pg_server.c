/* pg_server.c -- the PostgreSQL listener: the startup exchange on a thread
 * of its own, then the connection's messages on a pool of workers sharing
 * one epoll set; timeouts, the connection limit and CancelRequest.
 *
 * Why a pool and not a thread per connection: a connection's thread slept
 * in recv after every answer and was woken for the next ask, two context
 * switches an ask, which cost more than the light asks themselves (on two
 * cores, 64 pgbench connections spent a fifth of the server's CPU in
 * switching). A worker that answers one connection takes the next ready
 * one without sleeping while there is work.
 *
 * Why edge-triggered, and events in batches: with EPOLLONESHOT every
 * answer cost an epoll_ctl to re-arm the connection, and every event an
 * epoll_wait of its own; the two were a sixth of the server's CPU under 64
 * pgbench connections. A connection is now registered once (EPOLLIN,
 * EPOLLOUT, EPOLLRDHUP, EPOLLET) and a worker takes up to BATCH events a
 * call. An edge may then come while another worker answers the same
 * connection, and an event may outlive its connection; the slot states
 * below make both safe.
 *
 * Invariants of the pool (pg.h invariant 1 is the first):
 *   P1. A connection is owned by one thread at a time: its startup thread,
 *       or the one worker that won its slot (SLOT_BUSY, set by compare and
 *       swap), so its state needs no lock. Only the owner reads or writes
 *       the connection, reads or writes its socket, or closes it (the
 *       sweeper and a stopping server shut it down, under the lock: P6).
 *   P2. An event for a connection owned by another sets SLOT_AGAIN, and the
 *       owner takes one more turn before it lets go: no edge is lost, and
 *       a connection is never answered by two workers at once.
 *   P3. A turn reads until the socket is empty (a short recv: bytes that
 *       come later raise a new edge) unless answers are pending, and then
 *       reads nothing more until they leave (back-pressure; their leaving
 *       raises EPOLLOUT). A worker never blocks on a client between
 *       messages. A client that keeps its socket full (a pipeline that
 *       never ends) keeps its worker, as a heavy ask does, and P5
 *       replaces that worker in the pool.
 *   P4. An event names a slot and its generation, never a pointer: a
 *       connection's slot gets a new generation as the connection closes,
 *       so an event taken before that finds another generation and is
 *       dropped. Slots live as long as the server.
 *   P5. A worker busy on one connection for over LONG_BUSY_MS (a heavy ask,
 *       or a long answer to a client slow to read it, which still blocks
 *       within the message timeout) is replaced by a new worker, and the
 *       events of its batch it has not begun are handed over (s->handed),
 *       so ready connections never wait long behind it; workers beyond the
 *       pool's size retire once they are not needed.
 *   P6. A connection's fd is closed only after it is unlinked from the
 *       server's list (under the lock): the sweeper and CancelRequest,
 *       which walk the list under the lock, never see a closed fd.
 * Bounds, each answered with an ErrorResponse the client can read before
 * the socket is closed:
 *   - the startup packet: at most PG_MAX_STARTUP bytes, whole within the
 *     startup timeout (PostgreSQL's authentication_timeout, 60 s; here
 *     --connection-timeout, 30 s);
 *   - a message: a length field over PG_MAX_MESSAGE closes the connection
 *     (54000) before any byte of its body is read; a message begun must be
 *     whole within the same timeout;
 *   - idle between messages: --pg-idle-timeout (default 10 minutes:
 *     connection pools hold idle connections for minutes);
 *   - answers not read by the client within the same 30 s: closed;
 *   - connections: HTTP's and PostgreSQL's together at most the HTTP
 *     connection limit (10,000); one more is refused with 53300.
 * Timeouts of pooled connections are the sweeper's (the monitor thread):
 * it shuts the socket down, and the worker that takes the event closes. */
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
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The longest a startup thread's blocking recv waits before it looks at
 * its deadline and at stopping again: a stopping server and a timed-out
 * client are noticed within this. */
#define RECV_WAIT_MS 1000

/* How long pg_server_stop waits for connections and workers to finish. */
#define STOP_GRACE_MS 10000

/* P5: a worker busy this long on one connection is replaced in the pool.
 * Short enough that a light ask behind a heavy one waits a few
 * milliseconds at most; long enough that light asks (tens of
 * microseconds) never start a thread. It is also the monitor's tick while
 * connections are pooled: 200 wakeups a second, a negligible cost. */
#define LONG_BUSY_MS 5

/* How often the monitor looks for pooled connections past a deadline:
 * timeouts are in seconds, so a quarter second late is immaterial, and a
 * walk of 10,000 connections four times a second costs nothing. */
#define SWEEP_MS 250

/* Room a worker makes in a connection's input before each recv: one recv
 * takes a pipeline of small messages whole. */
#define READ_CHUNK 8192

/* Events a worker takes per epoll_wait. Under load one call serves many
 * asks; the events a worker has not begun when it is found busy on a
 * heavy one are handed to another (P5), so a batch never holds a ready
 * connection longer than a single event did. */
#define BATCH 16

/* A slot's state: its generation (P4) above the two flags. */
#define SLOT_BUSY 1u           /* owned (P1) */
#define SLOT_AGAIN 2u          /* an event came while owned: one more turn (P2) */
#define SLOT_GEN(state) ((uint32_t)((state) >> 2))

/* The event of s->handed_fd: no slot has this index. */
#define HANDED_TOKEN UINT64_MAX

/* Where an event finds its connection (P4). The epoll data is the slot's
 * index in the low 32 bits and its generation in the high 32: a slot
 * would have to be reused 2^32 times while one event waits for the two
 * to be confused. */
struct pg_slot {
    _Atomic uint64_t state;
    struct conn_node *conn;     /* read by the owner only */
};

struct conn_node {
    struct pg_conn c;
    unsigned char *in;          /* received, not yet consumed: [in_at, in_len) */
    size_t in_at, in_len, in_cap;
    int64_t partial_since;      /* when the message still incomplete began; 0: none */
    uint32_t slot;              /* its index in s->slots, from accept to close */
    atomic_bool pooled;         /* handed to the workers */
    _Atomic int64_t deadline;   /* pooled and waiting: shut down past it (ms) */
    struct conn_node *prev, *next;
};

/* A worker of the pool: busy_since is when it took its current event (0:
 * waiting), read by the monitor (P5), which may also take the events of
 * its batch it has not begun (under its lock). */
struct pg_worker {
    struct pg_server *srv;
    _Atomic int64_t busy_since;
    bool base;                  /* one of the pool's size: never retires */
    pthread_mutex_t lock;       /* batch_at, batch_n, batch */
    int batch_at, batch_n;
    uint64_t batch[BATCH];
    struct pg_message msg;      /* the message being answered (5 KiB: not on each ask's heap) */
    struct pg_worker *prev, *next;
};

struct pg_server {
    struct pg_server_options o;
    char *token;
    struct pg_scram_secret scram;
    int listen_fd, port;
    char addr[80];
    int stop_pipe[2];
    int wake_pipe[2];           /* the monitor's: stopping, or a first connection pooled */
    int epfd;                   /* the pool's epoll set */
    pthread_t acceptor, monitor;
    bool accepting, monitoring;
    atomic_bool stopping;
    pthread_mutex_t lock;       /* conns, nconns, next_pid, workers, nworkers, free slots, handed */
    pthread_cond_t drained;     /* nconns or nworkers went down */
    struct conn_node *conns;
    int nconns;
    atomic_int npooled;
    int32_t next_pid;
    struct pg_slot *slots;      /* one per connection the limit allows */
    uint32_t *free_slots, nfree;
    uint64_t *handed;           /* events taken from busy workers (P5), not begun */
    int nhanded, handed_cap;
    atomic_int nhanded_hint;    /* nhanded, read without the lock */
    int handed_fd;              /* an eventfd in the epoll set (EPOLLET): some were handed */
    struct pg_worker *workers;
    int nworkers, pool_size, max_workers;
    atomic_int nlong;           /* workers busy past LONG_BUSY_MS at the monitor's last tick */
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

/* Whether a regular message's length field n is within the bounds
 * (invariant 2: checked before any byte of the body is read); when not,
 * the FATAL error is written and the caller closes. */
static bool message_length_ok(struct pg_conn *c, uint32_t n)
{
    if (n >= 4 && n <= PG_MAX_MESSAGE + 4)
        return true;
    char msg[160];
    snprintf(msg, sizeof msg, "invalid message length %u (at most %u bytes)", n, PG_MAX_MESSAGE);
    fatal(c, n < 4 ? "08P01" : "54000", msg, NULL);
    return false;
}

/* Reads one regular message: type, and body into *body (in the input
 * buffer, valid until the next read). 0, or -1 (closed or refused: an
 * error was written where one helps). */
static int read_message(struct conn_node *k, char *type, unsigned char **body, size_t *len)
{
    struct pg_conn *c = &k->c;
    int64_t msg_ms = (int64_t)c->srv->o.startup_timeout_s * 1000;
    if (need(k, 5, msg_ms))
        return -1;
    *type = (char)k->in[k->in_at];
    uint32_t n = be32(k->in + k->in_at + 1);
    if (!message_length_ok(c, n))
        return -1;
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
    if (read_message(k, &type, &b, len))
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

/* Closes a connection; its owner calls it (P1). The slot gets its next
 * generation as the connection leaves the list (P4), and stays owned
 * until accept gives it to a new connection; then the fd is closed (P6),
 * which takes it out of the epoll set. */
static void close_conn(struct conn_node *k)
{
    struct pg_conn *c = &k->c;
    struct pg_server *s = c->srv;
    pg_conn_reset(c);
    buf_free(&c->out);
    free(k->in);
    if (s->o.metrics)
        metrics_connection(s->o.metrics, -1);
    pthread_mutex_lock(&s->lock);
    if (k->prev)
        k->prev->next = k->next;
    else
        s->conns = k->next;
    if (k->next)
        k->next->prev = k->prev;
    s->nconns--;
    if (atomic_load(&k->pooled))
        atomic_fetch_sub(&s->npooled, 1);
    struct pg_slot *slot = &s->slots[k->slot];
    uint64_t gen = SLOT_GEN(atomic_load(&slot->state)) + 1;
    slot->conn = NULL;
    atomic_store(&slot->state, gen << 2 | SLOT_BUSY);
    s->free_slots[s->nfree++] = k->slot;
    pthread_cond_broadcast(&s->drained);
    pthread_mutex_unlock(&s->lock);
    close(c->fd);
    free(k);
}

/* Writes what the socket takes without waiting: 0 when out is empty, 1
 * when some is left (the rest moved to its front), -1 on a dead socket. */
static int write_some(struct pg_conn *c)
{
    if (c->out.failed)
        return -1;
    size_t at = 0;
    while (at < c->out.len) {
        ssize_t n = send(c->fd, c->out.data + at, c->out.len - at, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0)
            at += (size_t)n;
        else if (n < 0 && errno == EINTR)
            continue;
        else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        else
            return -1;
    }
    memmove(c->out.data, c->out.data + at, c->out.len - at);
    c->out.len -= at;
    return c->out.len > 0;
}

/* Sets the deadline the sweeper holds a connection to while it waits:
 * for its answers to leave (out), for the rest of a message begun, or
 * idle for its next one. */
static void set_deadline(struct conn_node *k, bool out)
{
    struct pg_server *s = k->c.srv;
    int64_t now = mono_ms(), msg_ms = (int64_t)s->o.startup_timeout_s * 1000;
    int64_t deadline = INT64_MAX;
    if (out)
        deadline = now + msg_ms;
    else if (k->partial_since)
        deadline = k->partial_since + msg_ms;
    else if (s->o.idle_timeout_s)
        deadline = now + (int64_t)s->o.idle_timeout_s * 1000;
    atomic_store(&k->deadline, deadline);
}

/* Answers every whole message in k's input: 0 to go on, -1 to close (an
 * error was written where one helps). */
static int answer_messages(struct pg_message *msg, struct conn_node *k)
{
    struct pg_conn *c = &k->c;
    while (k->in_len - k->in_at >= 5) {
        unsigned char *at = k->in + k->in_at;
        char type = (char)at[0];
        uint32_t n = be32(at + 1);
        if (!message_length_ok(c, n))
            return -1;
        if (k->in_len - k->in_at < 1 + (size_t)n)
            return 0; /* the rest has not come yet */
        k->in_at += 1 + n;
        const char *state = "08P01";
        char why[200];
        if (pg_parse_message(type, at + 5, n - 4, msg, &state, why, sizeof why)) {
            fatal(c, state, why, NULL);
            return -1;
        }
        if (pg_handle_message(c, msg)) {
            flush_out(c);
            return -1;
        }
        if (c->out.failed) {
            c->out.len = 0;
            c->out.failed = false;
            fatal(c, "53200", "out of memory writing the answer", NULL);
            return -1;
        }
    }
    return 0;
}

/* Makes room for the next recv: the consumed bytes dropped, at least
 * READ_CHUNK free, or the whole of a message begun whose length is known
 * (bounded by PG_MAX_MESSAGE, invariant 2). 0, or -1 out of memory. */
static int make_room(struct conn_node *k)
{
    if (k->in_at > 0) {
        memmove(k->in, k->in + k->in_at, k->in_len - k->in_at);
        k->in_len -= k->in_at;
        k->in_at = 0;
    }
    size_t want = k->in_len + READ_CHUNK;
    if (k->in_len >= 5) {
        /* Not yet checked when bytes came with the startup packet: a length
         * past the bound is refused by answer_messages, never allocated. */
        size_t whole = 1 + (size_t)be32(k->in + 1);
        if (whole > want && whole <= 1 + 4 + (size_t)PG_MAX_MESSAGE)
            want = whole;
    }
    if (want <= k->in_cap)
        return 0;
    size_t cap = k->in_cap ? k->in_cap : READ_CHUNK;
    while (cap < want)
        cap *= 2;
    unsigned char *p = realloc(k->in, cap);
    if (!p)
        return -1;
    k->in = p;
    k->in_cap = cap;
    return 0;
}

/* One turn on a connection its caller owns (P1, P3): pending answers
 * out; then, unless some are still pending, recv until the socket is
 * empty, answering every whole message and writing the answers as they
 * come. 0 with the deadline set for the wait that follows, or -1: closed
 * (an error was written where one helps). */
static int serve_turn(struct pg_message *msg, struct conn_node *k)
{
    struct pg_conn *c = &k->c;
    /* Owned now: no deadline while its messages are answered (an ask may
     * take longer than the message timeout). */
    atomic_store(&k->deadline, INT64_MAX);
    if (atomic_load(&c->srv->stopping))
        goto close;
    int rc = c->out.len ? write_some(c) : 0;
    bool answered = false;
    while (rc == 0) {
        if (make_room(k))
            goto close;
        size_t room = k->in_cap - k->in_len;
        ssize_t got = recv(c->fd, k->in + k->in_len, room, MSG_DONTWAIT);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (got <= 0)
            goto close;
        k->in_len += (size_t)got;
        if (answer_messages(msg, k))
            goto close;
        answered |= k->in_at > 0;
        rc = c->out.len ? write_some(c) : 0;
        if ((size_t)got < room)
            break; /* the socket is empty: its next bytes raise an edge */
    }
    if (rc < 0)
        goto close;
    if (k->in_len > k->in_at) {
        /* A message begun: its clock starts when it began, in this turn if
         * a message before it was answered in this turn. */
        if (!k->partial_since || answered)
            k->partial_since = mono_ms();
    } else {
        k->partial_since = 0;
    }
    set_deadline(k, rc > 0);
    return 0;
close:
    close_conn(k);
    return -1;
}

/* Turns on a connection its caller owns until no event came meanwhile,
 * then lets it go (P2); or until it closes. */
static void serve_owned(struct pg_server *s, struct pg_message *msg, struct conn_node *k)
{
    struct pg_slot *slot = &s->slots[k->slot];
    uint64_t gen = SLOT_GEN(atomic_load(&slot->state)); /* fixed while owned */
    for (;;) {
        if (serve_turn(msg, k))
            return;
        uint64_t busy = gen << 2 | SLOT_BUSY;
        /* Releases every write to the connection to its next owner. */
        if (atomic_compare_exchange_strong_explicit(&slot->state, &busy, gen << 2,
                                                    memory_order_acq_rel, memory_order_acquire))
            return;
        atomic_fetch_and(&slot->state, ~(uint64_t)SLOT_AGAIN);
    }
}

/* An event, taken by a worker: the connection served if its slot is won,
 * noted for its owner if it is owned (P2), dropped if it is gone (P4). */
static void take_event(struct pg_server *s, struct pg_message *msg, uint64_t token)
{
    struct pg_slot *slot = &s->slots[(uint32_t)token];
    uint32_t gen = (uint32_t)(token >> 32);
    uint64_t state = atomic_load_explicit(&slot->state, memory_order_acquire);
    for (;;) {
        if (SLOT_GEN(state) != gen || (state & SLOT_AGAIN))
            return;
        uint64_t want = state | (state & SLOT_BUSY ? SLOT_AGAIN : SLOT_BUSY);
        if (atomic_compare_exchange_weak_explicit(&slot->state, &state, want,
                                                  memory_order_acq_rel, memory_order_acquire))
            break;
    }
    if (!(state & SLOT_BUSY))
        serve_owned(s, msg, slot->conn);
}

/* ---- The pool ----------------------------------------------------------------------------- */

static void *worker_main(void *arg);

/* Starts a worker; with s->lock held. 0, or -1 (no thread: the pool goes
 * on with those it has). */
static int start_worker(struct pg_server *s, bool base)
{
    struct pg_worker *w = calloc(1, sizeof *w);
    if (!w)
        return -1;
    w->srv = s;
    w->base = base;
    atomic_init(&w->busy_since, 0);
    pthread_mutex_init(&w->lock, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 1 << 20);
    pthread_t t;
    int rc = pthread_create(&t, &attr, worker_main, w);
    pthread_attr_destroy(&attr);
    if (rc) {
        pthread_mutex_destroy(&w->lock);
        free(w);
        return -1;
    }
    w->next = s->workers;
    if (s->workers)
        s->workers->prev = w;
    s->workers = w;
    s->nworkers++;
    return 0;
}

/* Whether w, a worker started to replace a busy one, is no longer needed:
 * the pool holds its size without it. */
static bool surplus(struct pg_server *s, struct pg_worker *w)
{
    if (w->base)
        return false;
    pthread_mutex_lock(&s->lock);
    bool more = s->nworkers - atomic_load(&s->nlong) > s->pool_size;
    pthread_mutex_unlock(&s->lock);
    return more;
}

/* The next event of w's batch not begun: true with *token, or false when
 * the batch is done (or was handed over, P5). */
static bool next_event(struct pg_worker *w, uint64_t *token)
{
    pthread_mutex_lock(&w->lock);
    bool some = w->batch_at < w->batch_n;
    if (some)
        *token = w->batch[w->batch_at++];
    pthread_mutex_unlock(&w->lock);
    return some;
}

/* Fills w's batch: events handed over from busy workers first (P5), else
 * those epoll_wait gives within a second. */
static void fill_batch(struct pg_worker *w)
{
    struct pg_server *s = w->srv;
    uint64_t got[BATCH];
    int n = 0;
    if (atomic_load(&s->nhanded_hint) > 0) {
        pthread_mutex_lock(&s->lock);
        while (n < BATCH && s->nhanded > 0)
            got[n++] = s->handed[--s->nhanded];
        atomic_store(&s->nhanded_hint, s->nhanded);
        pthread_mutex_unlock(&s->lock);
    }
    if (n == 0) {
        struct epoll_event ev[BATCH];
        n = epoll_wait(s->epfd, ev, BATCH, 1000);
        for (int i = 0; i < n; i++)
            got[i] = ev[i].data.u64;
    }
    pthread_mutex_lock(&w->lock);
    w->batch_at = 0;
    w->batch_n = n > 0 ? n : 0;
    memcpy(w->batch, got, (size_t)w->batch_n * sizeof *got);
    pthread_mutex_unlock(&w->lock);
}

static void *worker_main(void *arg)
{
    struct pg_worker *w = arg;
    struct pg_server *s = w->srv;
    for (;;) {
        uint64_t token;
        while (next_event(w, &token)) {
            if (token == HANDED_TOKEN)
                continue; /* fill_batch takes what was handed over */
            atomic_store(&w->busy_since, mono_ms() | 1);
            take_event(s, &w->msg, token);
            atomic_store(&w->busy_since, 0);
        }
        if (atomic_load(&s->stopping) ? atomic_load(&s->npooled) == 0 : surplus(s, w))
            break;
        fill_batch(w);
    }
    /* The handed_fd edge this worker took may have been the one that was
     * to wake another for events handed over: pass it on. */
    if (atomic_load(&s->nhanded_hint) > 0)
        (void)!eventfd_write(s->handed_fd, 1);
    pthread_mutex_lock(&s->lock);
    if (w->prev)
        w->prev->next = w->next;
    else
        s->workers = w->next;
    if (w->next)
        w->next->prev = w->prev;
    s->nworkers--;
    pthread_cond_broadcast(&s->drained);
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_destroy(&w->lock);
    free(w);
    return NULL;
}

/* Takes the events of busy w's batch it has not begun into s->handed, as
 * many as fit (P5); with s->lock held. Returns how many. */
static int hand_over_batch(struct pg_server *s, struct pg_worker *w)
{
    int moved = 0;
    pthread_mutex_lock(&w->lock);
    int left = w->batch_n - w->batch_at;
    if (left > 0 && s->nhanded + left > s->handed_cap) {
        int cap = s->handed_cap ? s->handed_cap * 2 : 4 * BATCH;
        while (cap < s->nhanded + left)
            cap *= 2;
        uint64_t *p = realloc(s->handed, (size_t)cap * sizeof *p);
        if (p) {
            s->handed = p;
            s->handed_cap = cap;
        }
    }
    while (w->batch_at < w->batch_n && s->nhanded < s->handed_cap) {
        s->handed[s->nhanded++] = w->batch[--w->batch_n];
        moved++;
    }
    pthread_mutex_unlock(&w->lock);
    atomic_store(&s->nhanded_hint, s->nhanded);
    return moved;
}

/* Shuts down pooled connections past their deadline (with s->lock held);
 * the worker that takes the event closes them. */
static void sweep(struct pg_server *s, int64_t now)
{
    for (struct conn_node *k = s->conns; k; k = k->next)
        if (atomic_load(&k->pooled) && atomic_load(&k->deadline) < now) {
            atomic_store(&k->deadline, INT64_MAX);
            shutdown(k->c.fd, SHUT_RDWR);
        }
}

/* The monitor: replaces workers busy past LONG_BUSY_MS (P5), and sweeps
 * timeouts. Ticks every LONG_BUSY_MS while connections are pooled, once a
 * sweep otherwise (woken by the first connection pooled). */
static void *monitor_main(void *arg)
{
    struct pg_server *s = arg;
    int64_t next_sweep = 0;
    while (!atomic_load(&s->stopping)) {
        struct pollfd p = {.fd = s->wake_pipe[0], .events = POLLIN};
        if (poll(&p, 1, atomic_load(&s->npooled) > 0 ? LONG_BUSY_MS : SWEEP_MS) > 0) {
            char drain[64];
            (void)!read(s->wake_pipe[0], drain, sizeof drain);
        }
        int64_t now = mono_ms();
        pthread_mutex_lock(&s->lock);
        int nlong = 0, handed = 0;
        for (struct pg_worker *w = s->workers; w; w = w->next) {
            int64_t since = atomic_load(&w->busy_since);
            if (since && now - since >= LONG_BUSY_MS) {
                nlong++;
                handed += hand_over_batch(s, w);
            }
        }
        atomic_store(&s->nlong, nlong);
        /* One edge wakes one worker waiting in epoll_wait, whose next
         * batch is what was handed over (the worker started below takes it
         * too, first thing). */
        if (handed)
            (void)!eventfd_write(s->handed_fd, 1);
        while (!atomic_load(&s->stopping) && s->nworkers - nlong < s->pool_size &&
               s->nworkers < s->max_workers && start_worker(s, false) == 0)
            ;
        if (now >= next_sweep) {
            sweep(s, now);
            next_sweep = now + SWEEP_MS;
        }
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

/* Hands a connection whose startup is done to the pool: registered once,
 * edge-triggered, its caller still its owner (P1). 0, or -1 (stopping, or
 * epoll refused it: the caller closes). */
static int hand_over(struct conn_node *k)
{
    struct pg_server *s = k->c.srv;
    int flags = fcntl(k->c.fd, F_GETFL);
    if (flags < 0 || fcntl(k->c.fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return -1;
    k->partial_since = k->in_len > k->in_at ? mono_ms() : 0;
    pthread_mutex_lock(&s->lock);
    bool stopping = atomic_load(&s->stopping);
    if (!stopping) {
        atomic_store(&k->pooled, true);
        if (atomic_fetch_add(&s->npooled, 1) == 0)
            (void)!write(s->wake_pipe[1], "w", 1);
    }
    pthread_mutex_unlock(&s->lock);
    if (stopping)
        return -1;
    uint64_t gen = SLOT_GEN(atomic_load(&s->slots[k->slot].state));
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                             .data.u64 = gen << 32 | k->slot};
    return epoll_ctl(s->epfd, EPOLL_CTL_ADD, k->c.fd, &ev);
}

/* A new connection's thread: the startup exchange, blocking on this one
 * client (SCRAM takes several round trips), then the pool's. */
static void *startup_thread(void *arg)
{
    struct conn_node *k = arg;
    if (startup(k) != 0 || hand_over(k) != 0) {
        flush_out(&k->c);
        close_conn(k);
        return NULL;
    }
    /* Still its owner: the bytes that came with the startup packet are
     * answered here, and the slot let go as a worker lets it go (P2). */
    static const struct pg_message none;
    struct pg_message msg = none;
    serve_owned(k->c.srv, &msg, k);
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
        atomic_init(&k->pooled, false);
        atomic_init(&k->deadline, INT64_MAX);
        if (RAND_bytes((unsigned char *)&k->c.secret, sizeof k->c.secret) != 1)
            k->c.secret = (int32_t)mono_ms();
        pthread_mutex_lock(&s->lock);
        if (s->nfree == 0) { /* as many slots as the limit allows connections */
            pthread_mutex_unlock(&s->lock);
            free(k);
            refuse(fd);
            continue;
        }
        k->slot = s->free_slots[--s->nfree];
        s->slots[k->slot].conn = k; /* owned by this connection's startup (P1) */
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
        if (pthread_create(&t, &attr, startup_thread, k) != 0) {
            int dup_fd = dup(fd); /* close_conn closes fd; refuse answers on the copy */
            close_conn(k);
            if (dup_fd >= 0)
                refuse(dup_fd);
        }
        pthread_attr_destroy(&attr);
    }
    return NULL;
}

/* ---- Start and stop ---------------------------------------------------------------------- */

int pg_server_port(const struct pg_server *s) { return s->port; }
const char *pg_server_addr(const struct pg_server *s) { return s->addr; }

static void close_pair(int p[2])
{
    for (int i = 0; i < 2; i++)
        if (p[i] >= 0)
            close(p[i]);
}

void pg_server_stop(struct pg_server *s)
{
    if (!s)
        return;
    atomic_store(&s->stopping, true);
    if (s->accepting) {
        (void)!write(s->stop_pipe[1], "x", 1);
        pthread_join(s->acceptor, NULL);
    }
    if (s->monitoring) {
        (void)!write(s->wake_pipe[1], "x", 1);
        pthread_join(s->monitor, NULL);
    }
    /* Startup threads see stopping within a second (their recvs wake at
     * least that often); pooled connections get the shutdown's event, and
     * the workers close them and then leave. */
    pthread_mutex_lock(&s->lock);
    for (struct conn_node *k = s->conns; k; k = k->next)
        shutdown(k->c.fd, SHUT_RDWR);
    int64_t until = mono_ms() + STOP_GRACE_MS;
    while ((s->nconns > 0 || s->nworkers > 0) && mono_ms() < until) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&s->drained, &s->lock, &ts);
    }
    int left = s->nconns + s->nworkers;
    pthread_mutex_unlock(&s->lock);
    if (left > 0)
        return; /* threads still hold it: leak it rather than free it under them */
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    if (s->epfd >= 0)
        close(s->epfd);
    if (s->handed_fd >= 0)
        close(s->handed_fd);
    free(s->slots);
    free(s->free_slots);
    free(s->handed);
    close_pair(s->stop_pipe);
    close_pair(s->wake_pipe);
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
    s->listen_fd = s->epfd = s->handed_fd = -1;
    s->stop_pipe[0] = s->stop_pipe[1] = s->wake_pipe[0] = s->wake_pipe[1] = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->drained, NULL);
    atomic_init(&s->stopping, false);
    atomic_init(&s->npooled, 0);
    atomic_init(&s->nlong, 0);
    atomic_init(&s->nhanded_hint, 0);
    if (!s->o.startup_timeout_s)
        s->o.startup_timeout_s = 30;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    s->pool_size = o->workers > 0 ? o->workers : cpus > 0 ? (int)cpus : 1;
    /* Every connection may hold a worker at once (each busy on its ask),
     * and the pool stays whole beside them: as many threads as a thread
     * per connection would have, never more. */
    s->max_workers = s->pool_size + (o->connection_limit > 0 ? o->connection_limit : 1);
    if (o->token) {
        s->token = strdup(o->token);
        if (!s->token || pg_scram_secret_init(&s->scram, s->token)) {
            snprintf(err, errlen, "cannot derive the SCRAM secret from the token");
            goto fail;
        }
    }
    if (pipe2(s->stop_pipe, O_CLOEXEC) != 0 || pipe2(s->wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    uint32_t nslots = o->connection_limit > 0 ? (uint32_t)o->connection_limit : 1;
    s->slots = calloc(nslots, sizeof *s->slots);
    s->free_slots = calloc(nslots, sizeof *s->free_slots);
    if (!s->slots || !s->free_slots) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i < nslots; i++) {
        atomic_init(&s->slots[i].state, 1u << 2 | SLOT_BUSY); /* free: owned by none */
        s->free_slots[s->nfree++] = nslots - 1 - i;
    }
    if ((s->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        snprintf(err, errlen, "epoll_create1: %s", strerror(errno));
        goto fail;
    }
    if ((s->handed_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
        goto fail;
    }
    struct epoll_event handed = {.events = EPOLLIN | EPOLLET, .data.u64 = HANDED_TOKEN};
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->handed_fd, &handed) != 0) {
        snprintf(err, errlen, "epoll_ctl: %s", strerror(errno));
        goto fail;
    }
    pthread_mutex_lock(&s->lock);
    int started = 0;
    while (started < s->pool_size && start_worker(s, true) == 0)
        started++;
    pthread_mutex_unlock(&s->lock);
    if (started < s->pool_size) {
        snprintf(err, errlen, "cannot start the PostgreSQL worker threads");
        goto fail;
    }
    if (pthread_create(&s->monitor, NULL, monitor_main, s) != 0) {
        snprintf(err, errlen, "cannot start the PostgreSQL monitor thread");
        goto fail;
    }
    s->monitoring = true;
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
