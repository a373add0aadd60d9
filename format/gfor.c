/* gfor.c -- GFOR: an i64 column as a frame of reference per group.
 *
 * Directory: base = the smallest value, bits = abits, the width of the
 * largest group minimum - base (0 to 64). Data (none when n = 0):
 *
 *   offset       size          field
 *   0            1             pbits: the width of a stream position (<= 35)
 *   1            7             0
 *   8            ceil(G*E/8)   the group table, G = ceil(n / 32) entries of
 *                              E = abits + 8 + pbits bits, bit-packed (as
 *                              bitpack.h): entry g is abits bits m_g (group
 *                              g's smallest value - base), 7 bits w_g (0 to
 *                              64), 1 bit f_g (1 when the group's first
 *                              value is its smallest), pbits bits p_g
 *   8 + that     ceil(B/8)     the stream: group g's values, each value -
 *                              base - m_g in w_g bits, from stream bit p_g;
 *                              p_0 = 0 and p_g+1 = p_g + c_g * w_g, c_g the
 *                              group's count (32, the last group's the rest);
 *                              B the stream's bits, unused high bits 0
 *
 * Value i is base + m_g + the w_g bits at stream bit p_g + (i % 32) * w_g,
 * g = i / 32, all mod 2^64. Group g's values are 32 * g to 32 * g + 31.
 *
 * Why a group of 32: sized on the full-scale taxi store's rollup codes and
 * running rows, groups of 16, 32 and 64 take 46.1, 44.8 and 46.9 MB
 * (BITPACK 79.2): smaller groups spend more on the table, larger ones
 * widen the groups that cross a rollup row's end (its codes and running
 * rows start again there). The cost of reading value i does not depend
 * on it. Why the positions are stored though they are sums: so that value
 * i is found without summing the widths before it. Why f_g: a binary
 * search over ascending values (format_seek_upper) first finds its group
 * by the groups' first values; where f_g is set (a group inside one
 * rollup row) that value is base + m_g, read from the dense table alone,
 * not from the stream: half the loads of such a search.
 *
 * Readers in place (format_seek_get) trust no entry: a position past the
 * stream is clamped to its last byte and a width to 64, so hostile bytes
 * give wrong values (which checksums catch), never a load outside the
 * block. gfor_decode checks each group it reads; gfor_check_data (verify)
 * checks them all.
 */
#include "base/error.h"
#include "format/gfor.h"

#include "format/bitpack.h"
#include "format/bytes.h"
#include "format/format.h"

#include <string.h>

#define G FORMAT_GFOR_GROUP

static uint32_t group_count(uint32_t n) { return n ? (n - 1) / G + 1 : 0; }

/* The smallest and largest of values [s, e), as unsigned offsets from
 * base (base <= every value, so no offset wraps). */
static void group_range(const uint8_t *v, uint32_t s, uint32_t e, uint64_t base, uint64_t *lo,
                        uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (uint32_t i = s; i < e; i++) {
        uint64_t x = load_u64(v + (size_t)i * 8) - base;
        *lo = x < *lo ? x : *lo;
        *hi = x > *hi ? x : *hi;
    }
}

static uint32_t group_end(uint32_t g, uint32_t n) { return n - g * G < G ? n : (g + 1) * G; }

void gfor_plan(const uint8_t *v, uint32_t n, struct gfor_plan *p)
{
    *p = (struct gfor_plan){0};
    if (n == 0)
        return;
    int64_t min = INT64_MAX;
    for (uint32_t i = 0; i < n; i++) {
        int64_t x = i64_from_bits(load_u64(v + (size_t)i * 8));
        min = x < min ? x : min;
    }
    const uint64_t base = i64_bits(min);
    uint64_t mmax = 0, bits = 0;
    for (uint32_t g = 0, ng = group_count(n); g < ng; g++) {
        uint64_t lo, hi;
        uint32_t s = g * G, e = group_end(g, n);
        group_range(v, s, e, base, &lo, &hi);
        mmax = lo > mmax ? lo : mmax;
        bits += (uint64_t)(e - s) * bitpack_width(hi - lo);
    }
    p->base = min;
    p->abits = bitpack_width(mmax);
    p->pbits = bitpack_width(bits);
    const uint64_t ebits = p->abits + GFOR_FIXED_BITS + p->pbits;
    p->size = GFOR_HEADER + (group_count(n) * ebits + 7) / 8 + (bits + 7) / 8;
}

