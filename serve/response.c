/* response.c -- straum-serve's responses: a body or an error as JSON, the
 * status and its headers (Content-Type, Allow on a 405, WWW-Authenticate on
 * a 401), each response counted by route and status and logged at debug
 * level.
 *
 * Every error body is {"error": {"code", "message"[, "line", "column"]}}.
 * A response that cannot be built for want of memory is a 500 with a
 * static body, so a client never sees a half-written answer as success. */
#include "base/logfmt.h"
#include "serve/http.h"
#include "serve/request.h"

#include <stdlib.h>
#include <string.h>

static const char oom_body[] =
    "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}";

/* A response queued: counted, and at debug level logged (an ask's line,
 * with its view and time, is its handler's). */
void sent(struct serve_server *s, int route, int status)
{
    metrics_http(s->metrics, route, status);
    struct logfmt_line l;
    bool own = route >= 0 && route < s->nroutes && s->routes[route].asks;
    if (!s->quiet && !own && logfmt_begin(&l, LOGFMT_DEBUG, "request")) {
        logfmt_str(&l, "path", metrics_route_name(s->metrics, route));
        logfmt_int(&l, "status", status);
        logfmt_end(&l);
    }
}

/* Queues a response whose body is b's bytes (taken: freed by MHD, or here). */
enum MHD_Result send_buf(struct serve_server *s, struct MHD_Connection *c, int route, int status,
                         struct buf *b, const char *content_type, const char *allow)
{
    struct MHD_Response *r;
    if (b->failed || !b->data) {
        bool failed = b->failed;
        buf_free(b);
        status = failed ? 500 : status;
        r = failed ? MHD_create_response_from_buffer(sizeof oom_body - 1, (void *)oom_body,
                                                        MHD_RESPMEM_PERSISTENT)
                      : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        content_type = "application/json";
    } else {
        r = MHD_create_response_from_buffer_with_free_callback(b->len, b->data, free);
        if (r)
            b->data = NULL; /* MHD owns it now */
        else
            buf_free(b);
    }
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    if (status == 401)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"straum\"");
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    sent(s, route, status);
    return rc;
}

static void error_json(struct buf *b, const char *code, const char *message, int line, int column)
{
    buf_puts(b, "{\"error\":{\"code\":");
    buf_json_string(b, code, strlen(code));
    buf_puts(b, ",\"message\":");
    buf_json_string(b, message, strlen(message));
    if (line > 0)
        buf_printf(b, ",\"line\":%d,\"column\":%d", line, column);
    buf_puts(b, "}}\n");
}

enum MHD_Result send_error(struct serve_server *s, struct MHD_Connection *c, int route,
                           int status, const char *code, const char *message,
                           const char *allow)
{
    struct buf b = {0};
    error_json(&b, code, message, 0, 0);
    return send_buf(s, c, route, status, &b, "application/json", allow);
}

/* An engine or request error; a status the HTTP layer does not expect from
 * them becomes 500, so a bug cannot pass for success. */
enum MHD_Result send_ask_error(struct serve_server *s, struct MHD_Connection *c, int route,
                               struct ask_error *err)
{
    if (err->status < 400 || err->status > 599)
        err->status = 500;
    err->code[sizeof err->code - 1] = '\0';
    err->message[sizeof err->message - 1] = '\0';
    if (!err->code[0])
        strcpy(err->code, "internal");
    struct logfmt_line l;
    if (err->status == 500 && !s->quiet && logfmt_begin(&l, LOGFMT_ERROR, err->message)) {
        logfmt_str(&l, "code", err->code);
        logfmt_str(&l, "path", metrics_route_name(s->metrics, route));
        logfmt_int(&l, "status", err->status);
        logfmt_end(&l);
    }
    struct buf b = {0};
    error_json(&b, err->code, err->message, err->line, err->column);
    return send_buf(s, c, route, err->status, &b, "application/json", NULL);
}

/* ---- Streamed answers --------------------------------------------------- */

struct answer_stream {
    struct engine_answer *answer;
    struct request_body rb;     /* what the answer was asked with */
    struct buf part;            /* the bytes made and not yet all sent */
    size_t sent;                /* of part */
    bool done;                  /* the answer's last bytes are in part */
};

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    struct answer_stream *st = cls;
    if (st->sent == st->part.len) {
        if (st->done)
            return MHD_CONTENT_READER_END_OF_STREAM;
        st->part.len = st->sent = 0;
        struct ask_error err = {0};
        if (engine_answer_json(st->answer, &st->part, STREAM_PART_BYTES, &st->done, &err)) {
            struct logfmt_line l;
            if (logfmt_begin(&l, LOGFMT_WARN, "answer cut")) {
                logfmt_str(&l, "code", err.code);
                logfmt_str(&l, "message", err.message);
                logfmt_end(&l);
            }
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (st->done) { /* its memory goes back before the client has the end */
            engine_answer_close(st->answer);
            st->answer = NULL;
        }
        if (st->part.len == 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
    }
    size_t n = st->part.len - st->sent < max ? st->part.len - st->sent : max;
    memcpy(out, st->part.data + st->sent, n);
    st->sent += n;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    struct answer_stream *st = cls;
    engine_answer_close(st->answer);
    request_free(&st->rb);
    buf_free(&st->part);
    free(st);
}

enum MHD_Result send_answer_stream(struct serve_server *s, struct MHD_Connection *c, int route,
                                   struct engine_answer *answer, struct request_body *rb,
                                   struct buf *first)
{
    struct answer_stream *st = calloc(1, sizeof *st);
    struct MHD_Response *r = NULL;
    if (st) {
        st->answer = answer;
        st->rb = *rb;
        st->part = *first;
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 << 10, stream_read, st,
                                              stream_free);
        if (!r) {
            free(st);
            st = NULL;
        }
    }
    if (!st) {
        engine_answer_close(answer);
        request_free(rb);
        buf_free(first);
        return MHD_NO;
    }
    *rb = (struct request_body){0};
    *first = (struct buf){0};
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    enum MHD_Result rc = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    sent(s, route, 200);
    return rc;
}
