/* column.c -- the column codecs: choice, encoding, checks and decoding.
 *
 * Every codec describes its bytes with three directory fields (codec, bits,
 * base) and the encoded length; all arithmetic on values is done on unsigned
 * 64- or 128-bit integers, wrapping, so that decoding hostile bytes can give
 * wrong numbers (caught by checksums) but never undefined behaviour.
 *
 * RAW      n elements in little-endian order, n * size bytes, readable in
 *          place. bits = 0, base = 0.
 * BITPACK  frame of reference: base = the smallest value, and each value is
 *          stored as value - base (an unsigned integer) in `bits` bits, the
 *          width of max - min, bit-packed (bitpack.h). Length
 *          ceil(n * bits / 8). I64 and I128; an I128 column qualifies only
 *          when its minimum fits in int64 (base is an i64 field) and
 *          max - min fits in 64 bits. Decoding: v = base + packed, wrapping.
 * DELTA    I64 only; for sorted or slowly moving columns (bucket offsets,
 *          timestamps). base = the first value v[0]. The deltas
 *          d[i] = v[i] - v[i-1] for i = 1..n-1 (mod 2^64, read as int64) get
 *          a frame of reference of their own: the data starts with the
 *          smallest delta dmin (8 bytes, int64 LE), followed by the n - 1
 *          values d[i] - dmin (mod 2^64) bit-packed at `bits` = the width of
 *          dmax - dmin. Length 0 for n = 0, else 8 + ceil((n-1) * bits / 8);
 *          a column of evenly spaced values packs at 0 bits into 8 bytes.
 *          Decoding: v[0] = base, v[i] = v[i-1] + dmin + packed[i-1], all
 *          mod 2^64. (Subtracting dmin already makes every delta unsigned;
 *          zigzag coding first would only double their range.)
 * LZ4      LZ4 block compression of the RAW bytes (LZ4_compress_default);
 *          decompression must give exactly n * size bytes. bits = 0,
 *          base = 0. Raw sizes above LZ4_MAX_INPUT_SIZE cannot use it.
 * PFOR     I64 only; patched frame of reference, for columns of mostly small
 *          values with a few large ones (value-count run rows: mostly 1).
 *          base = the smallest value, u[i] = v[i] - base (mod 2^64). The
 *          data: u32 nexc, u8 xbits, 3 zero bytes; then the n slots, the low
 *          `bits` bits of each u[i], bit-packed; then the nexc exception
 *          positions, strictly ascending, bit-packed at pbits = the width of
 *          n - 1; then each exception's high part u[p] >> bits, bit-packed at
 *          xbits. A value is an exception when u[i] does not fit in `bits`
 *          bits. bits minimises the length: 8 + ceil(n * bits / 8) +
 *          ceil(nexc * pbits / 8) + ceil(nexc * xbits / 8). n = 0: length 0.
 *          Decoding: v[i] = base + slot[i] + (high << bits) at an exception.
 * DPFOR    I64 only; deltas with patches, for columns ascending in stretches
 *          (value-count run codes: ascending within a cell, back down at the
 *          next cell). base = the smallest value. The data: u32 nexc, u8
 *          xbits, 3 zero bytes, i64 dmin; then n slots of `bits` bits, then
 *          nexc positions (as PFOR), then each exception's value v[p] - base
 *          at xbits (the width of max - min). Position 0 and every multiple
 *          of 128 are exceptions, and so is every i whose delta
 *          d = v[i] - v[i-1] (mod 2^64, signed) is below dmin or whose
 *          d - dmin does not fit in `bits` bits; other slots hold d - dmin,
 *          an exception's slot 0. Decoding: v[p] = base + x at an exception,
 *          else v[i] = v[i-1] + dmin + slot[i]; a slice starts at the last
 *          exception at or before it, at most 127 values back. The encoder
 *          tries dmin = the smallest non-negative delta and the smallest
 *          delta, bits minimising the length 16 + the three packed parts.
 *          n = 0: length 0.
 *          Both: decoders check the header's zero bytes, nexc <= n, xbits
 *          (<= 64, >= 1 and bits + xbits <= 64 for PFOR with exceptions),
 *          the exact length, and every position (below n, strictly
 *          ascending; DPFOR: the first 0, gaps at most 128, n - last at most
 *          128) whenever they decode anything, even a slice.
 * RICE, DRICE  Golomb-Rice codes: format/rice.c.
 * GFOR     I64 only; a frame of reference per group of 32: format/gfor.c.
 *
 * The SMALLEST policy sizes BITPACK, DELTA, PFOR and DPFOR arithmetically,
 * then lets LZ4 compress straight into the output with room for one byte
 * less than the best so far: no scratch memory, and ties go to RAW,
 * BITPACK, DELTA, PFOR, DPFOR, LZ4 in that order. A column marked seekable
 * takes RAW, BITPACK or GFOR (ties in that order): the codecs read by
 * position in place. GFOR is tried for those only: it decodes a value at a
 * time, slower than BITPACK's unpacking for columns decoded whole.
 */
#include "base/error.h"
#include "base/scratch.h"
#include "format/column.h"

#include "format/bitpack.h"
#include "format/bytes.h"
#include "format/gfor.h"
#include "format/rice.h"

#include <limits.h>
#include <lz4.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* No LZ4 block expands by more than this: a sequence of k+3 compressed bytes
 * (token, offset, k length bytes) yields at most 19 + 255k bytes, and
 * literals are copied one for one. It bounds what a hostile block can make
 * a decoder allocate to 256 times its own size. */
#define LZ4_MAX_RATIO 256u

size_t format_type_size(enum format_type type)
{
    switch (type) {
    case FORMAT_I64:
    case FORMAT_F64:
        return 8;
    case FORMAT_I128:
        return 16;
    }
    return 0;
}

const char *format_codec_name(enum format_codec codec)
{
    switch (codec) {
    case FORMAT_RAW:
        return "raw";
    case FORMAT_BITPACK:
        return "bitpack";
    case FORMAT_DELTA:
        return "delta";
    case FORMAT_LZ4:
        return "lz4";
    case FORMAT_PFOR:
        return "pfor";
    case FORMAT_DPFOR:
        return "dpfor";
    case FORMAT_RICE:
        return "rice";
    case FORMAT_DRICE:
        return "drice";
    case FORMAT_GFOR:
        return "gfor";
    }
    return "unknown";
}

bool format_codec_seeks(enum format_codec codec)
{
    return codec == FORMAT_RAW || codec == FORMAT_BITPACK || codec == FORMAT_RICE ||
           codec == FORMAT_DRICE || codec == FORMAT_GFOR;
}

bool format_codec_in_place(enum format_codec codec)
{
    return codec == FORMAT_RAW || codec == FORMAT_BITPACK || codec == FORMAT_GFOR;
}

const char *column_type_name(unsigned type)
{
    switch (type) {
    case FORMAT_I64:
        return "i64";
    case FORMAT_I128:
        return "i128";
    case FORMAT_F64:
        return "f64";
    }
    return "unknown";
}

