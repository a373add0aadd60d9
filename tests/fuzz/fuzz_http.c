/* fuzz_http.c -- libFuzzer target for straum-serve's HTTP request path
 * (serve/http.c on libmicrohttpd, then request.c and the engine).
 *
 * Design: the real server runs in-process, started once (serve_start, one
 * MHD polling thread, on 127.0.0.1 and a free port) over the small taxi
 * store of fuzz_store.c, with a bearer token, --max-body 2048 and
 * --max-groups 50, so that the token check, the 413 paths (declared and
 * chunked) and the engine's 422 are all a few bytes away. Each input is the
 * raw bytes a client sends on a fresh TCP connection. Raw bytes rather than
 * a structured request so that everything on the way is fuzzed together:
 * the front gate's look at the request line (serve/gate.c), MHD's parsing
 * of the request line, headers, Content-Length and chunked
 * bodies, pipelined keep-alive requests, and then our routing, method and
 * token checks, body accumulation and limits, and the /ask body and ask
 * themselves.
 *
 * When is a reply over? The server closes some connections; a keep-alive
 * one it keeps, and an incomplete request waits for bytes that never come.
 * Half-closing our side does not help: MHD 0.9.75 in epoll mode notices the
 * EOF only at its connection timeout. Timeouts would cost seconds per
 * input, so the harness instead watches the server's one MHD thread: once
 * it sleeps in epoll_wait (its wait channel in /proc) and no reply bytes
 * are pending, it has answered everything it can, and the harness resets
 * the connection. That keeps each input deterministic and well under a
 * millisecond. (A socket pair handed to MHD_add_connection would skip the
 * kernel's TCP work, but would need a test hook in http.c and skip the
 * accept path.)
 *
 * Coverage of the server thread counts for the input (libFuzzer's counters
 * are process-wide) because the harness waits until the server has closed
 * the connection or gone idle again after the reset, by which time MHD has
 * called on_request and on_completed.
 *
 * Checks on the reply, a sequence of responses (pipelining):
 *   - each starts with a well-formed status line "HTTP/1.x NNN ";
 *   - never 500 (the store is intact; the only 500s are corrupt blocks and
 *     out of memory) nor 503 (no --max-lag, no ask timeout);
 *   - headers end; a Content-Length or chunked body is complete when the
 *     server closed cleanly;
 *   - a JSON body parses, and an error body (status >= 400) is
 *     {"error": {"code": "...", "message": "..."}};
 *   - the server closes, or goes idle waiting for more, within 10 s (a hang
 *     is a finding).
 * ASan/UBSan watch the server thread too: a fault there aborts the run.
 *
 * FUZZ_HTTP_VERBOSE=1 prints each reply (for reproducing a finding). */
#include "serve/serve.h"
#include "tests/fuzz/fuzz_store.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FUZZ_TOKEN "fuzz-token-7f3a"
#define REPLY_DEADLINE_MS 10000

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static bool server_idle(void);

static struct serve_server *server;
static int port;
static bool verbose;
static char token_dir[256];

/* The server's threads that read requests: the front gate ("straum-gate",
 * which holds a connection until its head has arrived) and MHD's (named
 * "MHD-..." by libmicrohttpd). serve_start starts others, such as a
 * sweeper, that never read a request. */
static pid_t mhd_tids[8];
static int nmhd_tids;

/* Lists the threads that read requests afresh; true once both the gate and
 * an MHD thread have named themselves. */
static bool find_mhd_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        fuzz_fail("cannot list /proc/self/task: %s", strerror(errno));
    struct dirent *e;
    bool gate = false, mhd = false;
    nmhd_tids = 0;
    while ((e = readdir(d)) && nmhd_tids < 8) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "re");
        if (f) {
            if (!fgets(comm, sizeof comm, f))
                comm[0] = '\0';
            fclose(f);
        }
        bool is_mhd = strncmp(comm, "MHD-", 4) == 0;
        bool is_gate = strncmp(comm, "straum-gate", 11) == 0;
        if (is_mhd || is_gate)
            mhd_tids[nmhd_tids++] = (pid_t)atoi(e->d_name);
        mhd |= is_mhd;
        gate |= is_gate;
    }
    closedir(d);
    return gate && mhd;
}

