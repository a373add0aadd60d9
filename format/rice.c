/* rice.c -- RICE and DRICE: Golomb-Rice coded i64 columns.
 *
 * Directory: base = the smallest value, bits = the largest block's k (0 to
 * RICE_KMAX). Data:
 *
 *   offset  size              field
 *   0       1                 xbits: the width of max - min (<= 64)
 *   1       7                 0
 *   8       4 x A             anchors, for j < A = ceil(n / 128), u32 LE:
 *                             bits 0-26 the stream bit where value 128j's
 *                             code starts, bits 27-31 the k of its block
 *                             (values 128j to 128j + 127)
 *   8 + 4A  ceil(B / 8)       the stream: n codes, B < 2^27 bits in all,
 *                             bit k of the stream being bit k % 8 of byte
 *                             k / 8 (as bitpack.h), unused high bits of the
 *                             last byte 0
 *
 * A code is a unary quotient q (q zero bits, then a one bit), then, with
 * k its block's remainder width:
 *
 *   RICE   q < 32:  k remainder bits r; the value is base + (q << k | r).
 *          q = 32:  an escape: xbits bits x; the value is base + x.
 *   DRICE  q < 32:  k bits r, t = q << k | r. t > 0: the value is the one
 *                   before plus t. t = 0: an escape, xbits bits x follow;
 *                   the value is base + x.
 *
 * All arithmetic mod 2^64. The encoder escapes what a code cannot hold (a
 * quotient of 32 or more; in DRICE a delta below 1, which is where a
 * cell's runs start again) and, in DRICE, the value at every anchor, so a
 * decode can start at any anchor. Each block takes the k that codes it
 * shortest (block_k): a column's runs differ along it (busy hours, quiet
 * ones), and one k per block of 128 took 11% off the cells' run codes and
 * 8% off their rows against one k per column.
 *
 * Decoders never read outside the data: codes that start more than 24
 * bytes before the stream's end are read in place (one code reads at most
 * 21 bytes from its start), the rest from a zero-padded copy of the
 * stream's last bytes, checking after each code that it ended inside the
 * stream. A zero word where a quotient should be (more than 56 zero bits),
 * a quotient over 32, or a DRICE quotient of 32 fails: no code is longer.
 * Every anchor a decode passes must point where its code starts, with a k
 * no larger than the directory's (and, in DRICE, at an escape), so a whole
 * decode that succeeds vouches for every slice; verify (rice_check_data)
 * also checks that the codes fill the stream exactly.
 */
#include "base/error.h"
#include "format/rice.h"

#include "format/bitpack.h"
#include "format/bytes.h"
#include "format/format.h"

#include <stdio.h>
#include <string.h>

#define RICE_HEADER 8u
#define RICE_ANCHOR 128u
_Static_assert(RICE_ANCHOR == FORMAT_SEEK_STRIDE, "format.h promises slices from anchors");
#define RICE_QMAX 32u
#define RICE_OFFSET_BITS 27u /* an anchor: stream bit offset, then its block's k */
#define RICE_MAX_BITS ((uint64_t)1 << RICE_OFFSET_BITS)
#define ESCAPE UINT64_MAX /* symbol(): this value is escaped */
#define TAIL_BYTES 24u    /* codes starting this close to the end use the copy */

static uint32_t anchor_count(uint32_t n) { return n ? (n - 1) / RICE_ANCHOR + 1 : 0; }

uint64_t rice_min_length(uint32_t n)
{
    return n ? RICE_HEADER + 4 * (uint64_t)anchor_count(n) : 0;
}

/* What value i would code before any width limit: v - base for RICE, the
 * delta for DRICE, or ESCAPE where DRICE always escapes (an anchor, a
 * delta below 1). */
static inline uint64_t raw_symbol(const uint8_t *v, uint32_t i, bool delta, uint64_t base)
{
    uint64_t x = load_u64(v + (size_t)i * 8);
    if (!delta)
        return x - base == ESCAPE ? ESCAPE - 1 : x - base; /* escaped below anyway */
    if (i % RICE_ANCHOR == 0)
        return ESCAPE;
    int64_t d = i64_from_bits(x - load_u64(v + (size_t)(i - 1) * 8));
    return d < 1 ? ESCAPE : (uint64_t)d;
}

static uint64_t escape_bits(bool delta, unsigned k, unsigned xbits)
{
    return delta ? 1 + k + xbits : RICE_QMAX + 1 + xbits;
}