static bool type_known(unsigned type)
{
    return type == FORMAT_I64 || type == FORMAT_I128 || type == FORMAT_F64;
}

static bool codec_known(unsigned codec) { return codec <= FORMAT_CODEC_LAST; }

static bool codec_fits_type(unsigned codec, unsigned type)
{
    switch (codec) {
    case FORMAT_RAW:
    case FORMAT_LZ4:
        return true;
    case FORMAT_BITPACK:
    case FORMAT_PFOR:
        return type == FORMAT_I64 || type == FORMAT_I128;
    case FORMAT_DELTA:
    case FORMAT_DPFOR:
    case FORMAT_RICE:
    case FORMAT_DRICE:
    case FORMAT_GFOR:
        return type == FORMAT_I64;
    }
    return false;
}

/* PFOR and DPFOR: header bytes, and the stride of DPFOR's anchors. */
#define PFOR_HEADER 8u
#define DPFOR_HEADER 16u
#define DPFOR_ANCHOR 128u

static uint64_t lz4_bound(uint64_t raw) { return raw + raw / 255 + 16; }

uint64_t column_bound(enum format_type type, uint32_t n)
{
    uint64_t raw = (uint64_t)n * format_type_size(type), bound = raw;
    if (raw <= LZ4_MAX_INPUT_SIZE && lz4_bound(raw) > bound)
        bound = lz4_bound(raw);
    /* A forced PFOR takes at most 8 + 8n bytes (at 64 bits: no exceptions);
     * a forced DPFOR at most 16 + 8n and its anchors, 12 bytes each. */
    uint64_t patched = type == FORMAT_I64 && n ? DPFOR_HEADER + raw +
                                                     12 * ((uint64_t)(n - 1) / DPFOR_ANCHOR + 1)
                                               : 0;
    /* A forced RICE or DRICE code is at most 97 bits (an escape of 64). */
    uint64_t rice = type == FORMAT_I64 ? rice_min_length(n) + bitpack_bytes(n, 97) : 0;
    if (rice > patched)
        patched = rice;
    uint64_t gfor = type == FORMAT_I64 ? gfor_max_length(n) : 0;
    if (gfor > patched)
        patched = gfor;
    return patched > bound ? patched : bound;
}

/* ---- Planning: the size each codec would take ---------------------------- */

static uint64_t get_u64(const uint8_t *v, size_t i) { return load_u64(v + i * 8); }

static format_i128 get_i128(const uint8_t *v, size_t i)
{
    format_i128 x;
    memcpy(&x, v + i * 16, 16);
    return x;
}

struct plan {
    bool ok;       /* the codec can hold these values */
    unsigned bits;
    int64_t base;
    int64_t dmin;  /* DELTA, DPFOR: the smallest delta (DPFOR: of the slots) */
    uint32_t nexc; /* PFOR, DPFOR: exceptions */
    unsigned xbits;
    uint64_t size; /* encoded bytes */
};

static uint64_t patched_size(unsigned header, uint32_t n, unsigned bits, uint64_t nexc,
                             unsigned xbits)
{
    return header + bitpack_bytes(n, bits) + bitpack_bytes(nexc, bitpack_width(n - 1)) +
           bitpack_bytes(nexc, xbits);
}

/* The smallest and largest of n > 0 i64 values. */
static void i64_range(const uint8_t *v, uint32_t n, int64_t *min, int64_t *max)
{
    *min = INT64_MAX;
    *max = INT64_MIN;
    for (uint32_t i = 0; i < n; i++) {
        int64_t x = i64_from_bits(get_u64(v, i));
        if (x < *min)
            *min = x;
        if (x > *max)
            *max = x;
    }
}

static void plan_bitpack_i64(const uint8_t *v, uint32_t n, struct plan *p)
{
    *p = (struct plan){.ok = true};
    if (n == 0)
        return;
    int64_t min, max;
    i64_range(v, n, &min, &max);
    p->base = min;
    p->bits = bitpack_width(i64_bits(max) - i64_bits(min));
    p->size = bitpack_bytes(n, p->bits);
}

static void plan_bitpack_i128(const uint8_t *v, uint32_t n, struct plan *p)
{
    *p = (struct plan){.ok = true};
    if (n == 0)
        return;
    format_i128 min = get_i128(v, 0), max = min;
    for (uint32_t i = 1; i < n; i++) {
        format_i128 x = get_i128(v, i);
        if (x < min)
            min = x;
        if (x > max)
            max = x;
    }
    format_u128 range = (format_u128)max - (format_u128)min;
    if (min < INT64_MIN || min > INT64_MAX || range > UINT64_MAX) {
        p->ok = false;
        return;
    }
    p->base = (int64_t)min;
    p->bits = bitpack_width((uint64_t)range);
    p->size = bitpack_bytes(n, p->bits);
}

static void plan_delta(const uint8_t *v, uint32_t n, struct plan *p)
{
    *p = (struct plan){.ok = true};
    if (n == 0)
        return;
    p->base = i64_from_bits(get_u64(v, 0));
    p->size = 8;
    if (n == 1)
        return;
    int64_t dmin = INT64_MAX, dmax = INT64_MIN;
    uint64_t prev = get_u64(v, 0);
    for (uint32_t i = 1; i < n; i++) {
        uint64_t cur = get_u64(v, i);
        int64_t d = i64_from_bits(cur - prev);
        prev = cur;
        if (d < dmin)
            dmin = d;
        if (d > dmax)
            dmax = d;
    }
    p->dmin = dmin;
    p->bits = bitpack_width(i64_bits(dmax) - i64_bits(dmin));
    p->size = 8 + bitpack_bytes(n - 1, p->bits);
}

static void plan_pfor(const uint8_t *v, uint32_t n, struct plan *p)
{
    *p = (struct plan){.ok = true};
    if (n == 0)
        return;
    int64_t min, max;
    i64_range(v, n, &min, &max);
    uint64_t hist[65] = {0}, base = i64_bits(min), umax = i64_bits(max) - base;
    for (uint32_t i = 0; i < n; i++)
        hist[bitpack_width(get_u64(v, i) - base)]++;
    p->base = min;
    p->size = UINT64_MAX;
    uint64_t above = n; /* values wider than b bits */
    for (unsigned b = 0; b <= 64; b++) {
        above -= hist[b];
        unsigned xbits = b < 64 ? bitpack_width(umax >> b) : 0;
        uint64_t size = patched_size(PFOR_HEADER, n, b, above, xbits);
        if (size < p->size) {
            p->size = size;
            p->bits = b;
            p->nexc = (uint32_t)above;
            p->xbits = xbits;
        }
    }
}

/* Whether DPFOR with this plan's dmin and bits patches value i (i > 0),
 * whose delta from the one before is d. */