uint64_t gfor_max_length(uint32_t n)
{
    /* Entries of 64 + 8 + 35 bits, values of 64. */
    return n ? GFOR_HEADER + (group_count(n) * (64 + GFOR_FIXED_BITS + GFOR_POS_BITS_MAX) + 7) / 8 +
                   (uint64_t)n * 8
             : 0;
}

/* Appends an entry of up to 64 + 8 + 35 bits: bitpack_put takes 64. */
static void put_wide(struct bitpack_writer *w, uint64_t lo, unsigned lobits, uint64_t hi,
                     unsigned hibits)
{
    if (lobits)
        bitpack_put(w, lo, lobits);
    if (hibits)
        bitpack_put(w, hi, hibits);
}

void gfor_write(const uint8_t *v, uint32_t n, const struct gfor_plan *p, uint8_t *out)
{
    if (n == 0)
        return;
    memset(out, 0, GFOR_HEADER);
    out[0] = (uint8_t)p->pbits;
    const uint32_t ng = group_count(n);
    const uint64_t base = i64_bits(p->base);
    const unsigned ebits = p->abits + GFOR_FIXED_BITS + p->pbits;
    uint8_t *stream = out + GFOR_HEADER + ((uint64_t)ng * ebits + 7) / 8;
    struct bitpack_writer wt, ws;
    bitpack_writer_init(&wt, out + GFOR_HEADER);
    bitpack_writer_init(&ws, stream);
    uint64_t pos = 0;
    for (uint32_t g = 0; g < ng; g++) {
        uint64_t lo, hi;
        uint32_t s = g * G, e = group_end(g, n);
        group_range(v, s, e, base, &lo, &hi);
        unsigned w = bitpack_width(hi - lo);
        uint64_t first_is_min = load_u64(v + (size_t)s * 8) - base == lo;
        /* width, flag and position together: 8 + pbits <= 43 bits */
        put_wide(&wt, lo, p->abits, (uint64_t)w | first_is_min << 7 | pos << GFOR_FIXED_BITS,
                 GFOR_FIXED_BITS + p->pbits);
        if (w)
            for (uint32_t i = s; i < e; i++)
                bitpack_put(&ws, load_u64(v + (size_t)i * 8) - base - lo, w);
        pos += (uint64_t)(e - s) * w;
    }
    bitpack_flush(&wt);
    bitpack_flush(&ws);
}

int gfor_open(unsigned abits, uint32_t n, const uint8_t *src, uint32_t length,
              struct gfor_table *t, char *why, size_t whylen)
{
    memset(t, 0, sizeof *t);
    if (n == 0)
        return length == 0 ? 0 : error_fmt(why, whylen, "gfor column of 0 values has %u bytes",
                                           length);
    if (abits > 64 || length < GFOR_HEADER)
        return error_fmt(why, whylen, "gfor column of %u bytes and minimum width %u", length,
                         abits);
    for (unsigned k = 1; k < GFOR_HEADER; k++)
        if (src[k])
            return error_fmt(why, whylen, "gfor header has reserved bytes set");
    t->abits = abits;
    t->pbits = src[0];
    if (t->pbits > GFOR_POS_BITS_MAX)
        return error_fmt(why, whylen, "gfor position width %u exceeds %u", t->pbits,
                         GFOR_POS_BITS_MAX);
    t->ebits = abits + GFOR_FIXED_BITS + t->pbits;
    uint64_t table = ((uint64_t)group_count(n) * t->ebits + 7) / 8;
    if (GFOR_HEADER + table > length)
        return error_fmt(why, whylen, "gfor table of %u groups passes the column's %u bytes",
                         group_count(n), length);
    t->entries = src + GFOR_HEADER;
    t->stream = t->entries + table;
    t->stream_len = length - GFOR_HEADER - table;
    return 0;
}

/* The w (<= 64) bits at bit `bit` of p[0..len), zeros past len. */
static inline uint64_t bits_at(const uint8_t *p, uint64_t len, uint64_t bit, unsigned w)
{
    uint64_t byte = bit / 8, x;
    unsigned shift = (unsigned)(bit % 8);
    uint8_t next;
    if (byte + 9 <= len) {
        x = load_u64(p + byte);
        next = p[byte + 8];
    } else {
        uint8_t buf[9] = {0};
        if (byte < len)
            memcpy(buf, p + byte, len - byte);
        x = load_u64(buf);
        next = buf[8];
    }
    x >>= shift;
    if (shift + w > 64)
        x |= (uint64_t)next << (64 - shift);
    return x & bitpack_mask(w);
}