static void stop_server(void)
{
    serve_stop(server);
    server = NULL;
    if (token_dir[0])
        fuzz_remove_tree(token_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    verbose = getenv("FUZZ_HTTP_VERBOSE") != NULL;
    const char *dir = fuzz_store_make(400); /* dense and sparse percentiles */

    const char *tmp = getenv("TMPDIR");
    snprintf(token_dir, sizeof token_dir, "%s/straum-fuzz-token-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(token_dir))
        fuzz_fail("mkdtemp %s failed", token_dir);
    char token_file[300];
    snprintf(token_file, sizeof token_file, "%s/token", token_dir);
    FILE *f = fopen(token_file, "w");
    if (!f || fputs(FUZZ_TOKEN "\n", f) < 0 || fclose(f) != 0 || chmod(token_file, 0600) != 0)
        fuzz_fail("cannot write %s", token_file);

    struct serve_options o = {
        .store_dir = dir,
        .listen = "127.0.0.1:0",
        .threads = 1,
        .token_file = token_file,
        .max_body = 2048,
        .max_groups = 50,
        .connection_timeout_s = 5,
        .quiet = true,
    };
    char err[600];
    server = serve_start(&o, err, sizeof err);
    if (!server)
        fuzz_fail("serve_start: %s", err);
    /* MHD's threads name themselves once running. */
    bool found = false;
    for (int i = 0; i < 1000 && !found; i++) {
        usleep(1000);
        found = find_mhd_threads();
    }
    if (!found)
        fuzz_fail("serve_start started no gate and MHD thread (straum-gate, MHD-*)");
    port = serve_port(server);
    atexit(stop_server);
    /* Idle, before any connection: else /proc hides wait channels here. */
    for (int i = 0; i < 2000 && !server_idle(); i++)
        usleep(1000);
    if (!server_idle())
        fuzz_fail("the server thread never shows epoll_wait as its wait channel in "
                  "/proc/self/task/*/wchan: this harness needs it to see the server idle");
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether every server thread sleeps in epoll_wait: MHD has handled every
 * event so far (in epoll mode it blocks only when no connection has work
 * left) and waits for the client. A thread woken by our bytes is runnable
 * before send() returns, and a runnable thread has no wait channel. */
static bool server_idle(void)
{
    for (int i = 0; i < nmhd_tids; i++) {
        char path[64], wchan[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%d/wchan", (int)mhd_tids[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            fuzz_fail("cannot read %s: %s", path, strerror(errno));
        ssize_t n = read(fd, wchan, sizeof wchan - 1);
        close(fd);
        wchan[n > 0 ? n : 0] = '\0';
        if (!strstr(wchan, "epoll") && !strstr(wchan, "ep_poll"))
            return false;
    }
    return true;
}

struct reply {
    char *data;
    size_t len, cap;
    bool closed; /* the server closed the connection (else it waits for more) */
    bool reset;  /* ... with a reset: what it sent last may be lost */
};

/* Sends the request and reads the reply until the server closes the
 * connection or waits for more bytes with nothing left to send; then
 * resets the connection (no TIME_WAIT, and MHD drops it at once). */
static void exchange(const uint8_t *data, size_t size, struct reply *r)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        fuzz_fail("socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        /* libFuzzer's SIGALRM (-timeout) can interrupt connect, which then
         * goes on in the background: wait for it and take its outcome. */
        int e = errno, soerr = 0;
        socklen_t slen = sizeof soerr;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        if (e == EINTR) {
            while (poll(&p, 1, REPLY_DEADLINE_MS) < 0 && errno == EINTR)
                ;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &slen) != 0)
                soerr = errno;
            e = soerr;
        }
        if (e)
            fuzz_fail("connect to the server: %s", strerror(e));
    }
    /* The server may answer and close before reading everything (a 413 on
     * the headers): a failed send is not a finding, the reply is. */
    for (size_t off = 0; off < size;) {
        ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }

    int64_t deadline = now_ms() + REPLY_DEADLINE_MS;
    for (;;) {
        if (r->len + 4097 > r->cap) {
            r->cap = r->cap ? r->cap * 2 : 16384;
            r->data = realloc(r->data, r->cap);
            if (!r->data)
                fuzz_fail("out of memory");
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        struct timespec wait = {0, 50000}; /* 50 us: the server is in-process */
        int got = ppoll(&p, 1, &wait, NULL);
        if (got < 0 && errno == EINTR)
            continue;
        if (got == 0) {
            /* Nothing to read: done if the server waits for us, and still
             * nothing arrived meanwhile. */
            if (server_idle() && poll(&p, 1, 0) == 0)
                break;
            if (now_ms() > deadline)
                fuzz_fail("the server neither answered nor went idle within %d ms "
                          "(%zu reply bytes so far)", REPLY_DEADLINE_MS, r->len);
            continue;
        }
        ssize_t n = recv(fd, r->data + r->len, r->cap - r->len - 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r->closed = true;
            r->reset = n < 0; /* MHD closed with our bytes unread */
            break;
        }
        r->len += (size_t)n;
    }
    r->data[r->len] = '\0';
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(fd);
    /* Let MHD see the reset and finish the connection (on_completed)
     * within this input. */
    for (int i = 0; i < 20000 && !server_idle(); i++)
        usleep(10);
}

static const char *find(const char *p, const char *end, const char *what)
{
    size_t n = strlen(what);
    for (; p + n <= end; p++)
        if (memcmp(p, what, n) == 0)
            return p;
    return NULL;
}

/* The value of header `name` within [h, end) (the header block), or NULL. */
static const char *header(const char *h, const char *end, const char *name, size_t *len)
{
    size_t n = strlen(name);
    for (const char *line = find(h, end, "\r\n"); line && line + 2 < end;
         line = find(line + 2, end, "\r\n")) {
        const char *p = line + 2;
        if ((size_t)(end - p) > n && strncasecmp(p, name, n) == 0 && p[n] == ':') {
            p += n + 1;
            while (p < end && *p == ' ')
                p++;
            const char *e = find(p, end, "\r\n");
            *len = (size_t)((e ? e : end) - p);
            return p;
        }
    }
    return NULL;
}

static void check_json(int status, const char *body, size_t len, const struct reply *r)
{
    cJSON *j = cJSON_ParseWithLength(body, len);
    if (!j)
        fuzz_fail("status %d with a body that is not JSON:\n%s", status, r->data);
    if (status >= 400) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        if (!cJSON_IsObject(e) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "code")) ||
            !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message")))
            fuzz_fail("status %d without {\"error\": {\"code\", \"message\"}}:\n%s", status,
                      r->data);
    }
    cJSON_Delete(j);
}