static bool dpfor_exception(uint32_t i, int64_t d, const struct plan *p)
{
    if (i % DPFOR_ANCHOR == 0 || d < p->dmin)
        return true;
    return p->bits < 64 && (i64_bits(d) - i64_bits(p->dmin)) >> p->bits != 0;
}

static void plan_dpfor(const uint8_t *v, uint32_t n, struct plan *p)
{
    *p = (struct plan){.ok = true};
    if (n == 0)
        return;
    int64_t min = INT64_MAX, max = INT64_MIN;
    int64_t dmin_all = INT64_MAX, dmin_pos = INT64_MAX; /* non-anchor deltas */
    bool any = false, any_pos = false;
    for (uint32_t i = 0; i < n; i++) {
        int64_t x = i64_from_bits(get_u64(v, i));
        if (x < min)
            min = x;
        if (x > max)
            max = x;
        if (i % DPFOR_ANCHOR == 0)
            continue;
        int64_t d = i64_from_bits(get_u64(v, i) - get_u64(v, i - 1));
        any = true;
        if (d < dmin_all)
            dmin_all = d;
        if (d >= 0 && d < dmin_pos) {
            dmin_pos = d;
            any_pos = true;
        }
    }
    p->base = min;
    p->xbits = bitpack_width(i64_bits(max) - i64_bits(min));
    const uint64_t anchors = (n - 1) / DPFOR_ANCHOR + 1;
    /* Without deltas every value is an anchor: 0 bits. */
    p->nexc = (uint32_t)anchors;
    if (!any) {
        p->size = patched_size(DPFOR_HEADER, n, 0, anchors, p->xbits);
        return;
    }
    p->size = UINT64_MAX;
    int64_t cands[2] = {any_pos ? dmin_pos : dmin_all, dmin_all};
    for (int c = 0; c < (cands[0] == cands[1] ? 1 : 2); c++) {
        uint64_t hist[65] = {0}, below = 0;
        for (uint32_t i = 1; i < n; i++) {
            if (i % DPFOR_ANCHOR == 0)
                continue;
            int64_t d = i64_from_bits(get_u64(v, i) - get_u64(v, i - 1));
            if (d < cands[c])
                below++;
            else
                hist[bitpack_width(i64_bits(d) - i64_bits(cands[c]))]++;
        }
        uint64_t above = n - anchors - below; /* slots wider than b bits */
        for (unsigned b = 0; b <= 64; b++) {
            above -= hist[b];
            uint64_t nexc = anchors + below + above;
            uint64_t size = patched_size(DPFOR_HEADER, n, b, nexc, p->xbits);
            if (size < p->size) {
                p->size = size;
                p->bits = b;
                p->dmin = cands[c];
                p->nexc = (uint32_t)nexc;
            }
        }
    }
}

/* ---- Writers --------------------------------------------------------------- */

static void write_bitpack_i64(const uint8_t *v, uint32_t n, const struct plan *p, uint8_t *out)
{
    struct bitpack_writer w;
    bitpack_writer_init(&w, out);
    uint64_t base = i64_bits(p->base);
    if (p->bits)
        for (uint32_t i = 0; i < n; i++)
            bitpack_put(&w, get_u64(v, i) - base, p->bits);
    bitpack_flush(&w);
}

static void write_bitpack_i128(const uint8_t *v, uint32_t n, const struct plan *p, uint8_t *out)
{
    struct bitpack_writer w;
    bitpack_writer_init(&w, out);
    format_u128 base = (format_u128)(format_i128)p->base;
    if (p->bits)
        for (uint32_t i = 0; i < n; i++)
            bitpack_put(&w, (uint64_t)((format_u128)get_i128(v, i) - base), p->bits);
    bitpack_flush(&w);
}

static void write_delta(const uint8_t *v, uint32_t n, const struct plan *p, uint8_t *out)
{
    if (n == 0)
        return;
    store_i64(out, p->dmin);
    struct bitpack_writer w;
    bitpack_writer_init(&w, out + 8);
    uint64_t dmin = i64_bits(p->dmin);
    if (p->bits) {
        uint64_t prev = get_u64(v, 0);
        for (uint32_t i = 1; i < n; i++) {
            uint64_t cur = get_u64(v, i);
            bitpack_put(&w, cur - prev - dmin, p->bits);
            prev = cur;
        }
    }
    bitpack_flush(&w);
}

static void write_pfor(const uint8_t *v, uint32_t n, const struct plan *p, uint8_t *out)
{
    if (n == 0)
        return;
    memset(out, 0, PFOR_HEADER);
    store_u32(out, p->nexc);
    out[4] = (uint8_t)p->xbits;
    const uint64_t base = i64_bits(p->base);
    const unsigned b = p->bits, pbits = bitpack_width(n - 1);
    const uint64_t mask = b >= 64 ? UINT64_MAX : ((uint64_t)1 << b) - 1;
    struct bitpack_writer w;
    uint8_t *slots = out + PFOR_HEADER, *pos = slots + bitpack_bytes(n, b);
    uint8_t *high = pos + bitpack_bytes(p->nexc, pbits);
    bitpack_writer_init(&w, slots);
    if (b)
        for (uint32_t i = 0; i < n; i++)
            bitpack_put(&w, (get_u64(v, i) - base) & mask, b);
    bitpack_flush(&w);
    if (p->nexc == 0)
        return;
    bitpack_writer_init(&w, pos);
    for (uint32_t i = 0; i < n; i++)
        if ((get_u64(v, i) - base) >> b)
            bitpack_put(&w, i, pbits);
    bitpack_flush(&w);
    bitpack_writer_init(&w, high);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t h = (get_u64(v, i) - base) >> b;
        if (h)
            bitpack_put(&w, h, p->xbits);
    }
    bitpack_flush(&w);
}

static void write_dpfor(const uint8_t *v, uint32_t n, const struct plan *p, uint8_t *out)
{
    if (n == 0)
        return;
    memset(out, 0, DPFOR_HEADER);
    store_u32(out, p->nexc);
    out[4] = (uint8_t)p->xbits;
    store_i64(out + 8, p->dmin);
    const uint64_t base = i64_bits(p->base), dmin = i64_bits(p->dmin);
    const unsigned pbits = bitpack_width(n - 1);
    uint8_t *slots = out + DPFOR_HEADER, *pos = slots + bitpack_bytes(n, p->bits);
    uint8_t *abs = pos + bitpack_bytes(p->nexc, pbits);
    struct bitpack_writer ws, wp, wa;
    bitpack_writer_init(&ws, slots);
    bitpack_writer_init(&wp, pos);
    bitpack_writer_init(&wa, abs);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t cur = get_u64(v, i);
        int64_t d = i ? i64_from_bits(cur - get_u64(v, i - 1)) : 0;
        if (i == 0 || dpfor_exception(i, d, p)) {
            if (p->bits)
                bitpack_put(&ws, 0, p->bits);
            if (pbits)
                bitpack_put(&wp, i, pbits);
            if (p->xbits)
                bitpack_put(&wa, cur - base, p->xbits);
        } else if (p->bits) {
            bitpack_put(&ws, i64_bits(d) - dmin, p->bits);
        }
    }
    bitpack_flush(&ws);
    bitpack_flush(&wp);
    bitpack_flush(&wa);
}

