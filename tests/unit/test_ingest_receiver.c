/* test_ingest_receiver.c -- the replication stream read ahead on a thread
 * of its own (ingest/receiver.c) against a walsender played by this test
 * over loopback (startup, START_REPLICATION answered with CopyBothResponse,
 * then CopyData frames and CopyDone): every frame comes out once, in
 * order, byte for byte, and the stream's end only after them; feedback
 * sent from the follower's side while frames pour in reaches the server
 * whole; a follower that takes nothing lets the thread read at most
 * RECEIVER_MAX_BYTES ahead, after which the server is the one waiting; and
 * stopping with frames still queued frees them (ASan's leak check). */
#include "ingest/internal.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- The walsender ---------------------------------------------------------- */

/* The walsender's checks: Criterion's asserts belong to the test's thread. */
#define CHECK(c)                                                                          \
    do {                                                                                  \
        if (!(c)) {                                                                       \
            fprintf(stderr, "walsender: %s failed\n", #c);                                \
            abort();                                                                      \
        }                                                                                 \
    } while (0)
#define CHECK_EQ(a, b) CHECK((a) == (b))

struct walsender {
    int listen_fd, port;
    pthread_t thread;
    int nframes;             /* frames to send, then CopyDone (unless hold) */
    size_t frame_bytes;      /* 0: lengths vary with the frame's number */
    bool hold;               /* after the frames, keep the stream open */
    atomic_size_t sent;      /* frame bytes the kernel took */
    atomic_bool blocked;     /* the last send waited 200 ms for room in vain */
    atomic_int feedback;     /* CopyData messages received from the client */
    atomic_bool bad_feedback;
    atomic_bool quit;
};

static size_t frame_len(const struct walsender *w, int i)
{
    return w->frame_bytes ? w->frame_bytes : 5 + (size_t)(i * 7919 % 300);
}

/* Frame i's payload: its number, then bytes that follow from it. */
static void frame_fill(unsigned char *p, size_t len, int i)
{
    memcpy(p, &i, sizeof i);
    for (size_t k = sizeof i; k < len; k++)
        p[k] = (unsigned char)(i * 31 + k);
}

static bool read_full(int fd, void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n) {
        ssize_t got = recv(fd, p, n, 0);
        if (got <= 0)
            return false;
        p += got;
        n -= (size_t)got;
    }
    return true;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Reads what the client sent since last time without waiting: each
 * CopyData message must be the 16 bytes receiver_send was given. */
static void drain_client(struct walsender *w, int fd, unsigned char *in, size_t *have)
{
    for (;;) {
        ssize_t got = recv(fd, in + *have, 4096 - *have, MSG_DONTWAIT);
        if (got <= 0)
            break;
        *have += (size_t)got;
        while (*have >= 5 && *have >= 1 + be32(in + 1)) {
            size_t n = 1 + be32(in + 1);
            if (in[0] == 'd') {
                if (n != 5 + 16 || memcmp(in + 5, "feedback-message", 16))
                    atomic_store(&w->bad_feedback, true);
                atomic_fetch_add(&w->feedback, 1);
            }
            memmove(in, in + n, *have - n);
            *have -= n;
        }
    }
}

/* Sends all of buf, reading the client meanwhile; false once quitting. */
static bool send_all(struct walsender *w, int fd, const unsigned char *buf, size_t n,
                     unsigned char *in, size_t *have)
{
    while (n) {
        drain_client(w, fd, in, have);
        ssize_t put = send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (put > 0) {
            buf += put;
            n -= (size_t)put;
            atomic_store(&w->blocked, false);
            continue;
        }
        if (put < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return false;
        if (atomic_load(&w->quit))
            return false;
        struct pollfd p = {fd, POLLOUT | POLLIN, 0};
        if (poll(&p, 1, 200) == 0)
            atomic_store(&w->blocked, true);
    }
    return true;
}

static void *walsender_run(void *arg)
{
    struct walsender *w = arg;
    int fd = accept(w->listen_fd, NULL, NULL);
    CHECK(fd >= 0);
    unsigned char hdr[5], *body = malloc(1 << 16);
    /* SSLRequest / GSSENCRequest answered 'N', then the startup packet. */
    for (;;) {
        CHECK(read_full(fd, hdr, 4));
        uint32_t n = be32(hdr);
        CHECK(n >= 8 && n < (1u << 16));
        CHECK(read_full(fd, body, n - 4));
        uint32_t code = be32(body);
        if (code != 80877103 && code != 80877104)
            break;
        CHECK_EQ(send(fd, "N", 1, MSG_NOSIGNAL), 1);
    }
    static const unsigned char hello[] = {'R', 0, 0, 0, 8, 0, 0, 0, 0, /* AuthenticationOk */
                                          'Z', 0, 0, 0, 5, 'I'};      /* ReadyForQuery */
    CHECK_EQ(send(fd, hello, sizeof hello, MSG_NOSIGNAL), (ssize_t)sizeof hello);
    CHECK(read_full(fd, hdr, 5));
    CHECK_EQ(hdr[0], 'Q');
    CHECK(read_full(fd, body, be32(hdr + 1) - 4));
    CHECK(strstr((char *)body, "START_REPLICATION"));
    static const unsigned char copy_both[] = {'W', 0, 0, 0, 7, 0, 0, 0};
    CHECK_EQ(send(fd, copy_both, sizeof copy_both, MSG_NOSIGNAL), (ssize_t)sizeof copy_both);

    unsigned char in[4096];
    size_t have = 0;
    bool ok = true;
    for (int i = 0; ok && i < w->nframes; i++) {
        size_t len = frame_len(w, i);
        unsigned char *f = body;
        if (5 + len > (1 << 16))
            f = malloc(5 + len);
        f[0] = 'd';
        put_be32(f + 1, (uint32_t)(4 + len));
        frame_fill(f + 5, len, i);
        ok = send_all(w, fd, f, 5 + len, in, &have);
        if (ok)
            atomic_fetch_add(&w->sent, len);
        if (f != body)
            free(f);
    }
    static const unsigned char done[] = {'c', 0, 0, 0, 4};
    if (ok && !w->hold)
        ok = send_all(w, fd, done, sizeof done, in, &have);
    /* Reads feedback until the client closes (what it sent before comes
     * first), or until the test quits with nothing left to read. */
    while (ok) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 50) > 0) {
            char probe;
            if (recv(fd, &probe, 1, MSG_PEEK | MSG_DONTWAIT) <= 0)
                break;
            drain_client(w, fd, in, &have);
        } else if (atomic_load(&w->quit)) {
            break;
        }
    }
    free(body);
    close(fd);
    return NULL;
}

