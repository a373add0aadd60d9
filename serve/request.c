/* request.c -- parsing the body of POST /ask with cJSON, checking every
 * type, into the engine's struct ask_request.
 *
 * cJSON builds the tree but forgets how a number was written, and a
 * parameter must reach the engine as written (12345678901234567890 and 0.1
 * are not doubles to it). So once cJSON has accepted the body, a small
 * walker over the same text, in step with the tree (cJSON keeps members in
 * order), finds each number's own characters. The walker trusts nothing:
 * should it ever disagree with the tree, the request fails with a 500 that
 * the fuzz target treats as a crash. */
#include "serve/request.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1-based line and column (in characters) of body[pos]. */
static void place(const char *body, size_t len, size_t pos, int *line, int *column)
{
    int l = 1, c = 1;
    if (pos > len)
        pos = len;
    for (size_t i = 0; i < pos; i++) {
        unsigned char ch = (unsigned char)body[i];
        if (ch == '\n') {
            l++;
            c = 1;
        } else if ((ch & 0xC0) != 0x80) { /* not a UTF-8 continuation byte */
            c++;
        }
    }
    *line = l;
    *column = c;
}

static void fail_at(struct ask_error *err, const char *body, size_t len, size_t pos,
                    const char *msg)
{
    ask_fail(err, 400, "invalid_json", "%s", msg);
    place(body, len, pos, &err->line, &err->column);
}

/* Offset of the first byte that is not well-formed UTF-8 (no overlongs,
 * surrogates or code points past U+10FFFF), or len. */
static size_t utf8_check(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            n = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else {
            return i;
        }
        if (len - i <= n)
            return i;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k <= n; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
        i += n + 1;
    }
    return len;
}

/* Offset of a \u0000 escape inside a string, or len. cJSON would decode it
 * into a NUL that silently cuts the string short. Outside strings a
 * backslash is a JSON error that cJSON reports by itself. */
static size_t nul_escape(const char *s, size_t len)
{
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        if (!in_string) {
            in_string = s[i] == '"';
        } else if (s[i] == '"') {
            in_string = false;
        } else if (s[i] == '\\' && i + 1 < len) {
            if (s[i + 1] == 'u' && i + 5 < len && s[i + 2] == '0' && s[i + 3] == '0' &&
                s[i + 4] == '0' && s[i + 5] == '0')
                return i;
            i++; /* the escaped character, whatever it is */
        }
    }
    return len;
}

/* ---- The walker over text cJSON has accepted ----------------------------- */

struct walk {
    const char *p, *end;
    bool lost; /* the text did not look like the tree: a bug, never input */
};

/* Whitespace as cJSON skips it: every byte up to the space, not only
 * JSON's four (cJSON is lax here, and the walker must step as it does). */
static void ws(struct walk *w)
{
    while (w->p < w->end && (unsigned char)*w->p <= ' ')
        w->p++;
}

static void expect(struct walk *w, char c)
{
    ws(w);
    if (w->p < w->end && *w->p == c)
        w->p++;
    else
        w->lost = true;
}

static void skip_string(struct walk *w)
{
    if (w->p >= w->end || *w->p != '"') {
        w->lost = true;
        return;
    }
    for (w->p++; w->p < w->end; w->p++) {
        if (*w->p == '\\')
            w->p++;
        else if (*w->p == '"') {
            w->p++;
            return;
        }
    }
    w->lost = true;
}

static bool number_char(char c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Skips one value; for a number, [*start, w->p) is its text. Nesting is
 * bounded by cJSON's own limit, which the text has already passed. */
static void skip_value(struct walk *w, const char **start)
{
    ws(w);
    *start = w->p;
    if (w->p >= w->end) {
        w->lost = true;
        return;
    }
    char c = *w->p;
    if (c == '"') {
        skip_string(w);
    } else if (c == '{' || c == '[') {
        int depth = 0;
        while (w->p < w->end && !w->lost) {
            c = *w->p;
            if (c == '"') {
                skip_string(w);
                continue;
            }
            w->p++;
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth == 0)
                return;
        }
        w->lost = true;
    } else if (number_char(c)) {
        while (w->p < w->end && number_char(*w->p))
            w->p++;
    } else {
        while (w->p < w->end && *w->p >= 'a' && *w->p <= 'z') /* true, false, null */
            w->p++;
        if (w->p == *start)
            w->lost = true;
    }
}