/* Compresses into out with at most cap bytes; 0 if it does not fit. */
static uint64_t write_lz4(const uint8_t *src, uint64_t raw, uint8_t *out, uint64_t cap)
{
    int dcap = cap > INT_MAX ? INT_MAX : (int)cap;
    if (dcap <= 0)
        return 0;
    int r = LZ4_compress_default((const char *)src, (char *)out, (int)raw, dcap);
    return r > 0 ? (uint64_t)r : 0;
}

/* The offsets v[i] - base of an i128 column that bitpack can hold (its
 * plan bp) in fewer than 64 bits, as i64 values whose smallest is 0: PFOR
 * codes them as an i64 column of base 0 and the directory keeps the i128
 * column's base. NULL when they do not fit, or without memory (PFOR is then
 * not tried). */
static uint8_t *i128_offsets(const uint8_t *v, uint32_t n, const struct plan *bp)
{
    if (!bp->ok || n == 0 || bp->bits > 63)
        return NULL;
    uint8_t *u = malloc((size_t)n * 8);
    if (!u)
        return NULL;
    format_u128 base = (format_u128)(format_i128)bp->base;
    for (uint32_t i = 0; i < n; i++)
        store_u64(u + (size_t)i * 8, (uint64_t)((format_u128)get_i128(v, i) - base));
    return u;
}

static int encode_planned(const struct format_column *col, enum format_policy policy, int codec,
                          const struct plan *bp128, const uint8_t *offsets, uint8_t *out,
                          size_t cap, struct column_encoding *enc, char *why, size_t whylen);

/* The SMALLEST policy's step: codec replaces the choice so far when it can
 * hold the values in fewer bytes. */
static void prefer(struct column_encoding *enc, uint64_t *size, enum format_codec codec,
                   bool ok, uint64_t codec_size)
{
    if (ok && codec_size < *size) {
        enc->codec = codec;
        *size = codec_size;
    }
}

int column_encode(const struct format_column *col, enum format_policy policy, int codec,
                  uint8_t *out, size_t cap, struct column_encoding *enc, char *why,
                  size_t whylen)
{
    struct plan bp128 = {0};
    uint8_t *offsets = NULL;
    if (col->type == FORMAT_I128) {
        plan_bitpack_i128(col->n ? col->values : NULL, col->n, &bp128);
        if (col->n > 0 && (codec == FORMAT_PFOR || (codec == COLUMN_CODEC_AUTO &&
                                                    policy == FORMAT_POLICY_SMALLEST))) {
            offsets = i128_offsets(col->values, col->n, &bp128);
            if (!offsets && bp128.ok && bp128.bits <= 63 && codec == FORMAT_PFOR)
                return error_fmt(why, whylen, "out of memory");
        }
    }
    int rc = encode_planned(col, policy, codec, &bp128, offsets, out, cap, enc, why, whylen);
    free(offsets);
    return rc;
}

