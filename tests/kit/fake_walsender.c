/* fake_walsender.c -- see fake_walsender.h. */
#include "tests/kit/fake_walsender.h"

#include "base/bytes.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Checks: the thread aborts on a broken exchange (Criterion's asserts
 * belong to a test's own thread; TSan programs have none). */
#define CHECK(c)                                                                          \
    do {                                                                                  \
        if (!(c)) {                                                                       \
            fprintf(stderr, "walsender: %s failed\n", #c);                                \
            abort();                                                                      \
        }                                                                                 \
    } while (0)
#define CHECK_EQ(a, b) CHECK((a) == (b))


size_t fake_walsender_frame_len(const struct fake_walsender *w, int i)
{
    return w->frame_bytes ? w->frame_bytes : 5 + (size_t)(i * 7919 % 300);
}

/* Frame i's payload: its number, then bytes that follow from it. */
void fake_walsender_frame_fill(unsigned char *p, size_t len, int i)
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

/* Reads what the client sent since last time without waiting: each
 * CopyData message must be the 16 bytes receiver_send was given. */
static void drain_client(struct fake_walsender *w, int fd, unsigned char *in, size_t *have)
{
    for (;;) {
        ssize_t got = recv(fd, in + *have, 4096 - *have, MSG_DONTWAIT);
        if (got <= 0)
            break;
        *have += (size_t)got;
        while (*have >= 5 && *have >= 1 + be_load_u32(in + 1)) {
            size_t n = 1 + be_load_u32(in + 1);
            if (in[0] == 'd') {
                if (n != 5 + 16 || memcmp(in + 5, FAKE_FEEDBACK, 16))
                    atomic_store(&w->bad_feedback, true);
                atomic_fetch_add(&w->feedback, 1);
            }
            memmove(in, in + n, *have - n);
            *have -= n;
        }
    }
}

/* Sends all of buf, reading the client meanwhile; false once quitting. */
static bool send_all(struct fake_walsender *w, int fd, const unsigned char *buf, size_t n,
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

static void *fake_walsender_run(void *arg)
{
    struct fake_walsender *w = arg;
    int fd = accept(w->listen_fd, NULL, NULL);
    CHECK(fd >= 0);
    int one = 1; /* as PostgreSQL's backends: each send goes out at once */
    CHECK(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0);
    if (w->sndbuf)
        CHECK(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &w->sndbuf, sizeof w->sndbuf) == 0);
    unsigned char hdr[5], *body = malloc(1 << 16);
    /* SSLRequest / GSSENCRequest answered 'N', then the startup packet. */
    for (;;) {
        CHECK(read_full(fd, hdr, 4));
        uint32_t n = be_load_u32(hdr);
        CHECK(n >= 8 && n < (1u << 16));
        CHECK(read_full(fd, body, n - 4));
        uint32_t code = be_load_u32(body);
        if (code != 80877103 && code != 80877104)
            break;
        CHECK_EQ(send(fd, "N", 1, MSG_NOSIGNAL), 1);
    }
    static const unsigned char hello[] = {'R', 0, 0, 0, 8, 0, 0, 0, 0, /* AuthenticationOk */
                                          'Z', 0, 0, 0, 5, 'I'};      /* ReadyForQuery */
    CHECK_EQ(send(fd, hello, sizeof hello, MSG_NOSIGNAL), (ssize_t)sizeof hello);
    CHECK(read_full(fd, hdr, 5));
    CHECK_EQ(hdr[0], 'Q');
    CHECK(read_full(fd, body, be_load_u32(hdr + 1) - 4));
    CHECK(strstr((char *)body, "START_REPLICATION"));
    static const unsigned char copy_both[] = {'W', 0, 0, 0, 7, 0, 0, 0};
    CHECK_EQ(send(fd, copy_both, sizeof copy_both, MSG_NOSIGNAL), (ssize_t)sizeof copy_both);

    unsigned char in[4096];
    size_t have = 0;
    bool ok = true;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (int i = 0; ok && i < w->nframes; i++) {
        for (struct timespec now; w->pace_us > 0;) { /* the frame's time */
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec > next.tv_sec ||
                (now.tv_sec == next.tv_sec && now.tv_nsec >= next.tv_nsec))
                break;
        }
        next.tv_nsec += (long)w->pace_us * 1000;
        next.tv_sec += next.tv_nsec / 1000000000;
        next.tv_nsec %= 1000000000;
        size_t len = fake_walsender_frame_len(w, i);
        unsigned char *f = body;
        if (5 + len > (1 << 16))
            f = malloc(5 + len);
        f[0] = 'd';
        be_store_u32(f + 1, (uint32_t)(4 + len));
        fake_walsender_frame_fill(f + 5, len, i);
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

void fake_walsender_start(struct fake_walsender *w)
{
    w->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    CHECK(bind(w->listen_fd, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(w->listen_fd, 1) == 0);
    CHECK(getsockname(w->listen_fd, (struct sockaddr *)&a, &al) == 0);
    w->port = ntohs(a.sin_port);
    CHECK(pthread_create(&w->thread, NULL, fake_walsender_run, w) == 0);
}

void fake_walsender_join(struct fake_walsender *w)
{
    atomic_store(&w->quit, true);
    pthread_join(w->thread, NULL);
    close(w->listen_fd);
}

PGconn *fake_walsender_connect(const struct fake_walsender *w, char *err, size_t errlen)
{
    char conninfo[200];
    snprintf(conninfo, sizeof conninfo,
             "host=127.0.0.1 port=%d user=u dbname=d replication=database sslmode=disable "
             "gssencmode=disable connect_timeout=10",
             w->port);
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) == CONNECTION_OK) {
        PGresult *r = PQexec(c, "START_REPLICATION SLOT s LOGICAL 0/0");
        bool ok = PQresultStatus(r) == PGRES_COPY_BOTH;
        PQclear(r);
        if (ok)
            return c;
    }
    snprintf(err, errlen, "%s", PQerrorMessage(c));
    PQfinish(c);
    return NULL;
}
