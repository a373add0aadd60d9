/* json.c -- the streaming JSON writer (see json.h). */
#include "tools/dump/json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void json_init(struct json *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
}

void json_finish(struct json *j)
{
    fputc('\n', j->f);
}

static bool is_inline(const struct json *j)
{
    return j->inline_from && j->depth >= j->inline_from;
}

static void newline_indent(struct json *j, int depth)
{
    fputc('\n', j->f);
    for (int i = 0; i < depth; i++)
        fputs("  ", j->f);
}

/* Separates a new member or element from what came before it. */
static void before_value(struct json *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->depth == 0)
        return;
    bool first = j->first[j->depth];
    j->first[j->depth] = false;
    if (is_inline(j)) {
        if (!first)
            fputs(", ", j->f);
    } else {
        if (!first)
            fputc(',', j->f);
        newline_indent(j, j->depth);
    }
}

static void open_container(struct json *j, char c, bool inline_)
{
    before_value(j);
    fputc(c, j->f);
    if (j->depth + 1 >= JSON_MAX_DEPTH) {
        /* Deeper than any shape straum-dump writes: a programming error. */
        abort();
    }
    j->depth++;
    j->first[j->depth] = true;
    if (inline_ && !j->inline_from)
        j->inline_from = j->depth;
}

static void close_container(struct json *j, char c)
{
    bool empty = j->first[j->depth];
    bool was_inline = is_inline(j);
    if (j->inline_from == j->depth)
        j->inline_from = 0;
    j->depth--;
    if (!empty && !was_inline)
        newline_indent(j, j->depth);
    fputc(c, j->f);
}

void json_object_begin(struct json *j) { open_container(j, '{', false); }
void json_object_begin_inline(struct json *j) { open_container(j, '{', true); }
void json_object_end(struct json *j) { close_container(j, '}'); }
void json_array_begin(struct json *j) { open_container(j, '[', false); }
void json_array_begin_inline(struct json *j) { open_container(j, '[', true); }
void json_array_end(struct json *j) { close_container(j, ']'); }

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 when the
 * bytes there are not one: overlong forms, surrogates and code points
 * beyond U+10FFFF are invalid too. */
static size_t utf8_sequence(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

static void write_string(FILE *f, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            i++;
        } else if (c < 0x20) {
            switch (c) {
            case '\b': fputs("\\b", f); break;
            case '\f': fputs("\\f", f); break;
            case '\n': fputs("\\n", f); break;
            case '\r': fputs("\\r", f); break;
            case '\t': fputs("\\t", f); break;
            default: fprintf(f, "\\u%04x", c); break;
            }
            i++;
        } else {
            size_t len = utf8_sequence(s + i, n - i);
            if (len == 0) {
                fputs("\\ufffd", f);
                i++;
            } else {
                fwrite(s + i, 1, len, f);
                i += len;
            }
        }
    }
    fputc('"', f);
}

void json_key(struct json *j, const char *key)
{
    before_value(j);
    write_string(j->f, key, strlen(key));
    fputs(": ", j->f);
    j->after_key = true;
}

void json_strn(struct json *j, const char *s, size_t n)
{
    before_value(j);
    write_string(j->f, s, n);
}

void json_str(struct json *j, const char *s)
{
    json_strn(j, s, strlen(s));
}

void json_int(struct json *j, int64_t v)
{
    before_value(j);
    fprintf(j->f, "%" PRId64, v);
}

void json_uint(struct json *j, uint64_t v)
{
    before_value(j);
    fprintf(j->f, "%" PRIu64, v);
}

void json_double(struct json *j, double v)
{
    if (isnan(v)) {
        json_str(j, "NaN");
        return;
    }
    if (isinf(v)) {
        json_str(j, v > 0 ? "Infinity" : "-Infinity");
        return;
    }
    /* The shortest %g that reads back as the same double. */
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    before_value(j);
    fputs(buf, j->f);
}

void json_bool(struct json *j, bool v)
{
    before_value(j);
    fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j)
{
    before_value(j);
    fputs("null", j->f);
}

void json_kv_str(struct json *j, const char *key, const char *s)
{
    json_key(j, key);
    if (s)
        json_str(j, s);
    else
        json_null(j);
}

void json_kv_int(struct json *j, const char *key, int64_t v)
{
    json_key(j, key);
    json_int(j, v);
}

void json_kv_uint(struct json *j, const char *key, uint64_t v)
{
    json_key(j, key);
    json_uint(j, v);
}

void json_kv_double(struct json *j, const char *key, double v)
{
    json_key(j, key);
    json_double(j, v);
}

void json_kv_bool(struct json *j, const char *key, bool v)
{
    json_key(j, key);
    json_bool(j, v);
}

void json_kv_null(struct json *j, const char *key)
{
    json_key(j, key);
    json_null(j);
}