/* encode_planned, with room ks for the rice plans' block widths (or NULL). */
static int encode_with(const struct format_column *col, enum format_policy policy, int codec,
                       const struct plan *bp128, const uint8_t *offsets, uint8_t *ks,
                       uint8_t *out, size_t cap, struct column_encoding *enc, char *why,
                       size_t whylen)
{
    static const uint8_t none[1];
    const unsigned type = col->type;
    const uint32_t n = col->n;
    const uint8_t *v = n ? (const uint8_t *)col->values : none;
    const uint64_t raw = (uint64_t)n * format_type_size(col->type);
    const bool lz4_ok = raw <= LZ4_MAX_INPUT_SIZE;

    struct plan bp = {0}, delta = {0}, pfor = {0}, dpfor = {0};
    struct rice_plan rice = {0}, drice = {0};
    struct gfor_plan gfor = {0};
    const uint8_t *pfor_values = v; /* what PFOR codes: i128 columns their offsets */
    if (type == FORMAT_I64) {
        plan_bitpack_i64(v, n, &bp);
        plan_delta(v, n, &delta);
        if (policy != FORMAT_POLICY_QUICK || codec != COLUMN_CODEC_AUTO) {
            plan_pfor(v, n, &pfor);
            plan_dpfor(v, n, &dpfor);
        }
        if (codec == FORMAT_RICE || codec == FORMAT_DRICE ||
            (codec == COLUMN_CODEC_AUTO && policy == FORMAT_POLICY_SMALLEST && col->compact &&
             !col->seekable)) {
            rice_plan(v, n, false, bp.base, bp.bits, ks, &rice);
            rice_plan(v, n, true, bp.base, bp.bits, ks ? ks + rice_blocks(n) : NULL, &drice);
        }
        if (codec == FORMAT_GFOR || (codec == COLUMN_CODEC_AUTO && policy != FORMAT_POLICY_RAW &&
                                     col->seekable))
            gfor_plan(v, n, &gfor);
    } else if (type == FORMAT_I128) {
        bp = *bp128;
        if (offsets || n == 0) {
            pfor_values = offsets ? offsets : none;
            plan_pfor(pfor_values, n, &pfor); /* base 0: the offsets' smallest */
        }
    }

    *enc = (struct column_encoding){.codec = FORMAT_RAW};
    uint64_t size = raw;
    if (codec == COLUMN_CODEC_AUTO && policy == FORMAT_POLICY_SMALLEST) {
        /* In tie order: only a strictly smaller encoding replaces one. */
        prefer(enc, &size, FORMAT_BITPACK, bp.ok, bp.size);
        if (col->seekable && type == FORMAT_I64)
            prefer(enc, &size, FORMAT_GFOR, true, gfor.size);
        if (!col->seekable) { /* else read by position: RAW, BITPACK or GFOR */
            prefer(enc, &size, FORMAT_DELTA, delta.ok, delta.size);
            prefer(enc, &size, FORMAT_PFOR, pfor.ok, pfor.size);
            prefer(enc, &size, FORMAT_DPFOR, dpfor.ok, dpfor.size);
            prefer(enc, &size, FORMAT_RICE, rice.ok, rice.size);
            prefer(enc, &size, FORMAT_DRICE, drice.ok, drice.size);
        }
        if (!col->seekable && lz4_ok && size > 0) {
            uint64_t room = size - 1 < cap ? size - 1 : cap;
            uint64_t got = write_lz4(v, raw, out, room);
            if (got) {
                enc->codec = FORMAT_LZ4;
                enc->length = (uint32_t)got;
                return 0;
            }
        }
    } else if (codec == COLUMN_CODEC_AUTO && policy == FORMAT_POLICY_QUICK) {
        /* The plans that cost one pass each: PFOR's and DPFOR's exception
         * searches, RICE's block widths and an LZ4 trial were most of a
         * delta block's encoding (perf), for bytes a fold rewrites. */
        prefer(enc, &size, FORMAT_BITPACK, bp.ok, bp.size);
        if (col->seekable && type == FORMAT_I64)
            prefer(enc, &size, FORMAT_GFOR, true, gfor.size);
        if (!col->seekable)
            prefer(enc, &size, FORMAT_DELTA, delta.ok, delta.size);
    } else if (codec != COLUMN_CODEC_AUTO) {
        if (codec < 0 || !codec_known((unsigned)codec))
            return error_fmt(why, whylen, "unknown codec %d", codec);
        if (!codec_fits_type((unsigned)codec, type))
            return error_fmt(why, whylen, "codec %s is not valid for %s columns",
                        format_codec_name((enum format_codec)codec), column_type_name(type));
        enc->codec = (enum format_codec)codec;
        if (codec == FORMAT_BITPACK) {
            if (!bp.ok)
                return error_fmt(why, whylen,
                            "i128 values too far apart (or too far from zero) for bitpack");
            size = bp.size;
        } else if (codec == FORMAT_DELTA) {
            size = delta.size;
        } else if (codec == FORMAT_PFOR) {
            if (!pfor.ok)
                return error_fmt(why, whylen, "i128 values too far apart (or too far from zero) "
                                     "for pfor");
            size = pfor.size;
        } else if (codec == FORMAT_DPFOR) {
            size = dpfor.size;
        } else if (codec == FORMAT_GFOR) {
            size = gfor.size;
        } else if (codec == FORMAT_RICE || codec == FORMAT_DRICE) {
            const struct rice_plan *rp = codec == FORMAT_RICE ? &rice : &drice;
            if (!rp->ok)
                return error_fmt(why, whylen, "%u values make a %s stream of 2^27 bits or more", n,
                            format_codec_name((enum format_codec)codec));
            size = rp->size;
        } else if (codec == FORMAT_LZ4) {
            if (!lz4_ok)
                return error_fmt(why, whylen, "%llu bytes are too many for lz4",
                            (unsigned long long)raw);
            uint64_t got = write_lz4(v, raw, out, cap);
            if (!got)
                return error_fmt(why, whylen, "output buffer too small (%zu bytes left)", cap);
            enc->length = (uint32_t)got;
            return 0;
        }
    } else if (policy != FORMAT_POLICY_RAW) {
        return error_fmt(why, whylen, "unknown policy %d", (int)policy);
    }

    if (size > cap)
        return error_fmt(why, whylen, "output buffer too small (%zu bytes left, %llu needed)", cap,
                    (unsigned long long)size);
    enc->length = (uint32_t)size;
    switch (enc->codec) {
    case FORMAT_RAW:
        if (raw)
            memcpy(out, v, raw);
        break;
    case FORMAT_BITPACK:
        enc->bits = (uint8_t)bp.bits;
        enc->base = bp.base;
        if (type == FORMAT_I64)
            write_bitpack_i64(v, n, &bp, out);
        else
            write_bitpack_i128(v, n, &bp, out);
        break;
    case FORMAT_DELTA:
        enc->bits = (uint8_t)delta.bits;
        enc->base = delta.base;
        write_delta(v, n, &delta, out);
        break;
    case FORMAT_PFOR:
        enc->bits = (uint8_t)pfor.bits;
        enc->base = type == FORMAT_I128 ? bp.base : pfor.base;
        write_pfor(pfor_values, n, &pfor, out);
        break;
    case FORMAT_DPFOR:
        enc->bits = (uint8_t)dpfor.bits;
        enc->base = dpfor.base;
        write_dpfor(v, n, &dpfor, out);
        break;
    case FORMAT_RICE:
    case FORMAT_DRICE: {
        const struct rice_plan *rp = enc->codec == FORMAT_RICE ? &rice : &drice;
        enc->bits = (uint8_t)rp->k;
        enc->base = rp->base;
        rice_write(v, n, enc->codec == FORMAT_DRICE, rp, out);
        break;
    }
    case FORMAT_GFOR:
        enc->bits = (uint8_t)gfor.abits;
        enc->base = gfor.base;
        gfor_write(v, n, &gfor, out);
        break;
    case FORMAT_LZ4:
        break; /* written above */
    }
    return 0;
}

/* column_encode, given an i128 column's bitpack plan and offsets (or NULL).
 * An i64 column's rice plans keep their blocks' widths for the write, which
 * would otherwise size every block again (a third of the load's rice
 * sizing); without the room, the write finds them itself. */
static int encode_planned(const struct format_column *col, enum format_policy policy, int codec,
                          const struct plan *bp128, const uint8_t *offsets, uint8_t *out,
                          size_t cap, struct column_encoding *enc, char *why, size_t whylen)
{
    uint32_t blocks =
        col->type == FORMAT_I64 && policy != FORMAT_POLICY_QUICK ? rice_blocks(col->n) : 0;
    uint8_t *ks = blocks ? malloc(2 * (size_t)blocks) : NULL;
    int rc = encode_with(col, policy, codec, bp128, offsets, ks, out, cap, enc, why, whylen);
    free(ks);
    return rc;
}

/* ---- Checking a directory entry ------------------------------------------- */

