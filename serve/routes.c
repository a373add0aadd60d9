/* routes.c -- straum-serve's route table and what each route answers.
 *
 * An endpoint is one row here: http.c finds a request's row by its path,
 * answers 404 (naming the rows) when there is none, 405 with the row's
 * methods in Allow when the row does not take the method, 401 when the row
 * needs the token and the request lacks it, and otherwise calls the row's
 * handler once the request (and the body of a row that reads one) has
 * arrived. /metrics counts each row's responses under its label.
 *
 * Routes and statuses:
 *   POST /ask      200 engine JSON; 400 body (request.c) or ask syntax; 404
 *                  unknown view; 413 body over --max-body (answered on the
 *                  headers when Content-Length says so; a chunked body is
 *                  dropped past the limit and answered at its end) or an
 *                  ask over the engine's length limit; 422 parameters or
 *                  groups the engine refuses; 503 ask timeout; 500 internal
 *                  (a corrupt block: the engine's message names it; logged)
 *   GET  /views    200 engine JSON
 *   GET  /healthz  200 {"status":"ok"} while the process serves
 *   GET  /readyz   200 {"status":"ready","lag_seconds","position"}, or 503
 *                  not_ready: no position yet, or lag over --max-lag (lag:
 *                  see store_lag_usec)
 *   GET  /metrics  Prometheus text
 * /ask, /views and /metrics need the token when --token-file is set
 * (/metrics not with --public-metrics). */
#include "base/lsn.h"
#include "base/logfmt.h"
#include "serve/http.h"

#include "serve/request.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static enum MHD_Result do_views(struct serve_server *s, struct MHD_Connection *c, int route,
                                const char *body, size_t len)
{
    (void)body, (void)len;
    struct buf b = {0};
    struct ask_error err = {0};
    if (engine_views(s->engine, &b, &err) != 0) {
        buf_free(&b);
        return send_ask_error(s, c, route, &err);
    }
    return send_buf(s, c, route, 200, &b, "application/json", NULL);
}

static enum MHD_Result do_readyz(struct serve_server *s, struct MHD_Connection *c, int route,
                                 const char *body, size_t len)
{
    (void)body, (void)len;
    struct store_position pos;
    struct ask_error err = {0};
    char msg[480];
    if (engine_position(s->engine, &pos, &err) != 0) {
        snprintf(msg, sizeof msg, "cannot read the store's position: %s", err.message);
        return send_error(s, c, route, 503, "not_ready", msg, NULL);
    }
    int64_t lag = store_lag_usec(&pos, wall_us());
    if (lag < 0 && s->max_lag_us > 0)
        return send_error(s, c, route, 503, "not_ready",
                          "the store has no source position yet: ingest has not committed "
                          "since it was created", NULL);
    if (s->max_lag_us > 0 && lag > s->max_lag_us) {
        snprintf(msg, sizeof msg,
                 "the store trails PostgreSQL by %.3f s, more than --max-lag %.3f s (%s)",
                 (double)lag / 1e6, (double)s->max_lag_us / 1e6,
                 pos.bytes_behind ? "ingest is behind the server's WAL"
                                  : "no recent contact between ingest and PostgreSQL");
        return send_error(s, c, route, 503, "not_ready", msg, NULL);
    }
    char lsn[32];
    lsn_text(pos.lsn, lsn);
    struct buf b = {0};
    buf_puts(&b, "{\"status\":\"ready\",\"lag_seconds\":");
    if (lag < 0)
        buf_puts(&b, "null");
    else
        buf_printf(&b, "%" PRId64 ".%06" PRId64, lag / 1000000, lag % 1000000);
    buf_printf(&b, ",\"position\":\"%s\"}\n", lsn);
    return send_buf(s, c, route, 200, &b, "application/json", NULL);
}

static enum MHD_Result do_healthz(struct serve_server *s, struct MHD_Connection *c, int route,
                                  const char *body, size_t len)
{
    (void)body, (void)len;
    enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, s->healthz);
    sent(s, route, 200);
    return rc;
}

static enum MHD_Result do_metrics(struct serve_server *s, struct MHD_Connection *c, int route,
                                  const char *body, size_t len)
{
    (void)body, (void)len;
    struct store_position pos;
    struct ask_error err = {0};
    bool have = engine_position(s->engine, &pos, &err) == 0;
    struct buf b = {0};
    metrics_write(s->metrics, have ? &pos : NULL, wall_us(), &b);
    int entries;
    size_t bytes;
    engine_cache_stats(s->engine, &entries, &bytes);
    buf_printf(&b,
               "# HELP straum_ask_cache_entries Compiled asks cached (--ask-cache bounds them).\n"
               "# TYPE straum_ask_cache_entries gauge\nstraum_ask_cache_entries %d\n"
               "# HELP straum_ask_cache_bytes Bytes of the cached asks (--ask-cache-bytes bounds them).\n"
               "# TYPE straum_ask_cache_bytes gauge\nstraum_ask_cache_bytes %zu\n",
               entries, bytes);
    return send_buf(s, c, route, 200, &b, "text/plain; version=0.0.4; charset=utf-8",
                    NULL);
}

