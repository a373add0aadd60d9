/* logfmt.c -- log lines for straum-ingest and straum-serve, and the lag
 * figure both report (store.h "Logs and lag").
 *
 * Why here: data flows one way (SPEC.md §2), and ingest and serve must not
 * include each other, so a writer both use lives in a layer under both.
 * store/ is the lowest layer they share, and the lag below is a reading of
 * the store's catalog position, which belongs here anyway; format/ is bytes
 * of segment blocks and sql/ depends on nothing but libc: a log writer fits
 * neither. It is small and depends on libc only.
 *
 * A line is "ts=2024-01-17T09:30:00.123Z level=info msg=\"...\" key=value
 * ...": msg is always quoted; other values are quoted when empty or when
 * they hold a space, '=', '"', a backslash or a control character. Inside
 * quotes \" \\ \n \r \t escape as in Go's logfmt, other control bytes as
 * \u00XX. Each line goes to stderr in one write, so lines of several
 * threads do not mix. */
#include "store/store.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static atomic_int log_level = STORE_LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

int store_log_parse_level(const char *name, enum store_log_level *out)
{
    for (int i = 0; i < 4; i++)
        if (strcasecmp(name, level_names[i]) == 0) {
            *out = (enum store_log_level)i;
            return 0;
        }
    if (strcasecmp(name, "warning") == 0) {
        *out = STORE_LOG_WARN;
        return 0;
    }
    return -1;
}

void store_log_set_level(enum store_log_level level)
{
    atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

bool store_log_enabled(enum store_log_level level)
{
    return (int)level >= atomic_load_explicit(&log_level, memory_order_relaxed);
}

/* Room kept at the end of a line for " truncated=true" and the newline. */
#define TAIL_ROOM 24

static void put(struct store_logline *l, const char *s, size_t n)
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
static void put_quoted(struct store_logline *l, const char *v)
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

bool store_log_begin(struct store_logline *l, enum store_log_level level, const char *msg)
{
    l->len = 0;
    l->cut = false;
    l->on = store_log_enabled(level);
    if (!l->on)
        return false;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[64];
    size_t n = strftime(when, sizeof when, "ts=%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + n, sizeof when - n, ".%03ldZ level=%s msg=", ts.tv_nsec / 1000000,
             level_names[level < STORE_LOG_DEBUG || level > STORE_LOG_ERROR ? 1 : level]);
    put(l, when, strlen(when));
    put_quoted(l, msg ? msg : "");
    return true;
}

void store_log_str(struct store_logline *l, const char *key, const char *value)
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

void store_log_int(struct store_logline *l, const char *key, int64_t value)
{
    char v[32];
    snprintf(v, sizeof v, "%" PRId64, value);
    store_log_str(l, key, v);
}

void store_log_fmt(struct store_logline *l, const char *key, const char *fmt, ...)
{
    if (!l->on)
        return;
    char v[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    store_log_str(l, key, v);
}

void store_log_end(struct store_logline *l)
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

void store_logf(enum store_log_level level, const char *fmt, ...)
{
    if (!store_log_enabled(level))
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct store_logline l;
    store_log_begin(&l, level, msg);
    store_log_end(&l);
}

/* ---- Lag --------------------------------------------------------------------------- */

int64_t store_lag_usec(const struct store_position *pos, int64_t now_usec)
{
    int64_t since;
    if (pos->bytes_behind == 0 && pos->contact_time > 0)
        since = pos->contact_time;
    else if (pos->commit_time > 0)
        since = pos->commit_time;
    else
        return -1;
    return now_usec > since ? now_usec - since : 0;
}

void store_logv_from(enum store_log_level level, const char *source, const char *fmt, va_list ap)
{
    if (!store_log_enabled(level))
        return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    struct store_logline l;
    if (store_log_begin(&l, level, msg)) {
        store_log_str(&l, "source", source);
        store_log_end(&l);
    }
}
