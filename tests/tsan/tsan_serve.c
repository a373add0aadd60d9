/* tsan_serve.c -- straum-serve's threads under ThreadSanitizer: MHD's
 * worker pool answering asks, /metrics (its atomic counters read while
 * they are bumped), probes and bad bodies from eight clients at once, the
 * request-deadline sweeper running beside them; and eight PostgreSQL
 * clients beside them (startup threads, the pool's workers, the monitor
 * replacing busy workers, connections closed). Every answer is checked;
 * exit 0 when all are right, TSan's own exit code (66) on a race. */
#include "serve/serve.h"
#include "tests/tsan/tsan_store.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

enum { NROWS = 20000, CLIENTS = 8, REQUESTS = 250 };

static int port;
static atomic_int wrong;

/* One request on a fresh connection; the status, and the body into buf. */
static int request(const char *method, const char *path, const char *body, char *buf, size_t len)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        tsan_fail("connect");
    char head[512];
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n",
                     method, path, body ? strlen(body) : 0);
    if (send(fd, head, (size_t)n, MSG_NOSIGNAL) != n ||
        (body && send(fd, body, strlen(body), MSG_NOSIGNAL) != (ssize_t)strlen(body)))
        tsan_fail("send");
    size_t got = 0;
    ssize_t r;
    while (got < len - 1 && (r = recv(fd, buf + got, len - 1 - got, 0)) > 0)
        got += (size_t)r;
    buf[got] = '\0';
    close(fd);
    int status = 0;
    sscanf(buf, "HTTP/1.1 %d", &status);
    return status;
}

static void *client(void *arg)
{
    long id = (long)arg;
    static const char ask[] =
        "{\"ask\": \"SELECT n FROM t WHERE bucket >= '2024-01-01 00:00:00+00' AND "
        "bucket < '2024-02-01 00:00:00+00'\"}";
    char want[64];
    snprintf(want, sizeof want, "\"rows\":[[%d]]", NROWS);
    char *buf = malloc(1 << 16);
    for (int i = 0; i < REQUESTS; i++) {
        int kind = (int)((id + i) % 5);
        int status;
        bool ok;
        switch (kind) {
        case 0:
        case 1:
            status = request("POST", "/ask", ask, buf, 1 << 16);
            ok = status == 200 && strstr(buf, want);
            break;
        case 2:
            status = request("GET", "/metrics", NULL, buf, 1 << 16);
            ok = status == 200 && strstr(buf, "straum_asks_total");
            break;
        case 3:
            status = request("POST", "/ask", "{\"ask\": [", buf, 1 << 16);
            ok = status == 400;
            break;
        default:
            status = request("GET", "/healthz", NULL, buf, 1 << 16);
            ok = status == 200;
        }
        if (!ok) {
            fprintf(stderr, "client %ld request %d: status %d\n%.300s\n", id, i, status, buf);
            atomic_fetch_add(&wrong, 1);
        }
    }
    free(buf);
    return NULL;
}

/* ---- The PostgreSQL protocol: its pool of workers, the monitor that
 * replaces busy ones and sweeps timeouts, startup threads and closes. */

static int pg_port;

static void pg_put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

/* Reads messages up to ReadyForQuery; the DataRows' first values,
 * concatenated with ',' into vals. 0, or -1 on an error or a closed socket. */
static int pg_until_ready(int fd, char *vals, size_t len)
{
    size_t nv = 0;
    vals[0] = '\0';
    for (;;) {
        unsigned char h[5];
        size_t got = 0;
        while (got < 5) {
            ssize_t r = recv(fd, h + got, 5 - got, 0);
            if (r <= 0)
                return -1;
            got += (size_t)r;
        }
        uint32_t n = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
        unsigned char body[4096];
        if (n < 4 || n - 4 > sizeof body)
            return -1;
        for (got = 0; got < n - 4;) {
            ssize_t r = recv(fd, body + got, n - 4 - got, 0);
            if (r <= 0)
                return -1;
            got += (size_t)r;
        }
        if (h[0] == 'E')
            return -1;
        if (h[0] == 'D' && n >= 10) {
            uint32_t vl = (uint32_t)body[2] << 24 | (uint32_t)body[3] << 16 |
                          (uint32_t)body[4] << 8 | body[5];
            if (vl < 64 && nv + vl + 2 < len) {
                memcpy(vals + nv, body + 6, vl);
                nv += vl;
                vals[nv++] = ',';
                vals[nv] = '\0';
            }
        }
        if (h[0] == 'Z')
            return 0;
    }
}

