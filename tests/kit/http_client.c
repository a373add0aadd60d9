/* http_client.c -- the benchmarks' HTTP/1.1 keep-alive client (see
 * http_client.h): plain sockets, TCP_NODELAY, one write per request. */
#include "tests/kit/http_client.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* A server that stops answering fails the request instead of hanging. */
#define HTTP_IO_TIMEOUT_S 120
/* Larger headers than this are not an answer from straum-serve. */
#define HTTP_MAX_HEADER 65536

static void seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int reserve(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 4096;
    while (n < need)
        n *= 2;
    char *p = realloc(*buf, n);
    if (!p)
        return -1;
    *buf = p;
    *cap = n;
    return 0;
}

static void disconnect(struct http_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->in_len = 0;
}

static int connect_now(struct http_client *c, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
    int rc = getaddrinfo(c->host, c->port, &hints, &res);
    if (rc != 0) {
        seterr(err, errlen, "cannot resolve %s: %s", c->host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, saved = 0;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        seterr(err, errlen, "cannot connect to %s:%s: %s", c->host, c->port, strerror(saved));
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {.tv_sec = HTTP_IO_TIMEOUT_S};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    c->fd = fd;
    c->in_len = 0;
    return 0;
}

int http_client_open(struct http_client *c, const char *url, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    const char *p = url;
    if (strncmp(p, "http://", 7) == 0)
        p += 7;
    else if (strstr(p, "://")) {
        seterr(err, errlen, "%s: only http:// URLs are supported", url);
        return -1;
    }
    const char *end = p + strcspn(p, "/");
    const char *colon;
    if (*p == '[') { /* [v6addr]:port */
        const char *close_br = memchr(p, ']', (size_t)(end - p));
        if (!close_br) {
            seterr(err, errlen, "%s: unterminated [address]", url);
            return -1;
        }
        snprintf(c->host, sizeof c->host, "%.*s", (int)(close_br - p - 1), p + 1);
        colon = close_br + 1 < end && close_br[1] == ':' ? close_br + 1 : NULL;
    } else {
        colon = memchr(p, ':', (size_t)(end - p));
        size_t hl = (size_t)((colon ? colon : end) - p);
        snprintf(c->host, sizeof c->host, "%.*s", (int)hl, p);
    }
    if (colon)
        snprintf(c->port, sizeof c->port, "%.*s", (int)(end - colon - 1), colon + 1);
    else
        snprintf(c->port, sizeof c->port, "80");
    if (!c->host[0] || !c->port[0]) {
        seterr(err, errlen, "%s: expected http://host:port", url);
        return -1;
    }
    return connect_now(c, err, errlen);
}

void http_client_close(struct http_client *c)
{
    disconnect(c);
    free(c->in);
    c->in = NULL;
    c->in_cap = 0;
}

void http_response_free(struct http_response *resp)
{
    free(resp->body);
    memset(resp, 0, sizeof *resp);
}

/* Reads more bytes into c->in. Returns the count, 0 on EOF, -1 on error. */
static ssize_t fill(struct http_client *c)
{
    if (reserve(&c->in, &c->in_cap, c->in_len + 16384) != 0) {
        errno = ENOMEM;
        return -1;
    }
    for (;;) {
        ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n > 0)
            c->in_len += (size_t)n;
        return n;
    }
}

static void consume(struct http_client *c, size_t n)
{
    memmove(c->in, c->in + n, c->in_len - n);
    c->in_len -= n;
}

static int append_body(struct http_response *r, const char *p, size_t n)
{
    if (reserve(&r->body, &r->body_cap, r->body_len + n + 1) != 0)
        return -1;
    memcpy(r->body + r->body_len, p, n);
    r->body_len += n;
    r->body[r->body_len] = '\0';
    return 0;
}

/* Finds "\r\n" in c->in from offset `from`; returns its offset or -1. */
static long find_crlf(const struct http_client *c, size_t from)
{
    for (size_t i = from; i + 1 < c->in_len; i++)
        if (c->in[i] == '\r' && c->in[i + 1] == '\n')
            return (long)i;
    return -1;
}

/* Reads exactly n body bytes. */
static int read_fixed(struct http_client *c, struct http_response *r, size_t n, char *err,
                      size_t errlen)
{
    while (c->in_len < n) {
        ssize_t got = fill(c);
        if (got <= 0) {
            seterr(err, errlen, "connection %s in the middle of a response body",
                   got == 0 ? "closed" : strerror(errno));
            return -1;
        }
    }
    if (append_body(r, c->in, n) != 0) {
        seterr(err, errlen, "out of memory");
        return -1;
    }
    consume(c, n);
    return 0;
}

static int read_chunked(struct http_client *c, struct http_response *r, char *err, size_t errlen)
{
    for (;;) {
        long eol;
        while ((eol = find_crlf(c, 0)) < 0)
            if (fill(c) <= 0) {
                seterr(err, errlen, "connection lost in a chunked body");
                return -1;
            }
        char *end;
        unsigned long long size = strtoull(c->in, &end, 16);
        if (end == c->in) {
            seterr(err, errlen, "bad chunk size line");
            return -1;
        }
        consume(c, (size_t)eol + 2);
        if (size == 0) { /* trailers, then an empty line */
            for (;;) {
                while ((eol = find_crlf(c, 0)) < 0)
                    if (fill(c) <= 0) {
                        seterr(err, errlen, "connection lost in chunked trailers");
                        return -1;
                    }
                consume(c, (size_t)eol + 2);
                if (eol == 0)
                    return 0;
            }
        }
        if (read_fixed(c, r, (size_t)size, err, errlen) != 0)
            return -1;
        while (c->in_len < 2)
            if (fill(c) <= 0) {
                seterr(err, errlen, "connection lost after a chunk");
                return -1;
            }
        consume(c, 2);
    }
}

/* Reads one response. *nothing is set when the connection closed before any
 * byte of it arrived (a kept-alive connection the server had closed). */
static int read_response(struct http_client *c, struct http_response *r, bool *nothing,
                         bool *close_after, char *err, size_t errlen)
{
    *nothing = false;
    *close_after = false;
    r->status = 0;
    r->body_len = 0;
    if (append_body(r, "", 0) != 0) {
        seterr(err, errlen, "out of memory");
        return -1;
    }
    /* Headers. */
    size_t hdr_end = 0;
    for (;;) {
        for (size_t i = 0; i + 3 < c->in_len; i++)
            if (!memcmp(c->in + i, "\r\n\r\n", 4)) {
                hdr_end = i + 4;
                break;
            }
        if (hdr_end)
            break;
        if (c->in_len > HTTP_MAX_HEADER) {
            seterr(err, errlen, "response headers over %d bytes", HTTP_MAX_HEADER);
            return -1;
        }
        ssize_t got = fill(c);
        if (got <= 0) {
            if (got == 0 && c->in_len == 0)
                *nothing = true;
            seterr(err, errlen, "%s before a response arrived",
                   got == 0 ? "the server closed the connection" : strerror(errno));
            return -1;
        }
    }
    int minor;
    if (sscanf(c->in, "HTTP/1.%d %d", &minor, &r->status) != 2) {
        seterr(err, errlen, "not an HTTP/1.x response: %.40s", c->in);
        return -1;
    }
    if (minor == 0)
        *close_after = true;
    long long length = -1;
    bool chunked = false;
    size_t pos = (size_t)find_crlf(c, 0) + 2;
    while (pos + 2 < hdr_end) {
        size_t eol = (size_t)find_crlf(c, pos);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(eol - pos), c->in + pos);
        pos = eol + 2;
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        if (!strcasecmp(line, "Content-Length"))
            length = strtoll(v, NULL, 10);
        else if (!strcasecmp(line, "Transfer-Encoding") && strcasestr(v, "chunked"))
            chunked = true;
        else if (!strcasecmp(line, "Connection") && strcasestr(v, "close"))
            *close_after = true;
        else if (!strcasecmp(line, "Connection") && strcasestr(v, "keep-alive"))
            *close_after = false;
    }
    consume(c, hdr_end);
    if (r->status == 204 || r->status == 304 || (r->status >= 100 && r->status < 200))
        return 0;
    if (chunked)
        return read_chunked(c, r, err, errlen);
    if (length >= 0)
        return read_fixed(c, r, (size_t)length, err, errlen);
    /* Neither: the body runs to EOF. */
    *close_after = true;
    for (;;) {
        if (c->in_len) {
            if (append_body(r, c->in, c->in_len) != 0) {
                seterr(err, errlen, "out of memory");
                return -1;
            }
            c->in_len = 0;
        }
        ssize_t got = fill(c);
        if (got == 0)
            return 0;
        if (got < 0) {
            seterr(err, errlen, "reading a response body: %s", strerror(errno));
            return -1;
        }
    }
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int http_request(struct http_client *c, const char *method, const char *path,
                 const char *content_type, const char *body, size_t body_len,
                 struct http_response *resp, char *err, size_t errlen)
{
    char head[1024];
    int hl;
    if (body)
        hl = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: %s\r\n"
                      "Content-Length: %zu\r\n\r\n",
                      method, path, c->host, c->port,
                      content_type ? content_type : "application/json", body_len);
    else
        hl = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", method, path,
                      c->host, c->port);
    if (hl < 0 || (size_t)hl >= sizeof head) {
        seterr(err, errlen, "request line too long");
        return -1;
    }
    /* One buffer, one send: no Nagle stall between header and body. */
    char *msg = malloc((size_t)hl + body_len);
    if (!msg) {
        seterr(err, errlen, "out of memory");
        return -1;
    }
    memcpy(msg, head, (size_t)hl);
    if (body_len)
        memcpy(msg + hl, body, body_len);

    int rc = -1;
    for (int attempt = 0; attempt < 2; attempt++) {
        bool fresh = false;
        if (c->fd < 0) {
            if (connect_now(c, err, errlen) != 0)
                break;
            c->reconnects++;
            fresh = true;
        }
        bool nothing = false, close_after = false;
        if (send_all(c->fd, msg, (size_t)hl + body_len) != 0) {
            seterr(err, errlen, "sending to %s:%s: %s", c->host, c->port, strerror(errno));
            disconnect(c);
            if (fresh)
                break;
            continue; /* the server had closed a kept-alive connection */
        }
        if (read_response(c, resp, &nothing, &close_after, err, errlen) != 0) {
            disconnect(c);
            if (nothing && !fresh)
                continue;
            break;
        }
        if (close_after)
            disconnect(c);
        rc = 0;
        break;
    }
    free(msg);
    return rc;
}