/* The symbols of values [from, to) (at most RICE_ANCHOR) before any width
 * limit, into t: what each block's sizing reads several times. */
static void block_symbols(const uint8_t *v, uint32_t from, uint32_t to, bool delta,
                          uint64_t base, uint64_t *t)
{
    for (uint32_t i = from; i < to; i++)
        t[i - from] = raw_symbol(v, i, delta, base);
}

/* Stream bits of a block's m symbols t at remainder widths k, k + 1 and
 * k + 2, into bits[0..2]: one pass for the three candidates block_k
 * weighs (three passes were 5% of an initial load, perf). */
static void block_bits3(const uint64_t *t, uint32_t m, bool delta, unsigned k, unsigned xbits,
                        uint64_t bits[3])
{
    uint64_t b0 = 0, b1 = 0, b2 = 0;
    const uint64_t e0 = escape_bits(delta, k, xbits), e1 = escape_bits(delta, k + 1, xbits),
                   e2 = escape_bits(delta, k + 2, xbits);
    for (uint32_t i = 0; i < m; i++) {
        /* An escaped symbol is all ones: its quotients are past RICE_QMAX
         * at every k block_k tries (k + 2 <= RICE_KMAX + 1 < 32). */
        uint64_t q0 = t[i] >> k, q1 = t[i] >> (k + 1), q2 = t[i] >> (k + 2);
        b0 += q0 < RICE_QMAX ? q0 + 1 + k : e0;
        b1 += q1 < RICE_QMAX ? q1 + 2 + k : e1;
        b2 += q2 < RICE_QMAX ? q2 + 3 + k : e2;
    }
    bits[0] = b0;
    bits[1] = b1;
    bits[2] = b2;
}

/* The remainder width that codes a block's m symbols t in the fewest bits
 * (*bits) among the three around the median symbol's width, each sized
 * exactly. The mean symbol misleads: a few large counts among many ones
 * pull it far from the best k, 0. (Estimating every k's cost from the
 * widths first found blocks 0.2% smaller for 40% more of this function's
 * time in the initial load.) */
static unsigned block_k(const uint64_t *t, uint32_t m, bool delta, unsigned xbits,
                        uint64_t *bits)
{
    uint64_t cnt[65] = {0};
    unsigned top = 0;
    for (uint32_t i = 0; i < m; i++) {
        if (t[i] != ESCAPE) {
            unsigned w = bitpack_width(t[i]);
            cnt[w]++;
            top = w > top ? w : top;
        }
    }
    /* The median symbol's width w: the best k is near w - 1 for symbols
     * spread like the deltas of sorted samples, 0 for mostly-zero ones. */
    uint64_t seen = 0, half = 0;
    for (unsigned w = 0; w <= top; w++)
        half += cnt[w];
    half = (half + 1) / 2;
    unsigned guess = 0;
    for (unsigned w = 0; w <= top && seen < half; w++) {
        seen += cnt[w];
        guess = w ? w - 1 : 0;
    }
    guess = guess < RICE_KMAX ? guess : RICE_KMAX;
    unsigned lo = guess ? guess - 1 : 0, hi = guess < RICE_KMAX ? guess + 1 : RICE_KMAX, best = 0;
    uint64_t b[3];
    block_bits3(t, m, delta, lo, xbits, b);
    *bits = UINT64_MAX;
    for (unsigned k = lo; k <= hi; k++) {
        if (b[k - lo] < *bits) {
            *bits = b[k - lo];
            best = k;
        }
    }
    return best;
}

uint32_t rice_blocks(uint32_t n) { return anchor_count(n); }

void rice_plan(const uint8_t *v, uint32_t n, bool delta, int64_t min, unsigned xbits,
               uint8_t *ks, struct rice_plan *p)
{
    *p = (struct rice_plan){.ok = true, .ks = ks};
    if (n == 0)
        return;
    p->base = min;
    p->xbits = xbits;
    uint64_t total = 0, t[RICE_ANCHOR];
    for (uint32_t from = 0; from < n; from += RICE_ANCHOR) {
        uint32_t to = n - from > RICE_ANCHOR ? from + RICE_ANCHOR : n;
        uint64_t bits;
        block_symbols(v, from, to, delta, i64_bits(min), t);
        unsigned k = block_k(t, to - from, delta, p->xbits, &bits);
        if (ks)
            ks[from / RICE_ANCHOR] = (uint8_t)k;
        p->k = k > p->k ? k : p->k;
        total += bits;
    }
    p->ok = total < RICE_MAX_BITS;
    p->size = RICE_HEADER + 4 * (uint64_t)anchor_count(n) + (total + 7) / 8;
}