static int pg_connect(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)pg_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        tsan_fail("connect");
    static const char params[] = "user\0tsan\0database\0x\0\0";
    unsigned char m[64];
    pg_put32(m, (uint32_t)(8 + sizeof params - 1));
    pg_put32(m + 4, 196608);
    memcpy(m + 8, params, sizeof params - 1);
    char vals[64];
    if (send(fd, m, 8 + sizeof params - 1, MSG_NOSIGNAL) < 0 || pg_until_ready(fd, vals, sizeof vals))
        tsan_fail("PostgreSQL startup");
    return fd;
}

/* A simple query, sent whole or in two sends (split: the second send's
 * edge may come while a worker owns the connection, taking the first). */
static int pg_query(int fd, const char *sql, bool split, char *vals, size_t len)
{
    unsigned char m[4096];
    size_t n = strlen(sql) + 1, at = split ? 9 : 0;
    m[0] = 'Q';
    pg_put32(m + 1, (uint32_t)(4 + n));
    memcpy(m + 5, sql, n);
    if (at && send(fd, m, at, MSG_NOSIGNAL) < 0)
        return -1;
    if (send(fd, m + at, 5 + n - at, MSG_NOSIGNAL) < 0)
        return -1;
    return pg_until_ready(fd, vals, len);
}

/* Kept-alive connections asking (some messages in two sends), a
 * connection per ask (slots reused while events for the closed ones may
 * still be taken), and several asks in one message (long enough under
 * TSan that the monitor replaces the worker busy on it and hands its
 * batch over). */
static void *pg_client(void *arg)
{
    long id = (long)arg;
    static const char ask[] = "SELECT n FROM t WHERE bucket >= '2024-01-01 00:00:00+00' AND "
                              "bucket < '2024-02-01 00:00:00+00'";
    char want[64], many[4096], vals[512], want_many[512] = "";
    snprintf(want, sizeof want, "%d,", NROWS);
    size_t k = 0;
    for (int i = 0; i < 8; i++) {
        k += (size_t)snprintf(many + k, sizeof many - k, "%s;", ask);
        strcat(want_many, want);
    }
    int fd = pg_connect();
    for (int i = 0; i < REQUESTS; i++) {
        int kind = (int)((id + i) % 4);
        bool ok;
        if (kind == 0) {
            int one = pg_connect();
            ok = pg_query(one, ask, false, vals, sizeof vals) == 0 && !strcmp(vals, want);
            close(one);
        } else if (kind == 1) {
            ok = pg_query(fd, many, false, vals, sizeof vals) == 0 && !strcmp(vals, want_many);
        } else {
            ok = pg_query(fd, ask, kind == 3, vals, sizeof vals) == 0 && !strcmp(vals, want);
        }
        if (!ok) {
            fprintf(stderr, "PostgreSQL client %ld ask %d (kind %d): %s\n", id, i, kind, vals);
            atomic_fetch_add(&wrong, 1);
        }
    }
    close(fd);
    return NULL;
}

int main(void)
{
    char dir[64];
    tsan_make_store(dir, NROWS);
    struct serve_options o = {.store_dir = dir, .listen = "127.0.0.1:0", .threads = 4,
                              .max_lag_us = 0, .quiet = true, .pg_listen = "127.0.0.1:0",
                              .pg_idle_timeout_s = 600};
    char err[600];
    struct serve_server *s = serve_start(&o, err, sizeof err);
    if (!s)
        tsan_fail("%s", err);
    port = serve_port(s);
    pg_port = serve_pg_port(s);
    pthread_t t[CLIENTS], pt[CLIENTS];
    for (long i = 0; i < CLIENTS; i++) {
        pthread_create(&t[i], NULL, client, (void *)i);
        pthread_create(&pt[i], NULL, pg_client, (void *)i);
    }
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(t[i], NULL);
        pthread_join(pt[i], NULL);
    }
    serve_stop(s);
    tsan_remove_store(dir);
    if (atomic_load(&wrong))
        tsan_fail("%d wrong answers", atomic_load(&wrong));
    printf("tsan_serve: %d HTTP requests and %d PostgreSQL asks from %d clients each, on 4 "
           "worker threads per protocol, all right\n",
           CLIENTS * REQUESTS, CLIENTS * REQUESTS, CLIENTS);
    return 0;
}