/* Walks the responses of a reply; see the top comment for what is checked. */
static void check_reply(const struct reply *r)
{
    const char *p = r->data, *end = r->data + r->len;
    while (p < end) {
        if (end - p < 13 || (memcmp(p, "HTTP/1.1 ", 9) != 0 && memcmp(p, "HTTP/1.0 ", 9) != 0) ||
            p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' ||
            p[11] > '9' || (p[12] != ' ' && p[12] != '\r')) {
            if (r->reset && end - p < 13)
                return; /* cut short by a reset */
            fuzz_fail("malformed status line at reply byte %zu:\n%s", (size_t)(p - r->data),
                      r->data);
        }
        int status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
        if (status == 500 || status == 503)
            fuzz_fail("status %d from an intact store and an unlimited server:\n%s", status,
                      r->data);
        const char *hend = find(p, end, "\r\n\r\n");
        if (!hend) {
            if (r->reset)
                return;
            fuzz_fail("a response's headers never end:\n%s", r->data);
        }
        const char *body = hend + 4;
        size_t vlen;
        bool chunked = false;
        const char *te = header(p, hend + 2, "Transfer-Encoding", &vlen);
        if (te && vlen == 7 && strncasecmp(te, "chunked", 7) == 0)
            chunked = true;
        const char *cl = header(p, hend + 2, "Content-Length", &vlen);
        const char *ct = header(p, hend + 2, "Content-Type", &vlen);
        bool json = ct && vlen >= 16 && strncasecmp(ct, "application/json", 16) == 0;

        /* No body: interim responses, and a HEAD's (next is a status line
         * or the end; no body of ours starts with "HTTP/1."). */
        if (status < 200 || body == end || (end - body >= 7 && memcmp(body, "HTTP/1.", 7) == 0)) {
            p = body;
            continue;
        }
        const char *bstart = body;
        size_t blen = 0;
        char *joined = NULL;
        if (chunked) {
            /* Chunks joined into one buffer for the JSON check. */
            const char *q = body;
            joined = malloc((size_t)(end - body) + 1);
            if (!joined)
                fuzz_fail("out of memory");
            for (;;) {
                const char *eol = find(q, end, "\r\n");
                if (!eol) {
                    free(joined);
                    if (r->reset)
                        return;
                    fuzz_fail("a chunked body is cut short:\n%s", r->data);
                }
                unsigned long n = strtoul(q, NULL, 16);
                q = eol + 2;
                if (n == 0) {
                    const char *tend = find(q - 2, end, "\r\n\r\n");
                    q = tend ? tend + 4 : end;
                    break;
                }
                if (n > (size_t)(end - q) || (size_t)(end - q) - n < 2) {
                    free(joined);
                    if (r->reset)
                        return;
                    fuzz_fail("a chunk is cut short:\n%s", r->data);
                }
                memcpy(joined + blen, q, n);
                blen += n;
                q += n + 2;
            }
            bstart = joined;
            p = q;
        } else if (cl) {
            unsigned long long n = strtoull(cl, NULL, 10);
            if ((unsigned long long)(end - body) < n) {
                if (r->reset)
                    return;
                fuzz_fail("a body is shorter than its Content-Length %llu:\n%s", n, r->data);
            }
            blen = (size_t)n;
            p = body + n;
        } else {
            blen = (size_t)(end - body); /* to the close */
            p = end;
        }
        if (json && blen > 0)
            check_json(status, bstart, blen, r);
        free(joined);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct reply r = {0};
    exchange(data, size, &r);
    if (verbose)
        fprintf(stderr, "---- reply (%zu bytes, %s) ----\n%s\n", r.len,
                r.reset ? "reset" : r.closed ? "closed" : "server idle", r.data);
    check_reply(&r);
    free(r.data);
    return 0;
}