int column_check(unsigned type, unsigned codec, unsigned bits, int64_t base, uint32_t n,
                 uint32_t length, char *why, size_t whylen)
{
    if (!type_known(type))
        return error_fmt(why, whylen, "unknown type %u", type);
    if (!codec_known(codec))
        return error_fmt(why, whylen, "unknown codec %u", codec);
    const char *cname = format_codec_name((enum format_codec)codec);
    if (!codec_fits_type(codec, type))
        return error_fmt(why, whylen, "codec %s is not valid for %s columns", cname,
                    column_type_name(type));
    if (n > FORMAT_MAX_VALUES)
        return error_fmt(why, whylen, "%u values exceed the limit of %u", n, FORMAT_MAX_VALUES);

    const uint64_t raw = (uint64_t)n * format_type_size((enum format_type)type);
    uint64_t want;
    switch (codec) {
    case FORMAT_RAW:
    case FORMAT_LZ4:
        if (bits != 0)
            return error_fmt(why, whylen, "codec %s has bit width %u; expected 0", cname, bits);
        if (base != 0)
            return error_fmt(why, whylen, "codec %s has base %lld; expected 0", cname,
                        (long long)base);
        if (codec == FORMAT_RAW) {
            if (length != raw)
                return error_fmt(why, whylen, "raw length %u does not match %u %s values (%llu bytes)",
                            length, n, column_type_name(type), (unsigned long long)raw);
            return 0;
        }
        if (raw > LZ4_MAX_INPUT_SIZE)
            return error_fmt(why, whylen, "%llu bytes are too many for lz4", (unsigned long long)raw);
        if (length == 0 || raw > (uint64_t)length * LZ4_MAX_RATIO || length > lz4_bound(raw))
            return error_fmt(why, whylen, "lz4 length %u cannot hold %u %s values (%llu bytes)",
                        length, n, column_type_name(type), (unsigned long long)raw);
        return 0;
    case FORMAT_RICE:
    case FORMAT_DRICE:
        /* The exact length needs the codes: verify walks them. */
        if (bits > RICE_KMAX)
            return error_fmt(why, whylen, "%s remainder width %u exceeds %u", cname, bits,
                        RICE_KMAX);
        if (n == 0 && (bits != 0 || base != 0 || length != 0))
            return error_fmt(why, whylen, "%s column of 0 values with bit width %u, base %lld, "
                        "length %u; expected all 0", cname, bits, (long long)base, length);
        if (n > 0 && length <= rice_min_length(n))
            return error_fmt(why, whylen, "%s length %u leaves no codes for %u values", cname,
                        length, n);
        return 0;
    case FORMAT_GFOR:
        /* The exact length needs the group table: decoders check it. */
        if (bits > 64)
            return error_fmt(why, whylen, "gfor minimum width %u exceeds 64", bits);
        if (n == 0 && (bits != 0 || base != 0 || length != 0))
            return error_fmt(why, whylen, "gfor column of 0 values with bit width %u, base %lld, "
                        "length %u; expected all 0", bits, (long long)base, length);
        if (n > 0 && length < GFOR_HEADER)
            return error_fmt(why, whylen, "gfor length %u leaves no group table", length);
        return 0;
    case FORMAT_PFOR:
    case FORMAT_DPFOR: {
        /* The exact length needs the data's header: decoders check it. */
        if (bits > 64)
            return error_fmt(why, whylen, "bit width %u exceeds 64", bits);
        unsigned header = codec == FORMAT_PFOR ? PFOR_HEADER : DPFOR_HEADER;
        if (n == 0 && (bits != 0 || base != 0 || length != 0))
            return error_fmt(why, whylen, "%s column of 0 values with bit width %u, base %lld, "
                        "length %u; expected all 0", cname, bits, (long long)base, length);
        want = n ? header + bitpack_bytes(n, bits) : 0;
        if (length < want)
            return error_fmt(why, whylen, "%s length %u is less than %u values of %u bits take "
                        "(%llu bytes)", cname, length, n, bits, (unsigned long long)want);
        return 0;
    }
    case FORMAT_BITPACK:
    case FORMAT_DELTA:
        if (bits > 64)
            return error_fmt(why, whylen, "bit width %u exceeds 64", bits);
        if (codec == FORMAT_BITPACK)
            want = bitpack_bytes(n, bits);
        else
            want = n ? 8 + bitpack_bytes(n - 1, bits) : 0;
        if (length != want)
            return error_fmt(why, whylen,
                        "%s length %u does not match %u values of %u bits (%llu bytes)", cname,
                        length, n, bits, (unsigned long long)want);
        return 0;
    }
    return error_fmt(why, whylen, "unknown codec %u", codec);
}

/* ---- Decoding ---------------------------------------------------------------- */

/* Turns n u64 offsets at the front of o into the i128 values base + offset.
 * Back to front: element i (bytes 16i..16i+16) only overwrites offsets 2i
 * and 2i+1, already read. */
static void widen_offsets(uint8_t *o, uint32_t n, int64_t base)
{
    format_u128 b = (format_u128)(format_i128)base;
    for (uint32_t i = n; i-- > 0;) {
        format_i128 x = i128_from_bits(b + load_u64(o + (size_t)i * 8));
        memcpy(o + (size_t)i * 16, &x, 16);
    }
}

/* Values [first, first + count) of a RAW or BITPACK column: both address
 * a value directly. */
static void decode_direct(enum format_type type, enum format_codec codec, unsigned bits,
                          int64_t base, uint32_t first, uint32_t n, const uint8_t *src,
                          uint32_t length, uint8_t *o)
{
    size_t size = format_type_size(type);
    if (codec == FORMAT_RAW) {
        if (n)
            memcpy(o, src + (size_t)first * size, (size_t)n * size);
        return;
    }
    if (n == 0)
        return;
    if (type == FORMAT_I64) {
        bitpack_unpack_add(src, length, first, n, bits, i64_bits(base), o);
    } else {
        /* Unpack n uint64 into the front of out, then widen and add the base. */
        bitpack_unpack_at(src, length, first, n, bits, o);
        widen_offsets(o, n, base);
    }
}

/* ---- PFOR and DPFOR ---------------------------------------------------------- */

/* A PFOR or DPFOR column's data, its header checked. */
struct patched {
    uint32_t nexc;
    unsigned xbits, pbits;
    uint64_t dmin; /* DPFOR */
    const uint8_t *slots, *pos, *exc;
    size_t slots_len, pos_len, exc_len;
};

static int patched_open(enum format_codec codec, unsigned bits, uint32_t n, const uint8_t *src,
                        uint32_t length, struct patched *h, char *why, size_t whylen)
{
    const char *cname = format_codec_name(codec);
    const unsigned header = codec == FORMAT_PFOR ? PFOR_HEADER : DPFOR_HEADER;
    memset(h, 0, sizeof *h);
    if (n == 0)
        return length == 0 ? 0 : error_fmt(why, whylen, "%s column of 0 values has %u bytes",
                                      cname, length);
    if (bits > 64 || length < header)
        return error_fmt(why, whylen, "%s column of %u bytes and bit width %u", cname, length,
                    bits);
    h->nexc = load_u32(src);
    h->xbits = src[4];
    h->pbits = bitpack_width(n - 1);
    if (src[5] || src[6] || src[7])
        return error_fmt(why, whylen, "%s header has reserved bytes set", cname);
    if (h->xbits > 64)
        return error_fmt(why, whylen, "%s exception width %u exceeds 64", cname, h->xbits);
    if (h->nexc > n)
        return error_fmt(why, whylen, "%s has %u exceptions in %u values", cname, h->nexc, n);
    if (codec == FORMAT_PFOR) {
        if (h->nexc == 0 && h->xbits != 0)
            return error_fmt(why, whylen, "pfor has exception width %u but no exceptions",
                        h->xbits);
        if (h->nexc && (h->xbits == 0 || bits + h->xbits > 64))
            return error_fmt(why, whylen, "pfor exceptions of %u bits above %u bits", h->xbits,
                        bits);
    } else {
        if (h->nexc == 0)
            return error_fmt(why, whylen, "dpfor has no exceptions; value 0 must be one");
        h->dmin = load_u64(src + 8);
    }
    h->slots_len = bitpack_bytes(n, bits);
    h->pos_len = bitpack_bytes(h->nexc, h->pbits);
    h->exc_len = bitpack_bytes(h->nexc, h->xbits);
    uint64_t want = header + h->slots_len + h->pos_len + h->exc_len;
    if (length != want)
        return error_fmt(why, whylen,
                    "%s length %u does not match %u values of %u bits and %u exceptions "
                    "(%llu bytes)", cname, length, n, bits, h->nexc, (unsigned long long)want);
    h->slots = src + header;
    h->pos = h->slots + h->slots_len;
    h->exc = h->pos + h->pos_len;
    return 0;
}