void rice_write(const uint8_t *v, uint32_t n, bool delta, const struct rice_plan *p,
                uint8_t *out)
{
    if (n == 0)
        return;
    memset(out, 0, RICE_HEADER);
    out[0] = (uint8_t)p->xbits;
    uint8_t *anchors = out + RICE_HEADER;
    struct bitpack_writer w;
    bitpack_writer_init(&w, anchors + 4 * (size_t)anchor_count(n));
    const uint64_t base = i64_bits(p->base);
    uint64_t at = 0, block[RICE_ANCHOR]; /* bits written; the block's symbols */
    unsigned k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i % RICE_ANCHOR == 0) {
            uint32_t to = n - i > RICE_ANCHOR ? i + RICE_ANCHOR : n;
            uint64_t bits;
            block_symbols(v, i, to, delta, base, block);
            k = p->ks ? p->ks[i / RICE_ANCHOR] : block_k(block, to - i, delta, p->xbits, &bits);
            store_u32(anchors + 4 * (size_t)(i / RICE_ANCHOR),
                      (uint32_t)at | (uint32_t)k << RICE_OFFSET_BITS);
        }
        uint64_t t = block[i % RICE_ANCHOR];
        if (t != ESCAPE && t >> k >= RICE_QMAX)
            t = ESCAPE;
        if (t == ESCAPE) {
            uint64_t x = load_u64(v + (size_t)i * 8) - base;
            if (delta) {
                bitpack_put(&w, 1, 1 + k); /* q = 0, r = 0 */
            } else {
                bitpack_put(&w, 0, RICE_QMAX);
                bitpack_put(&w, 1, 1);
            }
            bitpack_put(&w, x, p->xbits);
            at += escape_bits(delta, k, p->xbits);
        } else {
            unsigned q = (unsigned)(t >> k);
            bitpack_put(&w, (uint64_t)1 << q, q + 1);
            bitpack_put(&w, t & bitpack_mask(k), k);
            at += q + 1 + k;
        }
    }
    bitpack_flush(&w);
}

/* ---- Decoding ----------------------------------------------------------------- */

struct rice_reader {
    bool delta;
    unsigned k, xbits;
    uint64_t base;
    uint64_t prev; /* the last value decoded */
};

/* 57 to 64 bits of s from bit p on. */
static inline uint64_t peek(const uint8_t *s, uint64_t p) { return load_u64(s + (p >> 3)) >> (p & 7); }

static inline uint64_t get_bits(const uint8_t *s, uint64_t p, unsigned w)
{
    if (w <= 56)
        return peek(s, p) & bitpack_mask(w);
    return (peek(s, p) & bitpack_mask(56)) | (peek(s, p + 56) & bitpack_mask(w - 56)) << 56;
}

/* Decodes the code at bit *p of s into r->prev, advancing *p; reads at most
 * 21 bytes from byte *p / 8. Returns 0 (1 for an escape), or -1. */
static inline int decode_one(struct rice_reader *r, const uint8_t *s, uint64_t *p)
{
    uint64_t w = peek(s, *p);
    if (w == 0)
        return -1;
    unsigned q = (unsigned)__builtin_ctzll(w);
    if (q >= RICE_QMAX) {
        if (r->delta || q != RICE_QMAX)
            return -1;
        r->prev = r->base + get_bits(s, *p + RICE_QMAX + 1, r->xbits);
        *p += RICE_QMAX + 1 + r->xbits;
        return 1;
    }
    uint64_t t = (uint64_t)q << r->k | ((w >> (q + 1)) & bitpack_mask(r->k));
    *p += q + 1 + r->k;
    if (!r->delta) {
        r->prev = r->base + t;
        return 0;
    }
    if (t) {
        r->prev += t;
        return 0;
    }
    r->prev = r->base + get_bits(s, *p, r->xbits);
    *p += r->xbits;
    return 1;
}

/* Decodes values i to end - 1 (all in one block, none an anchor) while
 * their codes start below limit, so that they are read in place, and are
 * plain codes or, in DRICE, escapes that fit the 57 to 64 bits one load
 * gives; returns the first value it left to walk's general step (an
 * escape it cannot take, the block's end, the tail). The general step
 * decodes the same codes; this is the same arithmetic without the checks a
 * value inside a block does not need, and with one load for several short
 * codes: a code's position no longer waits on a load, which made a decode
 * about 4 ns a value. */
