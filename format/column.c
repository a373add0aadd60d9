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
 *
 * The SMALLEST policy sizes BITPACK and DELTA arithmetically, then lets LZ4
 * compress straight into the output with room for one byte less than the
 * best so far: no scratch memory, and ties go to RAW, BITPACK, DELTA, LZ4 in
 * that order.
 */
#include "format/column.h"

#include "format/bitpack.h"
#include "format/bytes.h"

#include <limits.h>
#include <lz4.h>
#include <stdarg.h>
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
    }
    return "unknown";
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

__attribute__((format(printf, 3, 4))) static int fail(char *why, size_t whylen,
                                                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -1;
}

static bool type_known(unsigned type)
{
    return type == FORMAT_I64 || type == FORMAT_I128 || type == FORMAT_F64;
}

static bool codec_known(unsigned codec) { return codec <= FORMAT_LZ4; }

static bool codec_fits_type(unsigned codec, unsigned type)
{
    switch (codec) {
    case FORMAT_RAW:
    case FORMAT_LZ4:
        return true;
    case FORMAT_BITPACK:
        return type == FORMAT_I64 || type == FORMAT_I128;
    case FORMAT_DELTA:
        return type == FORMAT_I64;
    }
    return false;
}

static uint64_t lz4_bound(uint64_t raw) { return raw + raw / 255 + 16; }

uint64_t column_bound(enum format_type type, uint32_t n)
{
    uint64_t raw = (uint64_t)n * format_type_size(type);
    if (raw <= LZ4_MAX_INPUT_SIZE && lz4_bound(raw) > raw)
        return lz4_bound(raw);
    return raw;
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
    int64_t dmin;  /* DELTA: the smallest delta */
    uint64_t size; /* encoded bytes */
};

static void plan_bitpack_i64(const uint8_t *v, uint32_t n, struct plan *p)
{
    *p = (struct plan){.ok = true};
    if (n == 0)
        return;
    int64_t min = INT64_MAX, max = INT64_MIN;
    for (uint32_t i = 0; i < n; i++) {
        int64_t x = i64_from_bits(get_u64(v, i));
        if (x < min)
            min = x;
        if (x > max)
            max = x;
    }
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

/* Compresses into out with at most cap bytes; 0 if it does not fit. */
static uint64_t write_lz4(const uint8_t *src, uint64_t raw, uint8_t *out, uint64_t cap)
{
    int dcap = cap > INT_MAX ? INT_MAX : (int)cap;
    if (dcap <= 0)
        return 0;
    int r = LZ4_compress_default((const char *)src, (char *)out, (int)raw, dcap);
    return r > 0 ? (uint64_t)r : 0;
}

int column_encode(const struct format_column *col, enum format_policy policy, int codec,
                  uint8_t *out, size_t cap, struct column_encoding *enc, char *why,
                  size_t whylen)
{
    static const uint8_t none[1];
    const unsigned type = col->type;
    const uint32_t n = col->n;
    const uint8_t *v = n ? (const uint8_t *)col->values : none;
    const uint64_t raw = (uint64_t)n * format_type_size(col->type);
    const bool lz4_ok = raw <= LZ4_MAX_INPUT_SIZE;

    struct plan bp = {0}, delta = {0};
    if (type == FORMAT_I64) {
        plan_bitpack_i64(v, n, &bp);
        plan_delta(v, n, &delta);
    } else if (type == FORMAT_I128) {
        plan_bitpack_i128(v, n, &bp);
    }

    *enc = (struct column_encoding){.codec = FORMAT_RAW};
    uint64_t size = raw;
    if (codec == COLUMN_CODEC_AUTO && policy == FORMAT_POLICY_SMALLEST) {
        if (bp.ok && bp.size < size) {
            enc->codec = FORMAT_BITPACK;
            size = bp.size;
        }
        if (delta.ok && delta.size < size) {
            enc->codec = FORMAT_DELTA;
            size = delta.size;
        }
        if (lz4_ok && size > 0) {
            uint64_t room = size - 1 < cap ? size - 1 : cap;
            uint64_t got = write_lz4(v, raw, out, room);
            if (got) {
                enc->codec = FORMAT_LZ4;
                enc->length = (uint32_t)got;
                return 0;
            }
        }
    } else if (codec != COLUMN_CODEC_AUTO) {
        if (codec < 0 || !codec_known((unsigned)codec))
            return fail(why, whylen, "unknown codec %d", codec);
        if (!codec_fits_type((unsigned)codec, type))
            return fail(why, whylen, "codec %s is not valid for %s columns",
                        format_codec_name((enum format_codec)codec), column_type_name(type));
        enc->codec = (enum format_codec)codec;
        if (codec == FORMAT_BITPACK) {
            if (!bp.ok)
                return fail(why, whylen,
                            "i128 values too far apart (or too far from zero) for bitpack");
            size = bp.size;
        } else if (codec == FORMAT_DELTA) {
            size = delta.size;
        } else if (codec == FORMAT_LZ4) {
            if (!lz4_ok)
                return fail(why, whylen, "%llu bytes are too many for lz4",
                            (unsigned long long)raw);
            uint64_t got = write_lz4(v, raw, out, cap);
            if (!got)
                return fail(why, whylen, "output buffer too small (%zu bytes left)", cap);
            enc->length = (uint32_t)got;
            return 0;
        }
    } else if (policy != FORMAT_POLICY_RAW) {
        return fail(why, whylen, "unknown policy %d", (int)policy);
    }

    if (size > cap)
        return fail(why, whylen, "output buffer too small (%zu bytes left, %llu needed)", cap,
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
    case FORMAT_LZ4:
        break; /* written above */
    }
    return 0;
}

/* ---- Checking a directory entry ------------------------------------------- */

int column_check(unsigned type, unsigned codec, unsigned bits, int64_t base, uint32_t n,
                 uint32_t length, char *why, size_t whylen)
{
    if (!type_known(type))
        return fail(why, whylen, "unknown type %u", type);
    if (!codec_known(codec))
        return fail(why, whylen, "unknown codec %u", codec);
    const char *cname = format_codec_name((enum format_codec)codec);
    if (!codec_fits_type(codec, type))
        return fail(why, whylen, "codec %s is not valid for %s columns", cname,
                    column_type_name(type));
    if (n > FORMAT_MAX_VALUES)
        return fail(why, whylen, "%u values exceed the limit of %u", n, FORMAT_MAX_VALUES);

    const uint64_t raw = (uint64_t)n * format_type_size((enum format_type)type);
    uint64_t want;
    switch (codec) {
    case FORMAT_RAW:
    case FORMAT_LZ4:
        if (bits != 0)
            return fail(why, whylen, "codec %s has bit width %u; expected 0", cname, bits);
        if (base != 0)
            return fail(why, whylen, "codec %s has base %lld; expected 0", cname,
                        (long long)base);
        if (codec == FORMAT_RAW) {
            if (length != raw)
                return fail(why, whylen, "raw length %u does not match %u %s values (%llu bytes)",
                            length, n, column_type_name(type), (unsigned long long)raw);
            return 0;
        }
        if (raw > LZ4_MAX_INPUT_SIZE)
            return fail(why, whylen, "%llu bytes are too many for lz4", (unsigned long long)raw);
        if (length == 0 || raw > (uint64_t)length * LZ4_MAX_RATIO || length > lz4_bound(raw))
            return fail(why, whylen, "lz4 length %u cannot hold %u %s values (%llu bytes)",
                        length, n, column_type_name(type), (unsigned long long)raw);
        return 0;
    case FORMAT_BITPACK:
    case FORMAT_DELTA:
        if (bits > 64)
            return fail(why, whylen, "bit width %u exceeds 64", bits);
        if (codec == FORMAT_BITPACK)
            want = bitpack_bytes(n, bits);
        else
            want = n ? 8 + bitpack_bytes(n - 1, bits) : 0;
        if (length != want)
            return fail(why, whylen,
                        "%s length %u does not match %u values of %u bits (%llu bytes)", cname,
                        length, n, bits, (unsigned long long)want);
        return 0;
    }
    return fail(why, whylen, "unknown codec %u", codec);
}

/* ---- Decoding ---------------------------------------------------------------- */

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
    /* Unpack n uint64 into the front of out, then add the base. */
    bitpack_unpack_at(src, length, first, n, bits, o);
    if (type == FORMAT_I64) {
        uint64_t b = i64_bits(base);
        for (uint32_t i = 0; i < n; i++)
            store_u64(o + (size_t)i * 8, load_u64(o + (size_t)i * 8) + b);
    } else {
        /* Widen back to front: element i (bytes 16i..16i+16) only
         * overwrites packed values 2i and 2i+1, already consumed. */
        format_u128 b = (format_u128)(format_i128)base;
        for (uint32_t i = n; i-- > 0;) {
            format_i128 x = i128_from_bits(b + load_u64(o + (size_t)i * 8));
            memcpy(o + (size_t)i * 16, &x, 16);
        }
    }
}

