/* lsn.c -- WAL positions as text (lsn.h). */
#include "base/lsn.h"

#include <inttypes.h>
#include <stdio.h>

const char *lsn_text(uint64_t lsn, char buf[LSN_TEXT_BYTES])
{
    snprintf(buf, LSN_TEXT_BYTES, "%" PRIX32 "/%08" PRIX32, (uint32_t)(lsn >> 32), (uint32_t)lsn);
    return buf;
}

/* 1 to 8 hex digits up to stop; the pointer after them, or NULL. */
static const char *hex32(const char *s, char stop, uint32_t *out)
{
    uint32_t v = 0;
    int n = 0;
    for (; *s && *s != stop; s++, n++) {
        int d = *s >= '0' && *s <= '9'   ? *s - '0'
                : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
                : *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
                                         : -1;
        if (d < 0 || n == 8)
            return NULL;
        v = v << 4 | (uint32_t)d;
    }
    if (n == 0 || *s != stop)
        return NULL;
    *out = v;
    return s;
}

bool lsn_parse(const char *text, uint64_t *lsn)
{
    uint32_t hi, lo;
    const char *p = hex32(text, '/', &hi);
    if (!p || !hex32(p + 1, '\0', &lo))
        return false;
    *lsn = (uint64_t)hi << 32 | lo;
    return true;
}
