/* logfmt.h -- straum-ingest's and straum-serve's log lines: logfmt on
 * stderr, one line per event (SPEC.md §8.4 "Logs and metrics").
 *
 * In base/ because every layer that logs (store, ingest, serve) stands on
 * it, and ingest and serve must not include each other. Thread-safe: the
 * level is an atomic and each line is one write. */
#ifndef STRAUM_BASE_LOGFMT_H
#define STRAUM_BASE_LOGFMT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum logfmt_level { LOGFMT_DEBUG, LOGFMT_INFO, LOGFMT_WARN, LOGFMT_ERROR };

/* "debug", "info", "warn" (or "warning"), "error", any case. 0, or -1. */
int logfmt_parse_level(const char *name, enum logfmt_level *out);
/* Lines below level are not written (default info). Any thread. */
void logfmt_set_level(enum logfmt_level level);
bool logfmt_enabled(enum logfmt_level level);

/* One line built in place, written whole by logfmt_end:
 *     struct logfmt_line l;
 *     if (logfmt_begin(&l, LOGFMT_INFO, "committed")) {
 *         logfmt_int(&l, "rows", n);
 *         logfmt_end(&l);
 *     }
 * Values are quoted and escaped as logfmt needs; keys are the caller's
 * (plain words). A pair that would make the line longer than its buffer is
 * left out and the line ends with truncated=true. The calls after a begin
 * that returned false do nothing. */
struct logfmt_line {
    char buf[4096];
    size_t len;
    bool on, cut;
};
bool logfmt_begin(struct logfmt_line *l, enum logfmt_level level, const char *msg);
void logfmt_str(struct logfmt_line *l, const char *key, const char *value);
void logfmt_int(struct logfmt_line *l, const char *key, int64_t value);
void logfmt_printf(struct logfmt_line *l, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void logfmt_end(struct logfmt_line *l);
/* A line with a printf-formatted msg and no other fields. */
void logfmt_msg(enum logfmt_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A library's own message (printf-style, as libmicrohttpd hands it over),
 * trailing newlines and spaces trimmed, as one line with source=NAME. */
void logfmt_vfrom(enum logfmt_level level, const char *source, const char *fmt,
                     va_list ap) __attribute__((format(printf, 3, 0)));

#endif
