/* http_client.h -- a tiny HTTP/1.1 client for the benchmarks: one kept-alive
 * TCP connection to one http://host:port, blocking requests with
 * Content-Length bodies, responses read by Content-Length (or chunked, or to
 * EOF). No TLS, no redirects: just enough to time straum-serve honestly
 * without a client library's overhead in the figures. */
#ifndef STRAUM_KIT_HTTP_CLIENT_H
#define STRAUM_KIT_HTTP_CLIENT_H

#include <stddef.h>

struct http_client {
    char host[256];
    char port[16];
    int fd;            /* -1 when not connected */
    char *in;          /* bytes read from the socket, not yet consumed */
    size_t in_len, in_cap;
    int reconnects;    /* connections opened after the first */
};

struct http_response {
    int status;
    char *body;        /* NUL-terminated; owned by the response */
    size_t body_len, body_cap;
};

/* Parses url ("http://host:port" with an optional trailing path, which is
 * ignored) and connects. Returns 0, or -1 with a message in err. */
int http_client_open(struct http_client *c, const char *url, char *err, size_t errlen);
void http_client_close(struct http_client *c);

/* Sends one request and reads its response into resp (reusing its buffer).
 * body may be NULL for none. A request on a connection the server closed
 * meanwhile is retried once on a new connection. Returns 0, or -1 with a
 * message in err (the connection is then closed). */
int http_request(struct http_client *c, const char *method, const char *path,
                 const char *content_type, const char *body, size_t body_len,
                 struct http_response *resp, char *err, size_t errlen);

void http_response_free(struct http_response *resp);

#endif