/* A /ask whose body has fully arrived (none: the parser says so). */
static enum MHD_Result do_ask(struct serve_server *s, struct MHD_Connection *c, int route,
                              const char *body, size_t len)
{
    int64_t t0 = mono_ns();
    struct request_body rb;
    struct ask_error err = {0};
    int view = -1, status;
    enum MHD_Result rc;
    if (request_parse(body, len, &rb, &err) != 0) {
        status = err.status;
        rc = send_ask_error(s, c, route, &err);
    } else {
        view = metrics_view_of(s->metrics, rb.req.ask);
        struct buf out = {0};
        struct engine_answer *answer = NULL;
        bool done = false;
        if (engine_answer_open(s->engine, &rb.req, NULL, &answer, &err) == 0 &&
            engine_answer_json(answer, &out, STREAM_PART_BYTES, &done, &err) == 0) {
            status = 200;
            if (done) { /* the whole answer, sent with its length */
                engine_answer_close(answer);
                rc = send_buf(s, c, route, 200, &out, "application/json", NULL);
            } else { /* the rest is made as the client reads: rb goes with it */
                rc = send_answer_stream(s, c, route, answer, &rb, &out);
            }
        } else {
            engine_answer_close(answer);
            buf_free(&out);
            rc = send_ask_error(s, c, route, &err);
            status = err.status;
        }
        request_free(&rb);
    }
    int64_t ns = mono_ns() - t0;
    metrics_ask(s->metrics, view, status, ns);
    struct logfmt_line l;
    if (!s->quiet && logfmt_begin(&l, LOGFMT_DEBUG, "ask")) {
        logfmt_str(&l, "path", metrics_route_name(s->metrics, route));
        logfmt_str(&l, "view", metrics_view_name(s->metrics, view));
        logfmt_int(&l, "status", status);
        logfmt_int(&l, "dur_us", ns / 1000);
        logfmt_end(&l);
    }
    return rc;
}

/* ---- The table ------------------------------------------------------------ */

const struct serve_route serve_routes[] = {
    /* path        methods     token  body   asks   handler     label */
    {"/ask",       ROUTE_POST, true,  true,  true,  do_ask,     "/ask"},
    {"/views",     ROUTE_GET,  true,  false, false, do_views,   "/views"},
    {"/healthz",   ROUTE_GET,  false, false, false, do_healthz, "/healthz"},
    {"/readyz",    ROUTE_GET,  false, false, false, do_readyz,  "/readyz"},
    {"/metrics",   ROUTE_GET,  true,  false, false, do_metrics, "/metrics"}, /* --public-metrics */
};
const int serve_nroutes = (int)(sizeof serve_routes / sizeof serve_routes[0]);

int route_find(const struct serve_server *s, const char *url)
{
    int r = 0;
    while (r < s->nroutes && strcmp(s->routes[r].path, url) != 0)
        r++;
    return r;
}

bool route_takes(const struct serve_route *r, const char *method)
{
    if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
        return r->methods & ROUTE_GET;
    return strcmp(method, "POST") == 0 && (r->methods & ROUTE_POST);
}

const char *route_allow(unsigned methods)
{
    static const char *const allow[] = {"", "GET, HEAD", "POST", "GET, HEAD, POST"};
    return allow[methods & (ROUTE_GET | ROUTE_POST)];
}

/* "POST /ask, GET /views, /healthz, /readyz and /metrics": a method is
 * named where it changes from the row before. */
void routes_not_found(const struct serve_route *routes, int nroutes, char *buf, size_t len)
{
    static const char *const method[] = {"", "GET ", "POST ", "GET or POST "};
    size_t at = (size_t)snprintf(buf, len, "no such path; straum-serve answers");
    for (int i = 0; i < nroutes && at < len; i++) {
        unsigned m = routes[i].methods & (ROUTE_GET | ROUTE_POST);
        bool same = i > 0 && m == (routes[i - 1].methods & (ROUTE_GET | ROUTE_POST));
        at += (size_t)snprintf(buf + at, len - at, "%s%s%s",
                               i == 0 ? " " : i == nroutes - 1 ? " and " : ", ",
                               same ? "" : method[m], routes[i].path);
    }
}
