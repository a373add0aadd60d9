/* tsan_fail.h -- how a ThreadSanitizer program fails (they run without
 * Criterion, which does not run under TSan): a message and exit 1, where a
 * race is TSan's own exit 66. */
#ifndef STRAUM_TESTS_TSAN_FAIL_H
#define STRAUM_TESTS_TSAN_FAIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((format(printf, 1, 2), noreturn)) static void tsan_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

#endif