static inline uint32_t decode_run(struct rice_reader *r, const uint8_t *s, uint64_t *pp,
                                  uint64_t limit, uint32_t i, uint32_t end, uint32_t first,
                                  uint8_t *out)
{
    const unsigned k = r->k, xbits = r->xbits;
    const uint64_t kmask = bitpack_mask(k), xmask = bitpack_mask(xbits), base = r->base;
    uint64_t p = *pp, prev = r->prev;
    if (p >= limit)
        return i;
    uint64_t w = peek(s, p);
    unsigned avail = 64 - (unsigned)(p & 7);
    while (i < end) {
        unsigned q = w ? (unsigned)__builtin_ctzll(w) : 64;
        unsigned len = q + 1 + k;
        if (q >= RICE_QMAX || len > avail) {
            if (q < RICE_QMAX || avail < 64 - 7) { /* the code may go on past w: load again */
                if (p >= limit)
                    break;
                w = peek(s, p);
                avail = 64 - (unsigned)(p & 7);
                if (w && (unsigned)__builtin_ctzll(w) < RICE_QMAX)
                    continue;
            }
            break; /* a RICE escape or a malformed code: the general step */
        }
        uint64_t t = (uint64_t)q << k | ((w >> (q + 1)) & kmask);
        if (!r->delta) {
            prev = base + t;
        } else if (t) {
            prev += t;
        } else { /* a DRICE escape: xbits more bits */
            if (len + xbits > avail)
                break;
            prev = base + (xbits ? (w >> len) & xmask : 0);
            len += xbits;
        }
        w = len < 64 ? w >> len : 0;
        avail -= len;
        p += len;
        if (i >= first)
            store_u64(out + (size_t)(i - first) * 8, prev);
        i++;
    }
    *pp = p;
    r->prev = prev;
    return i;
}

/* The data's parts, the header checked. */
struct rice_data {
    const uint8_t *anchors, *stream;
    uint64_t stream_bytes;
    unsigned xbits;
    unsigned kmax; /* the directory's bits: no block's k is larger */
};

/* Anchor j: the bit its block's first code starts at, and the block's k. */
static uint64_t anchor_bit(const struct rice_data *d, uint32_t j)
{
    return load_u32(d->anchors + 4 * (size_t)j) & (uint32_t)(RICE_MAX_BITS - 1);
}

static unsigned anchor_k(const struct rice_data *d, uint32_t j)
{
    return load_u32(d->anchors + 4 * (size_t)j) >> RICE_OFFSET_BITS;
}

static int open_data(const char *cname, unsigned k, uint32_t n, const uint8_t *src,
                     uint32_t length, struct rice_data *d, char *why, size_t whylen)
{
    memset(d, 0, sizeof *d);
    if (n == 0)
        return length == 0 ? 0 : error_fmt(why, whylen, "%s column of 0 values has %u bytes", cname,
                                      length);
    if (k > RICE_KMAX)
        return error_fmt(why, whylen, "%s remainder width %u exceeds %u", cname, k, RICE_KMAX);
    if (length < rice_min_length(n))
        return error_fmt(why, whylen, "%s length %u is less than the header and anchors of %u "
                    "values take (%llu bytes)", cname, length, n,
                    (unsigned long long)rice_min_length(n));
    for (int i = 1; i < (int)RICE_HEADER; i++)
        if (src[i])
            return error_fmt(why, whylen, "%s header has reserved bytes set", cname);
    d->xbits = src[0];
    if (d->xbits > 64)
        return error_fmt(why, whylen, "%s escape width %u exceeds 64", cname, d->xbits);
    d->kmax = k;
    d->anchors = src + RICE_HEADER;
    d->stream = d->anchors + 4 * (size_t)anchor_count(n);
    d->stream_bytes = length - rice_min_length(n);
    return 0;
}

/* Walks values [from, to) starting at stream bit p with r, checking that
 * each anchor it meets points where its value's code starts (a DRICE one
 * at an escape), so that a whole decode that succeeds vouches for every
 * slice; stores values [first, to) at out when out is set. */
