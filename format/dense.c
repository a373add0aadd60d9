/* dense.c -- the byte layout of a dense dim chunk (format.h, SPEC.md §4.3):
 * entries of one dim column at consecutive join key offsets, as few bytes
 * wide as its largest entry needs, with a checksum of the entries.
 *
 * The encoding is canonical (n is one past the last entry that is not 0,
 * the width the fewest bytes that hold the largest), so a chunk rebuilt
 * from the same entries has the same bytes: straum-dump verify compares
 * bytes. */
#include "format/bytes.h"
#include "format/checksum.h"
#include "format/format.h"

#include <stdio.h>

size_t format_dense_encode(const uint32_t *entries, uint8_t *out)
{
    uint32_t n = 0, max = 0;
    for (uint32_t i = 0; i < FORMAT_DENSE_CHUNK; i++) {
        if (entries[i] != FORMAT_DENSE_ABSENT)
            n = i + 1;
        if (entries[i] > max)
            max = entries[i];
    }
    if (n == 0)
        return 0;
    uint8_t width = max <= 0xFF ? 1 : max <= 0xFFFF ? 2 : 4;
    uint8_t *p = out + FORMAT_DENSE_HEADER_BYTES;
    for (uint32_t i = 0; i < n; i++)
        for (uint8_t b = 0; b < width; b++)
            *p++ = (uint8_t)(entries[i] >> (8 * b));
    size_t body = (size_t)n * width;
    out[0] = width;
    out[1] = out[2] = out[3] = 0;
    store_u32(out + 4, n);
    store_u64(out + 8, format_checksum(out + FORMAT_DENSE_HEADER_BYTES, body));
    return FORMAT_DENSE_HEADER_BYTES + body;
}

int format_dense_open(const void *bytes, size_t len, struct format_dense *out,
                      struct format_error *err)
{
    const uint8_t *b = bytes;
    if (len < FORMAT_DENSE_HEADER_BYTES) {
        snprintf(err->message, sizeof err->message, "a dense chunk of %zu bytes, under its header", len);
        return -1;
    }
    uint8_t width = b[0];
    uint32_t n = load_u32(b + 4);
    if ((width != 1 && width != 2 && width != 4) || b[1] || b[2] || b[3]) {
        snprintf(err->message, sizeof err->message, "a dense chunk's header is damaged (width %u)",
                 (unsigned)width);
        return -1;
    }
    if (n == 0 || n > FORMAT_DENSE_CHUNK || len != FORMAT_DENSE_HEADER_BYTES + (size_t)n * width) {
        snprintf(err->message, sizeof err->message,
                 "a dense chunk of %zu bytes says %u entries of %u bytes", len, n, (unsigned)width);
        return -1;
    }
    *out = (struct format_dense){b + FORMAT_DENSE_HEADER_BYTES, n, width, load_u64(b + 8)};
    return 0;
}

bool format_dense_check(const struct format_dense *d)
{
    return format_checksum(d->entries, (size_t)d->n * d->width) == d->checksum;
}

void format_dense_decode(const struct format_dense *d, uint32_t *out)
{
    for (uint32_t i = 0; i < FORMAT_DENSE_CHUNK; i++)
        out[i] = format_dense_get(d, i);
}
