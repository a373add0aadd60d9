/* serve_test.c -- the straum-serve tests' taxi store, in-process server and
 * plain-socket HTTP/1.1 client (see serve_test.h). */
#include "tests/serve/serve_test.h"

#include "serve/serve.h"
#include "tests/unit/source_file.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- The store ------------------------------------------------------------------ */

struct trip fixture_trip(int i) { return taxi_store_trip(i, FIXTURE_START_US, FIXTURE_DAYS); }

int64_t fixture_count(int payment, int64_t from_us, int64_t to_us)
{
    int64_t n = 0;
    for (int i = 0; i < FIXTURE_TRIPS; i++) {
        struct trip t = fixture_trip(i);
        if ((payment < 0 || t.payment == payment) && t.pickup_at >= from_us && t.pickup_at < to_us)
            n++;
    }
    return n;
}

void fixture_apply_trip(struct store *s, const struct trip *t, int sign)
{
    struct store_error err;
    cr_assert_eq(taxi_store_apply(s, t, sign, &err), 0, "%s", err.message);
}

void fixture_make_store(char dir[64], const struct store_position *pos)
{
    strcpy(dir, "/tmp/straum-serve-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    char *views_text = read_source_file("bench/taxi_views.sql");
    cr_assert_not_null(views_text, "bench/taxi_views.sql under %s", STRAUM_SOURCE_DIR);
    struct store_error err;
    cr_assert_eq(taxi_store_make(dir, views_text, FIXTURE_TRIPS, FIXTURE_START_US, FIXTURE_DAYS,
                                 pos, &err),
                 0, "%s", err.message);
    free(views_text);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void fixture_remove_store(const char *dir) { nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS); }

struct serve_server *fixture_serve(struct serve_options *o)
{
    if (!o->listen)
        o->listen = "127.0.0.1:0";
    o->quiet = true;
    if (o->threads == 0)
        o->threads = 2;
    char err[600];
    struct serve_server *s = serve_start(o, err, sizeof err);
    cr_assert_not_null(s, "serve_start: %s", err);
    return s;
}

/* ---- The HTTP client ------------------------------------------------------------- */

int hc_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

bool hc_listening(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool up = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0)
        close(fd);
    return up;
}

int hc_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

bool hc_send(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads into *buf until pred says enough or the peer closes; false on
 * timeout. */
struct rbuf {
    char *data;
    size_t len, cap;
    bool eof;
};

static bool fill(int fd, struct rbuf *b, int64_t deadline)
{
    if (b->eof)
        return false;
    if (b->len + 4096 + 1 > b->cap) {
        b->cap = b->cap ? b->cap * 2 : 8192;
        b->data = realloc(b->data, b->cap);
    }
    int left = (int)(deadline - now_ms());
    if (left <= 0)
        return false;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, left) <= 0)
        return false;
    ssize_t n = recv(fd, b->data + b->len, b->cap - b->len - 1, 0);
    if (n <= 0) {
        b->eof = true;
        return false;
    }
    b->len += (size_t)n;
    b->data[b->len] = '\0';
    return true;
}

const char *hc_header(const struct hc_response *r, const char *name, char *buf, size_t len)
{
    if (!r->headers)
        return NULL;
    size_t nlen = strlen(name);
    for (const char *line = strstr(r->headers, "\r\n"); line; line = strstr(line + 2, "\r\n")) {
        const char *h = line + 2;
        if (strncasecmp(h, name, nlen) == 0 && h[nlen] == ':') {
            h += nlen + 1;
            while (*h == ' ')
                h++;
            const char *end = strstr(h, "\r\n");
            size_t n = end ? (size_t)(end - h) : strlen(h);
            if (n >= len)
                n = len - 1;
            memcpy(buf, h, n);
            buf[n] = '\0';
            return buf;
        }
    }
    return NULL;
}

