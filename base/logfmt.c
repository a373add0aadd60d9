/* logfmt.c -- log lines (logfmt.h).
 *
 * A line is "ts=2024-01-17T09:30:00.123Z level=info msg=\"...\" key=value
 * ...": msg is always quoted; other values are quoted when empty or when
 * they hold a space, '=', '"', a backslash or a control character. Inside
 * quotes \" \\ \n \r \t escape as in Go's logfmt, other control bytes as
 * \u00XX. Each line goes to stderr in one write, so lines of several
 * threads do not mix. */
#include "base/logfmt.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static atomic_int log_level = LOGFMT_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

int logfmt_parse_level(const char *name, enum logfmt_level *out)
{
    for (int i = 0; i < 4; i++)
        if (strcasecmp(name, level_names[i]) == 0) {
            *out = (enum logfmt_level)i;
            return 0;
        }
    if (strcasecmp(name, "warning") == 0) {
        *out = LOGFMT_WARN;
        return 0;
    }
    return -1;
}

void logfmt_set_level(enum logfmt_level level)
{
    atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

bool logfmt_enabled(enum logfmt_level level)
{
    return (int)level >= atomic_load_explicit(&log_level, memory_order_relaxed);
}

/* Room kept at the end of a line for " truncated=true" and the newline. */
#define TAIL_ROOM 24

static void put(struct logfmt_line *l, const char *s, size_t n)
{
    size_t room = sizeof l->buf - TAIL_ROOM - l->len;
    if (n > room) {
        n = room;
        l->cut = true;
    }
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static bool needs_quotes(const char *v)
{
    if (!*v)
        return true;
    for (const unsigned char *c = (const unsigned char *)v; *c; c++)
        if (*c <= ' ' || *c == '=' || *c == '"' || *c == '\\' || *c == 0x7f)
            return true;
    return false;
}

/* A quoted value; one too long for the line is cut short but still closed. */
static void put_quoted(struct logfmt_line *l, const char *v)
{
    put(l, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
        if (sizeof l->buf - TAIL_ROOM - l->len < 8) { /* room to close the quote */
            l->cut = true;
            break;
        }
        char esc[8];
        switch (*c) {
        case '"': put(l, "\\\"", 2); break;
        case '\\': put(l, "\\\\", 2); break;
        case '\n': put(l, "\\n", 2); break;
        case '\r': put(l, "\\r", 2); break;
        case '\t': put(l, "\\t", 2); break;
        default:
            if (*c < ' ' || *c == 0x7f) {
                snprintf(esc, sizeof esc, "\\u%04x", *c);
                put(l, esc, strlen(esc));
            } else {
                put(l, (const char *)c, 1);
            }
        }
    }
    memcpy(l->buf + l->len, "\"", 1);
    l->len++;
}

bool logfmt_begin(struct logfmt_line *l, enum logfmt_level level, const char *msg)
{
    l->len = 0;
    l->cut = false;
    l->on = logfmt_enabled(level);
    if (!l->on)
        return false;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[64];
    size_t n = strftime(when, sizeof when, "ts=%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + n, sizeof when - n, ".%03ldZ level=%s msg=", ts.tv_nsec / 1000000,
             level_names[level < LOGFMT_DEBUG || level > LOGFMT_ERROR ? 1 : level]);
    put(l, when, strlen(when));
    put_quoted(l, msg ? msg : "");
    return true;
}

void logfmt_str(struct logfmt_line *l, const char *key, const char *value)
{
    if (!l->on)
        return;
    size_t before = l->len;
    bool was_cut = l->cut;
    l->cut = false;
    put(l, " ", 1);
    put(l, key, strlen(key));
    put(l, "=", 1);
    if (!value)
        value = "";
    if (needs_quotes(value))
        put_quoted(l, value);
    else
        put(l, value, strlen(value));
    if (l->cut) /* a pair that does not fit is left out whole */
        l->len = before;
    l->cut |= was_cut;
}

void logfmt_int(struct logfmt_line *l, const char *key, int64_t value)
{
    char v[32];
    snprintf(v, sizeof v, "%" PRId64, value);
    logfmt_str(l, key, v);
}

void logfmt_printf(struct logfmt_line *l, const char *key, const char *fmt, ...)
{
    if (!l->on)
        return;
    char v[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    logfmt_str(l, key, v);
}

void logfmt_end(struct logfmt_line *l)
{
    if (!l->on)
        return;
    if (l->cut) {
        static const char tail[] = " truncated=true";
        memcpy(l->buf + l->len, tail, sizeof tail - 1);
        l->len += sizeof tail - 1;
    }
    l->buf[l->len++] = '\n';
    fwrite(l->buf, 1, l->len, stderr);
    fflush(stderr);
    l->on = false;
}

void logfmt_msg(enum logfmt_level level, const char *fmt, ...)
{
    if (!logfmt_enabled(level))
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct logfmt_line l;
    logfmt_begin(&l, level, msg);
    logfmt_end(&l);
}

void logfmt_vfrom(enum logfmt_level level, const char *source, const char *fmt, va_list ap)
{
    if (!logfmt_enabled(level))
        return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    struct logfmt_line l;
    if (logfmt_begin(&l, level, msg)) {
        logfmt_str(&l, "source", source);
        logfmt_end(&l);
    }
}
