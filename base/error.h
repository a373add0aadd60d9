/* error.h -- errors are values: a message a user can act on, written into
 * the caller's buffer, and -1 returned, so a check fails in one line:
 *
 *     if (n > limit)
 *         return error_fmt(why, whylen, "%zu values, more than %d", n, limit);
 *
 * Every layer's error (store_error, format_error, ask_error, ingest's and
 * sql's message buffers) is filled by these; a layer's own struct adds what
 * its callers branch on (store_error.kind, ask_error.status). */
#ifndef STRAUM_BASE_ERROR_H
#define STRAUM_BASE_ERROR_H

#include <stdarg.h>
#include <stddef.h>

/* Writes the printf-formatted message into msg[0..cap) (cut to fit, always
 * terminated), drops trailing newlines and spaces (libpq and libmicrohttpd
 * end their messages with one), and returns -1. msg may be NULL or cap 0:
 * nothing is written, -1 still returned. Cannot fail. */
int error_fmt(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* error_fmt with a va_list. */
int error_vfmt(char *msg, size_t cap, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
