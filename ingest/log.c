/* log.c -- error messages, LSN text, the clock. Log lines themselves are
 * the store layer's logfmt writer (store_log_*, internal.h's log_info and
 * friends): one line per event, "ts=... level=info msg=... key=value", so
 * that journald, a terminal and a log shipper all read it. */
#include "ingest/internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t now_usec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

const char *lsn_text(uint64_t lsn, char buf[32])
{
    snprintf(buf, 32, "%" PRIX32 "/%08" PRIX32, (uint32_t)(lsn >> 32), (uint32_t)lsn);
    return buf;
}

bool lsn_parse(const char *text, uint64_t *lsn)
{
    unsigned hi, lo;
    char tail;
    if (sscanf(text, "%X/%X%c", &hi, &lo, &tail) != 2)
        return false;
    *lsn = (uint64_t)hi << 32 | lo;
    return true;
}

int ingest_fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    size_t n = strlen(err);
    while (n && err[n - 1] == '\n')
        err[--n] = '\0';
    return -1;
}
