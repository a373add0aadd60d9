/* pglz.c -- pg_lzcompress.c's pglz_decompress with a bounds check before
 * every read and write (see pglz.h for the contract). PostgreSQL checks the
 * tag's end only after reading it, since its input is its own; here the
 * input is the server's, so the check comes first. */
#include "ingest/pglz.h"

long pglz_decompress(const uint8_t *src, size_t slen, uint8_t *dst, size_t rawsize,
                     bool check_complete)
{
    size_t sp = 0, dp = 0;
    while (sp < slen && dp < rawsize) {
        unsigned ctrl = src[sp++];
        for (int k = 0; k < 8 && sp < slen && dp < rawsize; k++, ctrl >>= 1) {
            if (!(ctrl & 1)) {
                dst[dp++] = src[sp++];
                continue;
            }
            if (slen - sp < 2)
                return -1;
            size_t len = (size_t)(src[sp] & 0x0F) + 3;
            size_t off = (size_t)(src[sp] & 0xF0) << 4 | src[sp + 1];
            sp += 2;
            if (len == 18) {
                if (sp >= slen)
                    return -1;
                len += src[sp++];
            }
            if (off == 0 || off > dp)
                return -1;
            if (len > rawsize - dp)
                len = rawsize - dp;
            for (; len > 0; len--, dp++)
                dst[dp] = dst[dp - off]; /* byte by byte: an overlap repeats the pattern */
        }
    }
    if (check_complete && (dp != rawsize || sp != slen))
        return -1;
    return (long)dp;
}