static void walsender_start(struct walsender *w)
{
    w->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    cr_assert_eq(bind(w->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(w->listen_fd, 1), 0);
    cr_assert_eq(getsockname(w->listen_fd, (struct sockaddr *)&a, &al), 0);
    w->port = ntohs(a.sin_port);
    cr_assert_eq(pthread_create(&w->thread, NULL, walsender_run, w), 0);
}

static void walsender_join(struct walsender *w)
{
    atomic_store(&w->quit, true);
    pthread_join(w->thread, NULL);
    close(w->listen_fd);
}

/* A replication connection in COPY BOTH mode on the walsender. */
static PGconn *replicate(const struct walsender *w)
{
    char conninfo[200];
    snprintf(conninfo, sizeof conninfo,
             "host=127.0.0.1 port=%d user=u dbname=d replication=database sslmode=disable "
             "gssencmode=disable connect_timeout=10",
             w->port);
    PGconn *c = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    PGresult *r = PQexec(c, "START_REPLICATION SLOT s LOGICAL 0/0");
    cr_assert_eq(PQresultStatus(r), PGRES_COPY_BOTH, "%s", PQerrorMessage(c));
    PQclear(r);
    return c;
}

/* Takes frames until the end: each the next in order, byte for byte. */
static int take_all(struct receiver *rx, const struct walsender *w, int from, bool send_feedback)
{
    char err[600];
    int i = from;
    for (;;) {
        char *buf;
        size_t len;
        int rc = receiver_next(rx, 1000, &buf, &len, err, sizeof err);
        if (rc < 0)
            break;
        if (rc == 0)
            continue;
        cr_assert_lt(i, w->nframes, "a frame past the last one sent");
        cr_assert_eq(len, frame_len(w, i), "frame %d", i);
        unsigned char *want = malloc(len);
        frame_fill(want, len, i);
        cr_assert(memcmp(buf, want, len) == 0, "frame %d differs", i);
        free(want);
        PQfreemem(buf);
        if (send_feedback && i % 100 == 0)
            cr_assert_eq(receiver_send(rx, "feedback-message", 16, err, sizeof err), 0, "%s",
                         err);
        i++;
    }
    return i;
}

Test(ingest_receiver, frames_come_in_order_then_the_end_and_feedback_goes_out_meanwhile)
{
    struct walsender w = {.nframes = 20000};
    walsender_start(&w);
    PGconn *c = replicate(&w);
    char err[300];
    struct receiver *rx = receiver_start(c, err, sizeof err);
    cr_assert_not_null(rx, "%s", err);
    int got = take_all(rx, &w, 0, true);
    cr_assert_eq(got, w.nframes, "every frame, then the end");
    cr_assert(receiver_ended(rx));
    char *buf;
    size_t len;
    cr_assert_eq(receiver_next(rx, 0, &buf, &len, err, sizeof err), -1, "the end stays");
    receiver_stop(rx);
    PQfinish(c);
    walsender_join(&w);
    cr_assert_eq(atomic_load(&w.feedback), w.nframes / 100);
    cr_assert_not(atomic_load(&w.bad_feedback), "a feedback message arrived cut or mixed");
}

Test(ingest_receiver, reads_at_most_its_bound_ahead_then_the_server_waits, .timeout = 120)
{
    /* 96 MiB in frames of 256 KiB: half as much again as the bound. */
    struct walsender w = {.nframes = 384, .frame_bytes = 256 << 10, .hold = true};
    walsender_start(&w);
    PGconn *c = replicate(&w);
    char err[300];
    struct receiver *rx = receiver_start(c, err, sizeof err);
    cr_assert_not_null(rx, "%s", err);
    /* Nothing taken: the server sends until the thread stops reading and
     * the sockets fill, then waits. */
    while (!atomic_load(&w.blocked) || atomic_load(&w.sent) < RECEIVER_MAX_BYTES) {
        cr_assert_lt(atomic_load(&w.sent), (size_t)w.nframes * w.frame_bytes,
                     "the server sent everything: nothing bounds the thread");
        usleep(1000);
    }
    size_t ahead = atomic_load(&w.sent);
    /* The bound, a frame that crossed it, and what the kernel's and
     * libpq's buffers hold. */
    cr_assert_leq(ahead, RECEIVER_MAX_BYTES + ((size_t)24 << 20), "%zu bytes read ahead",
                  ahead);
    /* Taking frames lets the server go on: all of them arrive in order. */
    char *buf;
    size_t len;
    int i = 0;
    while (i < w.nframes) {
        int rc = receiver_next(rx, 1000, &buf, &len, err, sizeof err);
        cr_assert_geq(rc, 0, "%s", err);
        if (rc == 0)
            continue;
        cr_assert_eq(len, w.frame_bytes);
        int n;
        memcpy(&n, buf, sizeof n);
        cr_assert_eq(n, i);
        PQfreemem(buf);
        i++;
    }
    receiver_stop(rx);
    PQfinish(c);
    walsender_join(&w);
}

Test(ingest_receiver, stopping_with_frames_queued_frees_them)
{
    struct walsender w = {.nframes = 5000, .hold = true};
    walsender_start(&w);
    PGconn *c = replicate(&w);
    char err[300], *buf;
    size_t len;
    struct receiver *rx = receiver_start(c, err, sizeof err);
    cr_assert_not_null(rx, "%s", err);
    int rc;
    while ((rc = receiver_next(rx, 1000, &buf, &len, err, sizeof err)) == 0)
        ;
    cr_assert_eq(rc, 1);
    PQfreemem(buf);
    size_t total = 0;
    for (int i = 0; i < w.nframes; i++)
        total += frame_len(&w, i);
    while (atomic_load(&w.sent) < total)
        usleep(1000); /* every frame in the sockets or the queue, none taken but the first */
    receiver_stop(rx); /* frames still queued, the thread waiting on the socket */
    PQfinish(c);
    walsender_join(&w);
}