/* JSON's number grammar, which cJSON (strtod underneath) is laxer than:
 * it would take "+1", "01", ".5" and "1." as numbers. */
static bool json_number(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i >= n)
        return false;
    if (s[i] == '0')
        i++;
    else if (s[i] >= '1' && s[i] <= '9')
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    else
        return false;
    if (i < n && s[i] == '.') {
        size_t d = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return false;
    }
    return i == n;
}

static const char *kind_name(const cJSON *v)
{
    if (cJSON_IsObject(v))
        return "an object";
    if (cJSON_IsArray(v))
        return "an array";
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsBool(v))
        return "a boolean";
    return "null";
}

/* A key for a message: printable ASCII only, at most 40 characters. */
static void key_text(const char *key, char *out, size_t outlen)
{
    size_t n = 0;
    for (const char *k = key; *k && n + 4 < outlen; k++, n++) {
        if (n == 40) {
            memcpy(out + n, "...", 3);
            n += 3;
            break;
        }
        out[n] = *k >= 0x20 && *k < 0x7F ? *k : '?';
    }
    out[n] = '\0';
}

void request_free(struct request_body *b)
{
    if (!b)
        return;
    cJSON_Delete(b->root);
    free(b->params);
    free(b->numbers);
    memset(b, 0, sizeof *b);
}

