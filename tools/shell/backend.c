/* backend.c -- where asks are answered: a straum-serve over HTTP (libcurl;
 * one easy handle, so one kept-alive connection serves every ask), or the
 * store itself through the serve engine (no server). Both return the
 * answer's JSON text as the engine writes it, and errors as the engine
 * gives them (code, message, line and column), so the shell prints the
 * same for both. */
#include "base/error.h"
#include "tools/shell/shell.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

struct backend {
    /* --url */
    CURL *curl;
    struct curl_slist *headers;
    char *base; /* the URL without a trailing '/' */
    char curl_err[CURL_ERROR_SIZE];
    /* --store */
    struct engine *engine;
};

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    char *s = malloc(n + m + 1);
    if (s) {
        memcpy(s, a, n);
        memcpy(s + n, b, m + 1);
    }
    return s;
}

/* Ctrl-C while waiting for an answer abandons the request. */
static int progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                    curl_off_t ulnow)
{
    (void)arg, (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    return shell_interrupted ? 1 : 0;
}

struct backend *backend_open(const char *url, const char *store_dir, const char *token,
                             char *err, size_t errlen)
{
    struct backend *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (store_dir) {
        struct store_error serr = {0};
        b->engine = engine_open(store_dir, NULL, &serr);
        if (!b->engine) {
            snprintf(err, errlen, "cannot open the store %s: %s", store_dir, serr.message);
            free(b);
            return NULL;
        }
        return b;
    }
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
        snprintf(err, errlen, "--url %s: expected http://HOST:PORT (e.g. http://127.0.0.1:8080)",
                 url);
        free(b);
        return NULL;
    }
    b->base = join(url, "");
    if (b->base) {
        size_t n = strlen(b->base);
        while (n > 0 && b->base[n - 1] == '/')
            b->base[--n] = '\0';
    }
    b->curl = curl_easy_init();
    b->headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (b->headers)
        b->headers = curl_slist_append(b->headers, "Expect:"); /* no 100-continue round trip */
    if (b->headers && token && *token) {
        char *h = join("Authorization: Bearer ", token);
        struct curl_slist *l = h ? curl_slist_append(b->headers, h) : NULL;
        free(h);
        if (!l) {
            curl_slist_free_all(b->headers);
            b->headers = NULL;
        }
    }
    if (!b->base || !b->curl || !b->headers) {
        snprintf(err, errlen, "cannot set up libcurl (out of memory?)");
        backend_close(b);
        return NULL;
    }
    curl_easy_setopt(b->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(b->curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(b->curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(b->curl, CURLOPT_HTTPHEADER, b->headers);
    curl_easy_setopt(b->curl, CURLOPT_ERRORBUFFER, b->curl_err);
    curl_easy_setopt(b->curl, CURLOPT_USERAGENT, "straum-shell/" STRAUM_VERSION);
    curl_easy_setopt(b->curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(b->curl, CURLOPT_XFERINFOFUNCTION, progress);
    return b;
}

void backend_close(struct backend *b)
{
    if (!b)
        return;
    if (b->engine)
        engine_close(b->engine);
    if (b->curl)
        curl_easy_cleanup(b->curl);
    curl_slist_free_all(b->headers);
    free(b->base);
    free(b);
}

/* ---- HTTP ---------------------------------------------------------------------- */

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
    struct buf *b = arg;
    buf_put(b, data, size * n);
    return b->failed ? 0 : size * n;
}

static void fail(struct shell_error *err, int status, const char *code, const char *msg)
{
    memset(err, 0, sizeof *err);
    err->status = status;
    snprintf(err->code, sizeof err->code, "%s", code);
    error_fmt(err->message, sizeof err->message, "%s", msg);
}

/* An error body {"error": {"code", "message"[, "line", "column"]}} into err. */
static void http_error(int status, const char *body, struct shell_error *err)
{
    cJSON *root = cJSON_Parse(body);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
    if (cJSON_IsString(code) && cJSON_IsString(msg)) {
        fail(err, status, code->valuestring, msg->valuestring);
        const cJSON *line = cJSON_GetObjectItemCaseSensitive(e, "line");
        const cJSON *col = cJSON_GetObjectItemCaseSensitive(e, "column");
        if (cJSON_IsNumber(line) && cJSON_IsNumber(col)) {
            err->line = line->valueint;
            err->column = col->valueint;
        }
    } else {
        char msg2[600];
        size_t n = strcspn(body, "\r\n");
        snprintf(msg2, sizeof msg2, "HTTP %d from the server, not a straum-serve error: %.*s",
                 status, (int)(n > 300 ? 300 : n), body);
        fail(err, status, "http", msg2);
    }
    if (status == 401)
        snprintf(err->message + strlen(err->message), sizeof err->message - strlen(err->message),
                 " (give the token with --token or STRAUM_TOKEN)");
    cJSON_Delete(root);
}

static int http_do(struct backend *b, const char *path, const char *body, char **out,
                   struct shell_error *err)
{
    char *url = join(b->base, path);
    struct buf resp = {0};
    if (!url) {
        fail(err, 0, "", "out of memory");
        return -1;
    }
    curl_easy_setopt(b->curl, CURLOPT_URL, url);
    if (body) {
        curl_easy_setopt(b->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(b->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    } else {
        curl_easy_setopt(b->curl, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(b->curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(b->curl, CURLOPT_WRITEDATA, &resp);
    b->curl_err[0] = '\0';
    shell_interrupted = 0;
    CURLcode rc = curl_easy_perform(b->curl);
    free(url);
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
        fail(err, 0, "", "canceled: the ask was interrupted (Ctrl-C) before its answer came");
        buf_free(&resp);
        return -1;
    }
    if (rc != CURLE_OK) {
        char msg[700];
        snprintf(msg, sizeof msg, "cannot reach straum-serve at %s: %s (is it running there? see --url)",
                 b->base, b->curl_err[0] ? b->curl_err : curl_easy_strerror(rc));
        fail(err, 0, "", msg);
        buf_free(&resp);
        return -1;
    }
    long status = 0;
    curl_easy_getinfo(b->curl, CURLINFO_RESPONSE_CODE, &status);
    buf_put(&resp, "", 1);
    if (resp.failed) {
        fail(err, 0, "", "out of memory reading the answer");
        buf_free(&resp);
        return -1;
    }
    if (status != 200) {
        http_error((int)status, resp.data, err);
        buf_free(&resp);
        return -1;
    }
    *out = resp.data;
    return 0;
}

/* {"ask": ..., "params": [...], "time_zone": ...}: numbers go as written. */
static char *ask_body(const char *ask, const struct ask_value *params, int nparams, const char *tz)
{
    struct buf b = {0};
    buf_puts(&b, "{\"ask\":");
    buf_json_string(&b, ask, strlen(ask));
    if (nparams > 0) {
        buf_puts(&b, ",\"params\":[");
        for (int i = 0; i < nparams; i++) {
            const struct ask_value *v = &params[i];
            buf_puts(&b, i ? "," : "");
            if (v->kind == ASK_NULL)
                buf_puts(&b, "null");
            else if (v->kind == ASK_BOOL)
                buf_puts(&b, v->boolean ? "true" : "false");
            else if (v->kind == ASK_NUMBER)
                buf_put(&b, v->text, v->len);
            else
                buf_json_string(&b, v->text, v->len);
        }
        buf_puts(&b, "]");
    }
    if (tz) {
        buf_puts(&b, ",\"time_zone\":");
        buf_json_string(&b, tz, strlen(tz));
    }
    buf_put(&b, "}", 2); /* with the NUL */
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* ---- Both ------------------------------------------------------------------------- */

static int engine_result(int rc, struct buf *out, const struct ask_error *aerr, char **text,
                         struct shell_error *err)
{
    if (rc == 0) {
        buf_put(out, "", 1);
        if (!out->failed) {
            *text = out->data;
            return 0;
        }
        buf_free(out);
        fail(err, 500, "internal", "out of memory");
        return -1;
    }
    buf_free(out);
    fail(err, aerr->status, aerr->code, aerr->message);
    err->line = aerr->line;
    err->column = aerr->column;
    return -1;
}

int backend_ask(struct backend *b, const char *ask, const struct ask_value *params, int nparams,
                const char *time_zone, char **out, struct shell_error *err)
{
    *out = NULL;
    if (b->engine) {
        struct ask_request req = {.ask = ask, .params = params, .nparams = nparams,
                                  .time_zone = time_zone};
        struct buf answer = {0};
        struct ask_error aerr = {0};
        int rc = engine_ask(b->engine, &req, &answer, &aerr);
        return engine_result(rc, &answer, &aerr, out, err);
    }
    char *body = ask_body(ask, params, nparams, time_zone);
    if (!body) {
        fail(err, 0, "", "out of memory");
        return -1;
    }
    int rc = http_do(b, "/ask", body, out, err);
    free(body);
    return rc;
}

int backend_views(struct backend *b, char **out, struct shell_error *err)
{
    *out = NULL;
    if (b->engine) {
        struct buf answer = {0};
        struct ask_error aerr = {0};
        int rc = engine_views(b->engine, &answer, &aerr);
        return engine_result(rc, &answer, &aerr, out, err);
    }
    return http_do(b, "/views", NULL, out, err);
}
