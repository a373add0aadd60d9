/* size.c -- size options to bytes (size.h). */
#include "base/size.h"

#include <string.h>

int size_parse(const char *text, uint64_t *bytes)
{
    const char *p = text;
    if (*p < '0' || *p > '9')
        return -1;
    uint64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    int shift = 0;
    if (*p) {
        static const char units[] = "KMGT";
        const char *u = memchr(units, *p & ~0x20, 4);
        if (!u)
            return -1;
        shift = 10 * (int)(u - units + 1);
        p++;
        if (*p && strcmp(p, "iB") && strcmp(p, "B"))
            return -1;
    }
    if (v > UINT64_MAX >> shift)
        return -1;
    *bytes = v << shift;
    return 0;
}
