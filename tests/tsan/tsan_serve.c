/* tsan_serve.c -- straum-serve's threads under ThreadSanitizer: MHD's
 * worker pool answering asks, /metrics (its atomic counters read while
 * they are bumped), probes and bad bodies from eight clients at once, the
 * request-deadline sweeper running beside them. Every answer is checked;
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

int main(void)
{
    char dir[64];
    tsan_make_store(dir, NROWS);
    struct serve_options o = {.store_dir = dir, .listen = "127.0.0.1:0", .threads = 4,
                              .max_lag_us = 0, .quiet = true};
    char err[600];
    struct serve_server *s = serve_start(&o, err, sizeof err);
    if (!s)
        tsan_fail("%s", err);
    port = serve_port(s);
    pthread_t t[CLIENTS];
    for (long i = 0; i < CLIENTS; i++)
        pthread_create(&t[i], NULL, client, (void *)i);
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(t[i], NULL);
    serve_stop(s);
    tsan_remove_store(dir);
    if (atomic_load(&wrong))
        tsan_fail("%d wrong answers", atomic_load(&wrong));
    printf("tsan_serve: %d requests from %d clients on 4 worker threads, all right\n",
           CLIENTS * REQUESTS, CLIENTS);
    return 0;
}