static int walk(struct rice_reader *r, const struct rice_data *d, uint64_t p, uint32_t from,
                uint32_t to, uint32_t first, uint8_t *out, uint64_t *end_bit, const char *cname,
                char *why, size_t whylen)
{
    const uint64_t nbits = d->stream_bytes * 8;
    const uint64_t safe = d->stream_bytes > TAIL_BYTES ? (d->stream_bytes - TAIL_BYTES) * 8 : 0;
    uint8_t tail[TAIL_BYTES + 48] = {0};
    uint64_t tail_start = 0; /* the copy's first bit, once made */
    const uint8_t *s = d->stream;
    uint64_t limit = safe; /* codes that start below it are read in place */
    for (uint32_t i = from; i < to; i++) {
        if (p >= limit && s == d->stream) {
            uint64_t from_byte = safe / 8;
            memcpy(tail, d->stream + from_byte, d->stream_bytes - from_byte);
            tail_start = from_byte * 8;
            s = tail;
            limit = UINT64_MAX;
        }
        if (i % RICE_ANCHOR == 0) {
            uint32_t j = i / RICE_ANCHOR;
            if (anchor_bit(d, j) != p)
                return error_fmt(why, whylen, "%s anchor %u points at bit %llu, but value %u starts "
                            "at bit %llu", cname, j, (unsigned long long)anchor_bit(d, j), i,
                            (unsigned long long)p);
            if ((r->k = anchor_k(d, j)) > d->kmax)
                return error_fmt(why, whylen, "%s block %u has remainder width %u, over the "
                            "column's %u", cname, j, r->k, d->kmax);
        }
        uint64_t local = p - tail_start;
        int rc = decode_one(r, s, &local);
        if (rc < 0)
            return error_fmt(why, whylen, "%s code of value %u at bit %llu is malformed", cname, i,
                        (unsigned long long)p);
        if (r->delta && i % RICE_ANCHOR == 0 && rc != 1)
            return error_fmt(why, whylen, "drice anchor value %u is not an escape", i);
        p = local + tail_start;
        if (p > nbits)
            return error_fmt(why, whylen, "%s stream ends inside value %u", cname, i);
        if (out && i >= first)
            store_u64(out + (size_t)(i - first) * 8, r->prev);
        if (out && s == d->stream) {
            uint32_t block_end = (i / RICE_ANCHOR + 1) * RICE_ANCHOR;
            i = decode_run(r, s, &p, limit, i + 1, block_end < to ? block_end : to, first, out) - 1;
        }
    }
    *end_bit = p;
    return 0;
}

int rice_check_data(bool delta, unsigned k, uint32_t n, const uint8_t *src, uint32_t length,
                    char *why, size_t whylen)
{
    const char *cname = delta ? "drice" : "rice";
    struct rice_data d;
    if (open_data(cname, k, n, src, length, &d, why, whylen) < 0)
        return -1;
    if (n == 0)
        return 0;
    struct rice_reader r = {.delta = delta, .xbits = d.xbits};
    uint64_t end;
    if (walk(&r, &d, 0, 0, n, n, NULL, &end, cname, why, whylen) < 0)
        return -1;
    if ((end + 7) / 8 != d.stream_bytes)
        return error_fmt(why, whylen, "%s codes end at bit %llu of a %llu-byte stream", cname,
                    (unsigned long long)end, (unsigned long long)d.stream_bytes);
    if (end % 8 && d.stream[end / 8] >> (end % 8))
        return error_fmt(why, whylen, "%s stream has bits set after its last code", cname);
    return 0;
}

int rice_decode(bool delta, unsigned k, int64_t base, uint32_t n, uint32_t first,
                uint32_t count, const uint8_t *src, uint32_t length, uint8_t *out, char *why,
                size_t whylen)
{
    const char *cname = delta ? "drice" : "rice";
    struct rice_data d;
    if (open_data(cname, k, n, src, length, &d, why, whylen) < 0)
        return -1;
    if (count == 0)
        return 0;
    uint32_t from = first / RICE_ANCHOR * RICE_ANCHOR;
    uint64_t p = anchor_bit(&d, first / RICE_ANCHOR);
    if (p >= d.stream_bytes * 8)
        return error_fmt(why, whylen, "%s anchor %u points past the stream", cname,
                    first / RICE_ANCHOR);
    struct rice_reader r = {.delta = delta, .xbits = d.xbits, .base = i64_bits(base)};
    uint64_t end;
    return walk(&r, &d, p, from, first + count, first, out, &end, cname, why, whylen);
}