int column_decode_range(enum format_type type, enum format_codec codec, unsigned bits,
                        int64_t base, uint32_t n, uint32_t first, uint32_t count,
                        const uint8_t *src, uint32_t length, void *out, char *why, size_t whylen)
{
    if ((uint64_t)first + count > n)
        return fail(why, whylen, "rows %u..%u asked of a column of %u", first, first + count, n);
    if (codec == FORMAT_RAW || codec == FORMAT_BITPACK) {
        decode_direct(type, codec, bits, base, first, count, src, length, out);
        return 0;
    }
    if (first == 0 && count == n)
        return column_decode(type, codec, bits, base, n, src, length, out, why, whylen);
    /* DELTA and LZ4 run from the start: decode it all, keep the slice. */
    size_t size = format_type_size(type);
    uint8_t *all = malloc((size_t)n * size + 1);
    if (!all)
        return fail(why, whylen, "out of memory");
    int rc = column_decode(type, codec, bits, base, n, src, length, all, why, whylen);
    if (rc == 0 && count)
        memcpy(out, all + (size_t)first * size, (size_t)count * size);
    free(all);
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
        uint64_t dmin = load_u64(src);
        bitpack_unpack(src + 8, length - 8, n - 1, bits, o + 8);
        uint64_t prev = i64_bits(base);
        store_u64(o, prev);
        for (uint32_t i = 1; i < n; i++) {
            prev += dmin + load_u64(o + (size_t)i * 8);
            store_u64(o + (size_t)i * 8, prev);
        }
        return 0;
    }
    case FORMAT_LZ4: {
        uint8_t none[1];
        int r = LZ4_decompress_safe((const char *)src, raw ? (char *)o : (char *)none,
                                    (int)length, (int)raw);
        if (r < 0)
            return fail(why, whylen, "lz4 data is corrupt");
        if ((uint64_t)r != raw)
            return fail(why, whylen, "lz4 data decodes to %d bytes, expected %llu", r,
                        (unsigned long long)raw);
        return 0;
    }
    }
    return fail(why, whylen, "unknown codec %u", (unsigned)codec);
}
