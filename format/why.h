/* why.h -- the codecs' reasons: a printf into the caller's `why` buffer
 * that returns -1, so a check fails in one line. Private to format/. */
#ifndef STRAUM_FORMAT_WHY_H
#define STRAUM_FORMAT_WHY_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

__attribute__((format(printf, 3, 4))) static inline int fail(char *why, size_t whylen,
                                                             const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -1;
}

#endif