/* Value i of a bit-packed stream. */
static uint64_t packed_get(const uint8_t *in, size_t len, size_t i, unsigned bits)
{
    uint8_t o[8];
    bitpack_unpack_at(in, len, i, 1, bits, o);
    return load_u64(o);
}

#define PATCH_CHUNK 256u

/* Checks the exception positions a decode of values [first, end) reads:
 * every one up to the first at or past end (all of them when end = n):
 * below n and strictly ascending; for DPFOR also the first 0 and no gap
 * over DPFOR_ANCHOR (to the end of the column too, when all are read).
 * Sets *upto to how many positions are <= first. A slice (an ask reads
 * a few buckets of a segment) so reads no positions past its own. */
static int patched_positions(enum format_codec codec, const struct patched *h, uint32_t n,
                             uint32_t first, uint64_t end, uint32_t *upto, char *why,
                             size_t whylen)
{
    const char *cname = format_codec_name(codec);
    uint8_t buf[PATCH_CHUNK * 8];
    uint64_t prev = 0;
    *upto = 0;
    for (uint32_t j0 = 0; j0 < h->nexc; j0 += PATCH_CHUNK) {
        uint32_t k = h->nexc - j0 < PATCH_CHUNK ? h->nexc - j0 : PATCH_CHUNK;
        bitpack_unpack_at(h->pos, h->pos_len, j0, k, h->pbits, buf);
        for (uint32_t t = 0; t < k; t++) {
            uint64_t p = load_u64(buf + (size_t)t * 8);
            uint32_t j = j0 + t;
            if (p >= n)
                return error_fmt(why, whylen, "%s exception %u at position %llu of %u values",
                            cname, j, (unsigned long long)p, n);
            if (j > 0 && p <= prev)
                return error_fmt(why, whylen, "%s exception positions not ascending (%llu after "
                            "%llu)", cname, (unsigned long long)p, (unsigned long long)prev);
            if (codec == FORMAT_DPFOR && (j == 0 ? p != 0 : p - prev > DPFOR_ANCHOR))
                return error_fmt(why, whylen, "dpfor exception %u at position %llu leaves a gap "
                            "over %u", j, (unsigned long long)p, DPFOR_ANCHOR);
            if (p <= first)
                *upto = j + 1;
            if (p >= end && end < n)
                return 0; /* the positions after it do not touch the slice */
            prev = p;
        }
    }
    if (codec == FORMAT_DPFOR && n - prev > DPFOR_ANCHOR)
        return error_fmt(why, whylen, "dpfor's last exception at %llu of %u values leaves a gap "
                    "over %u", (unsigned long long)prev, n, DPFOR_ANCHOR);
    return 0;
}

int column_check_data(enum format_codec codec, unsigned bits, uint32_t n, const uint8_t *src,
                      uint32_t length, char *why, size_t whylen)
{
    if (codec == FORMAT_RICE || codec == FORMAT_DRICE)
        return rice_check_data(codec == FORMAT_DRICE, bits, n, src, length, why, whylen);
    if (codec == FORMAT_GFOR)
        return gfor_check_data(bits, n, src, length, why, whylen);
    if (codec != FORMAT_PFOR && codec != FORMAT_DPFOR)
        return 0;
    struct patched h;
    uint32_t upto;
    if (patched_open(codec, bits, n, src, length, &h, why, whylen) < 0)
        return -1;
    return patched_positions(codec, &h, n, 0, n, &upto, why, whylen);
}

/* Exceptions [j, j + k) of a patched column, k <= PATCH_CHUNK: their
 * positions and their values (PFOR: high parts; DPFOR: value - base). */
static void patched_chunk(const struct patched *h, uint32_t j, uint32_t k, uint8_t *pos,
                          uint8_t *exc)
{
    bitpack_unpack_at(h->pos, h->pos_len, j, k, h->pbits, pos);
    bitpack_unpack_at(h->exc, h->exc_len, j, k, h->xbits, exc);
}

/* Values [first, first + count) of a PFOR column: the slots of the slice,
 * then the exceptions that fall in it. */
static int decode_pfor(unsigned bits, int64_t base, uint32_t n, uint32_t first, uint32_t count,
                       const uint8_t *src, uint32_t length, uint8_t *o, char *why, size_t whylen)
{
    struct patched h;
    uint32_t upto;
    if (patched_open(FORMAT_PFOR, bits, n, src, length, &h, why, whylen) < 0 ||
        patched_positions(FORMAT_PFOR, &h, n, first, (uint64_t)first + count, &upto, why,
                          whylen) < 0)
        return -1;
    if (count == 0)
        return 0;
    bitpack_unpack_add(h.slots, h.slots_len, first, count, bits, i64_bits(base), o);
    /* upto counts positions <= first: the one at first, if any, is in. */
    uint32_t j = upto;
    if (j > 0 && packed_get(h.pos, h.pos_len, j - 1, h.pbits) == first)
        j--;
    const uint64_t end = (uint64_t)first + count;
    uint8_t pos[PATCH_CHUNK * 8], exc[PATCH_CHUNK * 8];
    while (j < h.nexc) {
        uint32_t k = h.nexc - j < PATCH_CHUNK ? h.nexc - j : PATCH_CHUNK;
        patched_chunk(&h, j, k, pos, exc);
        for (uint32_t t = 0; t < k; t++) {
            uint64_t p = load_u64(pos + (size_t)t * 8);
            if (p >= end)
                return 0;
            uint8_t *at = o + (size_t)(p - first) * 8;
            /* bits < 64 when there are exceptions: checked by open. */
            store_u64(at, load_u64(at) + (load_u64(exc + (size_t)t * 8) << bits));
        }
        j += k;
    }
    return 0;
}

/* Values [first, first + count) of a DPFOR column. Every value between the
 * last exception at or before first (at most DPFOR_ANCHOR - 1 back) and
 * first is a delta: their sum gives the value before first; then the
 * slice's slots are summed in place, exceptions setting values outright. */
