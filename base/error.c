/* error.c -- filling an error message (error.h). */
#include "base/error.h"

#include <stdio.h>
#include <string.h>

int error_vfmt(char *msg, size_t cap, const char *fmt, va_list ap)
{
    if (!msg || !cap)
        return -1;
    vsnprintf(msg, cap, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    return -1;
}

int error_fmt(char *msg, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vfmt(msg, cap, fmt, ap);
    va_end(ap);
    return -1;
}