struct gfor_entry {
    uint64_t min, pos;
    unsigned w;
    bool min_first;
};

static struct gfor_entry entry_at(const struct gfor_table *t, uint32_t n, uint32_t g)
{
    uint64_t len = ((uint64_t)group_count(n) * t->ebits + 7) / 8, bit = (uint64_t)g * t->ebits;
    uint64_t wp = bits_at(t->entries, len, bit + t->abits, GFOR_FIXED_BITS + t->pbits);
    return (struct gfor_entry){bits_at(t->entries, len, bit, t->abits), wp >> GFOR_FIXED_BITS,
                               (unsigned)(wp & 127), (wp >> 7) & 1};
}

/* Checks group g's entry against the stream: its width and its values'
 * bits inside it. */
static int check_entry(const struct gfor_table *t, uint32_t n, uint32_t g,
                       const struct gfor_entry *e, char *why, size_t whylen)
{
    if (e->w > 64)
        return error_fmt(why, whylen, "gfor group %u has width %u", g, e->w);
    uint64_t end = e->pos + (uint64_t)(group_end(g, n) - g * G) * e->w;
    if (end > t->stream_len * 8)
        return error_fmt(why, whylen, "gfor group %u's values pass its stream (bit %llu of %llu)",
                         g, (unsigned long long)end, (unsigned long long)t->stream_len * 8);
    return 0;
}

int gfor_check_data(unsigned abits, uint32_t n, const uint8_t *src, uint32_t length, char *why,
                    size_t whylen)
{
    struct gfor_table t;
    if (gfor_open(abits, n, src, length, &t, why, whylen) < 0)
        return -1;
    uint64_t pos = 0;
    for (uint32_t g = 0, ng = group_count(n); g < ng; g++) {
        struct gfor_entry e = entry_at(&t, n, g);
        if (e.pos != pos)
            return error_fmt(why, whylen, "gfor group %u starts at stream bit %llu, not %llu", g,
                             (unsigned long long)e.pos, (unsigned long long)pos);
        if (check_entry(&t, n, g, &e, why, whylen) < 0)
            return -1;
        uint64_t lo = UINT64_MAX;
        for (uint32_t i = 0, c = group_end(g, n) - g * G; i < c; i++) {
            uint64_t off = bits_at(t.stream, t.stream_len, pos + (uint64_t)i * e.w, e.w);
            lo = off < lo ? off : lo;
        }
        if (lo != 0)
            return error_fmt(why, whylen, "gfor group %u's values lie above its minimum", g);
        if (e.min_first != (bits_at(t.stream, t.stream_len, pos, e.w) == 0))
            return error_fmt(why, whylen, "gfor group %u's flag says its first value is%s its "
                             "smallest", g, e.min_first ? "" : " not");
        pos += (uint64_t)(group_end(g, n) - g * G) * e.w;
    }
    if ((pos + 7) / 8 != t.stream_len)
        return error_fmt(why, whylen, "gfor groups take %llu stream bits of %llu bytes",
                         (unsigned long long)pos, (unsigned long long)t.stream_len);
    return 0;
}

int gfor_decode(unsigned abits, int64_t base, uint32_t n, uint32_t first, uint32_t count,
                const uint8_t *src, uint32_t length, uint8_t *out, char *why, size_t whylen)
{
    struct gfor_table t;
    if (gfor_open(abits, n, src, length, &t, why, whylen) < 0)
        return -1;
    const uint64_t b = i64_bits(base);
    uint32_t i = first, end = first + count;
    while (i < end) {
        uint32_t g = i / G, stop = group_end(g, n) < end ? group_end(g, n) : end;
        struct gfor_entry e = entry_at(&t, n, g);
        if (check_entry(&t, n, g, &e, why, whylen) < 0)
            return -1;
        uint64_t add = b + e.min, bit = e.pos + (uint64_t)(i - g * G) * e.w;
        for (; i < stop; i++, bit += e.w)
            store_u64(out + (size_t)(i - first) * 8,
                      add + bits_at(t.stream, t.stream_len, bit, e.w));
    }
    return 0;
}