void hc_read(int fd, struct hc_response *r, int timeout_ms)
{
    memset(r, 0, sizeof *r);
    int64_t deadline = now_ms() + timeout_ms;
    struct rbuf b = {0};
    char *end;
    for (;;) {
        /* 1xx interim responses (100 Continue) are skipped. */
        while (!(b.data && (end = strstr(b.data, "\r\n\r\n"))))
            if (!fill(fd, &b, deadline)) {
                r->closed = b.eof;
                free(b.data);
                return;
            }
        if (strncmp(b.data, "HTTP/1.1 1", 10) != 0)
            break;
        size_t skip = (size_t)(end + 4 - b.data);
        memmove(b.data, b.data + skip, b.len - skip + 1);
        b.len -= skip;
    }
    size_t hlen = (size_t)(end - b.data) + 2;
    r->headers = strndup(b.data, hlen);
    sscanf(b.data, "HTTP/1.%*d %d", &r->status);
    char v[64];
    size_t have = b.len - hlen - 2;
    const char *body = end + 4;
    if (hc_header(r, "Transfer-Encoding", v, sizeof v) && strcasestr(v, "chunked")) {
        /* Chunks decoded into a body of their own; a cut stream leaves
         * what arrived, so the caller's checks fail on it. */
        size_t off = (size_t)(body - b.data), n = 0, cap = 1;
        char *out = malloc(cap);
        for (;;) {
            char *line;
            while (!(line = strstr(b.data + off, "\r\n")))
                if (!fill(fd, &b, deadline))
                    goto cut;
            size_t size = strtoull(b.data + off, NULL, 16);
            size_t at = (size_t)(line - b.data) + 2;
            while (b.len < at + size + 2)
                if (!fill(fd, &b, deadline))
                    goto cut;
            if (size == 0)
                break;
            if (n + size + 1 > cap) {
                while (n + size + 1 > cap)
                    cap *= 2;
                out = realloc(out, cap);
            }
            memcpy(out + n, b.data + at, size);
            n += size;
            off = at + size + 2;
        }
    cut:
        out[n] = '\0';
        r->body = out;
        r->body_len = n;
        if (hc_header(r, "Connection", v, sizeof v) && strcasecmp(v, "close") == 0)
            r->closed = true;
        free(b.data);
        return;
    }
    if (hc_header(r, "Content-Length", v, sizeof v)) {
        size_t want = strtoull(v, NULL, 10);
        while (have < want) {
            size_t off = (size_t)(body - b.data);
            if (!fill(fd, &b, deadline))
                break;
            body = b.data + off;
            have = b.len - off;
        }
        r->body_len = have < want ? have : want;
    } else {
        /* No length: the body runs to the close (or is empty for 1xx/304). */
        while (fill(fd, &b, deadline))
            ;
        body = b.data + hlen + 2;
        r->body_len = b.len - hlen - 2;
    }
    r->body = strndup(body, r->body_len);
    if (hc_header(r, "Connection", v, sizeof v) && strcasecmp(v, "close") == 0)
        r->closed = true;
    free(b.data);
}

void hc_request(int fd, const char *method, const char *path, const char *extra,
                const char *body, size_t body_len, struct hc_response *r)
{
    hc_request_within(fd, method, path, extra, body, body_len, 10000, r);
}

void hc_request_within(int fd, const char *method, const char *path, const char *extra,
                       const char *body, size_t body_len, int timeout_ms,
                       struct hc_response *r)
{
    char head[16384];
    int n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s", method, path,
                     extra ? extra : "");
    if (body)
        n += snprintf(head + n, sizeof head - (size_t)n,
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n", body_len);
    n += snprintf(head + n, sizeof head - (size_t)n, "\r\n");
    cr_assert_lt((size_t)n, sizeof head);
    bool sent = hc_send(fd, head, (size_t)n) && (!body || hc_send(fd, body, body_len));
    hc_read(fd, r, timeout_ms);
    if (!sent && r->status == 0)
        r->closed = true;
}

void hc_once(int port, const char *method, const char *path, const char *extra,
             const char *body, struct hc_response *r)
{
    int fd = hc_connect(port);
    hc_request(fd, method, path, extra, body, body ? strlen(body) : 0, r);
    close(fd);
}

void hc_free(struct hc_response *r)
{
    free(r->headers);
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* ---- Steady clients ---------------------------------------------------------------- */

const char STEADY_ASK[] =
    "{\"ask\": \"SELECT payment_type, trips FROM trips WHERE bucket >= $1 AND bucket < $2 "
    "GROUP BY payment_type ORDER BY payment_type\", "
    "\"params\": [\"2024-01-01 00:00:00+00\", \"2024-01-08 00:00:00+00\"]}";

static void *steady_asker(void *arg)
{
    struct steady *st = arg;
    int fd = hc_connect(st->port);
    while (!atomic_load(&st->stop)) {
        struct hc_response r;
        hc_request(fd, "POST", "/ask", NULL, STEADY_ASK, strlen(STEADY_ASK), &r);
        bool ok = r.status == 200 && strstr(r.body, "\"rows\":[[0,");
        hc_free(&r);
        atomic_fetch_add(ok ? &st->answers : &st->wrong, 1);
        if (!ok) { /* a fresh connection, so one failure is not all of them */
            close(fd);
            fd = hc_connect(st->port);
        }
    }
    close(fd);
    return NULL;
}

void steady_start(struct steady *st, int port)
{
    st->port = port;
    atomic_init(&st->stop, false);
    atomic_init(&st->answers, 0);
    atomic_init(&st->wrong, 0);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&st->threads[i], NULL, steady_asker, st), 0);
}

void steady_stop(struct steady *st)
{
    atomic_store(&st->stop, true);
    for (int i = 0; i < 4; i++)
        pthread_join(st->threads[i], NULL);
    cr_assert_eq(atomic_load(&st->wrong), 0, "%d other asks were not answered right",
                 atomic_load(&st->wrong));
    cr_assert_gt(atomic_load(&st->answers), 0);
}

/* ---- The server as a process ------------------------------------------------- */

#ifdef STRAUM_SERVE_BIN
pid_t fixture_spawn_serve(const char *store, int port)
{
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        execl(STRAUM_SERVE_BIN, STRAUM_SERVE_BIN, "--store", store, "--listen", listen,
              "--threads", "2", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500; i++) { /* until it answers */
        if (hc_listening(port)) {
            struct hc_response r;
            hc_once(port, "GET", "/healthz", NULL, NULL, &r);
            int status = r.status;
            hc_free(&r);
            if (status == 200)
                return pid;
        }
        usleep(20000);
    }
    cr_assert_fail("straum-serve on port %d did not come up", port);
    return pid;
}
#endif