static int decode_dpfor(unsigned bits, int64_t base, uint32_t n, uint32_t first, uint32_t count,
                        const uint8_t *src, uint32_t length, uint8_t *o, char *why, size_t whylen)
{
    struct patched h;
    uint32_t upto;
    if (patched_open(FORMAT_DPFOR, bits, n, src, length, &h, why, whylen) < 0 ||
        patched_positions(FORMAT_DPFOR, &h, n, first, (uint64_t)first + count, &upto, why,
                          whylen) < 0)
        return -1;
    if (count == 0)
        return 0;
    const uint64_t b = i64_bits(base), dmin = h.dmin;
    uint8_t pos[PATCH_CHUNK * 8], exc[PATCH_CHUNK * 8];
    /* upto >= 1: position 0 is an exception. */
    uint32_t j = upto - 1;
    uint64_t a = packed_get(h.pos, h.pos_len, j, h.pbits);
    uint64_t prev = 0; /* the value before first, when first is no exception */
    if (a < first) {
        prev = b + packed_get(h.exc, h.exc_len, j, h.xbits);
        uint32_t k = (uint32_t)(first - a - 1); /* < DPFOR_ANCHOR <= PATCH_CHUNK */
        prev = bitpack_unpack_sum(h.slots, h.slots_len, a + 1, k, bits, dmin, prev, pos);
        j++;
    }
    const uint64_t end = (uint64_t)first + count;
    uint64_t i = first; /* next value to decode */
    while (j < h.nexc && i < end) {
        uint32_t k = h.nexc - j < PATCH_CHUNK ? h.nexc - j : PATCH_CHUNK;
        patched_chunk(&h, j, k, pos, exc);
        for (uint32_t t = 0; t < k; t++) {
            uint64_t p = load_u64(pos + (size_t)t * 8);
            uint64_t stop = p < end ? p : end;
            prev = bitpack_unpack_sum(h.slots, h.slots_len, i, stop - i, bits, dmin, prev,
                                      o + (size_t)(i - first) * 8);
            if (p >= end)
                return 0;
            prev = b + load_u64(exc + (size_t)t * 8);
            store_u64(o + (size_t)(p - first) * 8, prev);
            i = p + 1;
        }
        j += k;
    }
    if (i < end)
        bitpack_unpack_sum(h.slots, h.slots_len, i, end - i, bits, dmin, prev,
                           o + (size_t)(i - first) * 8);
    return 0;
}

/* A PFOR column of either type: an i128 column's offsets are decoded as
 * i64 values of base 0, then widened. */
static int decode_pfor_typed(enum format_type type, unsigned bits, int64_t base, uint32_t n,
                             uint32_t first, uint32_t count, const uint8_t *src, uint32_t length,
                             uint8_t *o, char *why, size_t whylen)
{
    if (type == FORMAT_I64)
        return decode_pfor(bits, base, n, first, count, src, length, o, why, whylen);
    if (decode_pfor(bits, 0, n, first, count, src, length, o, why, whylen) < 0)
        return -1;
    widen_offsets(o, count, base);
    return 0;
}

int column_decode_range(enum format_type type, enum format_codec codec, unsigned bits,
                        int64_t base, uint32_t n, uint32_t first, uint32_t count,
                        const uint8_t *src, uint32_t length, void *out, char *why, size_t whylen)
{
    if ((uint64_t)first + count > n)
        return error_fmt(why, whylen, "rows %u..%u asked of a column of %u", first, first + count, n);
    if (codec == FORMAT_RAW || codec == FORMAT_BITPACK) {
        decode_direct(type, codec, bits, base, first, count, src, length, out);
        return 0;
    }
    if (codec == FORMAT_PFOR)
        return decode_pfor_typed(type, bits, base, n, first, count, src, length, out, why,
                                 whylen);
    if (codec == FORMAT_DPFOR)
        return decode_dpfor(bits, base, n, first, count, src, length, out, why, whylen);
    if (codec == FORMAT_RICE || codec == FORMAT_DRICE)
        return rice_decode(codec == FORMAT_DRICE, bits, base, n, first, count, src, length, out,
                           why, whylen);
    if (codec == FORMAT_GFOR)
        return gfor_decode(bits, base, n, first, count, src, length, out, why, whylen);
    if (first == 0 && count == n)
        return column_decode(type, codec, bits, base, n, src, length, out, why, whylen);
    if (codec == FORMAT_DELTA) {
        if (count == 0)
            return 0; /* DELTA decodes any bytes of its checked length */
        /* Value i is the base plus i steps of dmin plus the first i packed
         * deltas: the slice's first value from their sum, read in place,
         * then running sums as a whole decode makes them. */
        uint64_t dmin = load_u64(src);
        uint64_t at = i64_bits(base) + (uint64_t)first * dmin +
                      bitpack_sum(src + 8, length - 8, 0, first, bits);
        uint8_t *o = out;
        store_u64(o, at);
        bitpack_unpack_sum(src + 8, length - 8, first, count - 1, bits, dmin, at, o + 8);
        return 0;
    }
    /* LZ4 is decoded whole, so that a slice fails wherever the column does
     * (a stream cut short past the slice is damage all the same), into the
     * ask's scratch, counted against its budget; the slice is kept. */
    size_t size = format_type_size(type);
    uint8_t *all = scratch_malloc((size_t)n * size + 1);
    if (!all)
        return error_fmt(why, whylen, "out of memory");
    int rc = column_decode(type, codec, bits, base, n, src, length, all, why, whylen);
    if (rc == 0)
        memcpy(out, all + (size_t)first * size, (size_t)count * size);
    scratch_free(all);
    return rc;
}

int column_decode(enum format_type type, enum format_codec codec, unsigned bits, int64_t base,
                  uint32_t n, const uint8_t *src, uint32_t length, void *out, char *why,
                  size_t whylen)
{
    uint8_t *o = out;
    const uint64_t raw = (uint64_t)n * format_type_size(type);
    switch (codec) {
    case FORMAT_RAW:
    case FORMAT_BITPACK:
        decode_direct(type, codec, bits, base, 0, n, src, length, o);
        return 0;
    case FORMAT_DELTA: {
        if (n == 0)
            return 0;
        store_u64(o, i64_bits(base));
        bitpack_unpack_sum(src + 8, length - 8, 0, n - 1, bits, load_u64(src), i64_bits(base),
                           o + 8);
        return 0;
    }
    case FORMAT_PFOR:
        return decode_pfor_typed(type, bits, base, n, 0, n, src, length, o, why, whylen);
    case FORMAT_DPFOR:
        return decode_dpfor(bits, base, n, 0, n, src, length, o, why, whylen);
    case FORMAT_RICE:
    case FORMAT_DRICE:
        return rice_decode(codec == FORMAT_DRICE, bits, base, n, 0, n, src, length, o, why,
                           whylen);
    case FORMAT_GFOR:
        return gfor_decode(bits, base, n, 0, n, src, length, o, why, whylen);
    case FORMAT_LZ4: {
        uint8_t none[1];
        int r = LZ4_decompress_safe((const char *)src, raw ? (char *)o : (char *)none,
                                    (int)length, (int)raw);
        if (r < 0)
            return error_fmt(why, whylen, "lz4 data is corrupt");
        if ((uint64_t)r != raw)
            return error_fmt(why, whylen, "lz4 data decodes to %d bytes, expected %llu", r,
                        (unsigned long long)raw);
        return 0;
    }
    }
    return error_fmt(why, whylen, "unknown codec %u", (unsigned)codec);
}