int request_parse(const char *body, size_t len, struct request_body *out, struct ask_error *err)
{
    memset(out, 0, sizeof *out);
    memset(err, 0, sizeof *err);
    char msg[sizeof err->message];

    size_t at = 0;
    while (at < len && (body[at] == ' ' || body[at] == '\t' || body[at] == '\n' ||
                        body[at] == '\r'))
        at++;
    if (at == len) {
        ask_fail(err, 400, "invalid_json",
             "the body is empty; expected a JSON object such as {\"ask\": \"SELECT ...\"}");
        return -1;
    }
    const char *nul = memchr(body, '\0', len);
    if (nul) {
        fail_at(err, body, len, (size_t)(nul - body), "a NUL byte is not allowed in the body");
        return -1;
    }
    at = utf8_check((const unsigned char *)body, len);
    if (at < len) {
        fail_at(err, body, len, at, "the body is not valid UTF-8");
        return -1;
    }
    at = nul_escape(body, len);
    if (at < len) {
        fail_at(err, body, len, at, "\\u0000 is not allowed in a string");
        return -1;
    }

    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, false);
    if (!root) {
        size_t pos = end && end >= body && end <= body + len ? (size_t)(end - body) : 0;
        fail_at(err, body, len, pos, "malformed JSON");
        return -1;
    }
    out->root = root;
    struct walk w = {.p = end, .end = body + len};
    ws(&w);
    if (w.p < w.end) {
        fail_at(err, body, len, (size_t)(w.p - body), "unexpected text after the JSON object");
        goto fail;
    }
    if (!cJSON_IsObject(root)) {
        snprintf(msg, sizeof msg,
                 "the body is %s; expected a JSON object such as {\"ask\": \"SELECT ...\"}",
                 kind_name(root));
        ask_fail(err, 400, "invalid_request", "%s", msg);
        goto fail;
    }

    const cJSON *ask = NULL, *params = NULL, *tz = NULL;
    for (const cJSON *m = root->child; m; m = m->next) {
        const cJSON **slot;
        if (strcmp(m->string, "ask") == 0) {
            slot = &ask;
        } else if (strcmp(m->string, "params") == 0) {
            slot = &params;
        } else if (strcmp(m->string, "time_zone") == 0) {
            slot = &tz;
        } else {
            char key[48];
            key_text(m->string, key, sizeof key);
            snprintf(msg, sizeof msg,
                     "unknown key \"%s\"; the body takes \"ask\", \"params\" and \"time_zone\"",
                     key);
            ask_fail(err, 400, "invalid_request", "%s", msg);
            goto fail;
        }
        if (*slot) {
            snprintf(msg, sizeof msg, "\"%s\" is given twice", m->string);
            ask_fail(err, 400, "invalid_request", "%s", msg);
            goto fail;
        }
        *slot = m;
    }

    if (!ask) {
        ask_fail(err, 400, "invalid_request", "\"ask\" is missing: the body needs {\"ask\": \"SELECT ...\"}");
        goto fail;
    }
    if (!cJSON_IsString(ask)) {
        snprintf(msg, sizeof msg, "\"ask\" is %s; it must be a string", kind_name(ask));
        ask_fail(err, 400, "invalid_request", "%s", msg);
        goto fail;
    }
    out->req.ask = ask->valuestring;

    if (tz && !cJSON_IsNull(tz)) {
        if (!cJSON_IsString(tz)) {
            snprintf(msg, sizeof msg, "\"time_zone\" is %s; it must be a string such as "
                     "\"America/New_York\"", kind_name(tz));
            ask_fail(err, 400, "invalid_request", "%s", msg);
            goto fail;
        }
        out->req.time_zone = tz->valuestring;
    }

    if (params && !cJSON_IsNull(params)) {
        if (!cJSON_IsArray(params)) {
            snprintf(msg, sizeof msg, "\"params\" is %s; it must be an array", kind_name(params));
            ask_fail(err, 400, "bad_parameter", "%s", msg);
            goto fail;
        }
        int n = cJSON_GetArraySize(params);
        if (n > 0) {
            out->params = calloc((size_t)n, sizeof *out->params);
            /* Numbers are copied out NUL-terminated; with their NULs they
             * fit in len + 1 bytes, since commas separate them. */
            out->numbers = malloc(len + 1);
            if (!out->params || !out->numbers) {
                ask_fail(err, 500, "internal", "out of memory");
                goto fail;
            }
        }
        /* Walk the text to the params array, member by member. */
        w.p = body;
        w.end = body + len;
        if (len >= 3 && memcmp(body, "\xEF\xBB\xBF", 3) == 0) /* cJSON skips a BOM */
            w.p += 3;
        expect(&w, '{');
        const cJSON *m = root->child;
        for (; m && m != params && !w.lost; m = m->next) {
            const char *s;
            ws(&w);
            skip_string(&w);
            expect(&w, ':');
            skip_value(&w, &s);
            expect(&w, ',');
        }
        ws(&w);
        skip_string(&w);
        expect(&w, ':');
        expect(&w, '[');
        int i = 0;
        size_t used = 0;
        for (const cJSON *v = params->child; v && !w.lost; v = v->next, i++) {
            const char *s;
            if (i > 0)
                expect(&w, ',');
            skip_value(&w, &s);
            struct ask_value *pv = &out->params[i];
            if (cJSON_IsNull(v)) {
                pv->kind = ASK_NULL;
            } else if (cJSON_IsBool(v)) {
                pv->kind = ASK_BOOL;
                pv->boolean = cJSON_IsTrue(v);
            } else if (cJSON_IsString(v)) {
                pv->kind = ASK_STRING;
                pv->text = v->valuestring;
                pv->len = strlen(v->valuestring);
            } else if (cJSON_IsNumber(v)) {
                if (w.lost)
                    break;
                size_t n_chars = (size_t)(w.p - s);
                if (!json_number(s, n_chars)) {
                    fail_at(err, body, len, (size_t)(s - body), "malformed JSON number");
                    goto fail;
                }
                if (used + n_chars + 1 > len + 1)
                    break; /* cannot happen; reported as lost below */
                memcpy(out->numbers + used, s, n_chars);
                out->numbers[used + n_chars] = '\0';
                pv->kind = ASK_NUMBER;
                pv->text = out->numbers + used;
                pv->len = n_chars;
                used += n_chars + 1;
            } else {
                snprintf(msg, sizeof msg,
                         "params[%d] (for $%d) is %s; a parameter is a string, number, "
                         "boolean or null", i, i + 1, kind_name(v));
                ask_fail(err, 400, "bad_parameter", "%s", msg);
                goto fail;
            }
        }
        if (!w.lost)
            expect(&w, ']');
        if (w.lost || i != n) {
            ask_fail(err, 500, "internal", "the request body walker lost its place");
            goto fail;
        }
        out->req.params = out->params;
        out->req.nparams = n;
    }
    return 0;

fail:
    request_free(out);
    return -1;
}
