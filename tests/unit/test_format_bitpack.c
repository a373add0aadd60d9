/* test_format_bitpack.c -- the bit packer against a bit-by-bit reference, at
 * every width 0..64 and every count around word boundaries. */
#include "format/bitpack.h"
#include "tests/unit/test_format_util.h"

#include <criterion/criterion.h>

/* Bit k of the stream, the slow and obvious way. */
static unsigned ref_bit(const uint8_t *p, uint64_t k) { return (p[k / 8] >> (k % 8)) & 1; }

static uint64_t ref_get(const uint8_t *p, uint64_t i, unsigned bits)
{
    uint64_t v = 0;
    for (unsigned b = 0; b < bits; b++)
        v |= (uint64_t)ref_bit(p, i * bits + b) << b;
    return v;
}

/* vals[0..n) packed at bits into out; returns the bytes written. */
static uint64_t pack(const uint64_t *vals, unsigned n, unsigned bits, uint8_t *out)
{
    struct bitpack_writer w;
    bitpack_writer_init(&w, out);
    for (unsigned i = 0; i < n; i++)
        bitpack_put(&w, vals[i], bits);
    bitpack_flush(&w);
    return (uint64_t)(w.out - out);
}

Test(format_bitpack, every_width)
{
    struct rng r = {1234};
    enum { MAXN = 200 };
    uint64_t vals[MAXN];
    uint8_t packed[MAXN * 8 + 16];
    uint8_t unpacked[MAXN * 8 + 1];
    for (unsigned bits = 0; bits <= 64; bits++) {
        const uint64_t mask = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
        for (unsigned n = 0; n <= MAXN; n += n < 70 ? 1 : 13) {
            for (unsigned i = 0; i < n; i++) {
                uint64_t x = rng_next(&r);
                /* Mix in all-ones and zero values: the edges of each width. */
                vals[i] = (i % 5 == 0 ? mask : i % 7 == 0 ? 0 : x) & mask;
            }
            memset(packed, 0xAA, sizeof packed);
            uint64_t len = bitpack_bytes(n, bits);
            cr_assert_eq(pack(vals, n, bits, packed), len, "bits %u n %u", bits, n);
            cr_assert_eq(packed[len], 0xAA, "wrote past the end: bits %u n %u", bits, n);
            if (len && (n * bits) % 8)
                cr_assert_eq(packed[len - 1] >> ((n * bits) % 8), 0, "high bits not zero");
            for (unsigned i = 0; i < n; i++)
                cr_assert_eq(ref_get(packed, i, bits), vals[i], "bits %u n %u i %u", bits, n, i);

            /* Unpack from a copy sized exactly len (ASan sees overreads), into
             * an unaligned output. */
            uint8_t *exact = malloc(len ? len : 1);
            memcpy(exact, packed, len);
            bitpack_unpack(exact, len, n, bits, unpacked + 1);
            for (unsigned i = 0; i < n; i++) {
                uint64_t got;
                memcpy(&got, unpacked + 1 + i * 8, 8);
                cr_assert_eq(got, vals[i], "unpack bits %u n %u i %u", bits, n, i);
            }
            /* A short input must not be read past its end either. */
            if (len > 0) {
                bitpack_unpack(exact, len - 1, n, bits, unpacked + 1);
                bitpack_unpack(exact, 0, n, bits, unpacked + 1);
            }
            free(exact);
        }
    }
}

Test(format_bitpack, width)
{
    cr_assert_eq(bitpack_width(0), 0);
    cr_assert_eq(bitpack_width(1), 1);
    cr_assert_eq(bitpack_width(15), 4);
    cr_assert_eq(bitpack_width(16), 5);
    cr_assert_eq(bitpack_width(UINT64_MAX), 64);
    cr_assert_eq(bitpack_width((uint64_t)1 << 63), 64);
    cr_assert_eq(bitpack_bytes(0, 64), 0);
    cr_assert_eq(bitpack_bytes(3, 3), 2);
    cr_assert_eq(bitpack_bytes(FORMAT_MAX_VALUES, 64), (uint64_t)FORMAT_MAX_VALUES * 8);
    cr_assert_eq(bitpack_bytes(UINT32_MAX, 255), ((uint64_t)UINT32_MAX * 255 + 7) / 8);
}

/* unpack_at, unpack_add and unpack_sum from every start of a stream sized
 * exactly (the fast path reads 8 bytes at a time while they are in bounds,
 * then the careful one takes over): the same values as the reference. */
Test(format_bitpack, offsets_add_and_sum)
{
    struct rng r = {4321};
    enum { N = 90 };
    uint64_t vals[N];
    uint8_t packed[N * 8 + 8], out[N * 8 + 1];
    for (unsigned bits = 0; bits <= 64; bits++) {
        const uint64_t mask = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
        for (unsigned i = 0; i < N; i++)
            vals[i] = (i % 4 == 0 ? mask : rng_next(&r)) & mask;
        pack(vals, N, bits, packed);
        uint64_t len = bitpack_bytes(N, bits);
        uint8_t *exact = malloc(len ? len : 1);
        memcpy(exact, packed, len);
        const uint64_t add = 0xFFFFFFFFFFFFFFF0ull, step = (uint64_t)INT64_MIN + 3;
        for (unsigned first = 0; first <= N; first++) {
            unsigned n = N - first;
            bitpack_unpack_at(exact, len, first, n, bits, out + 1);
            for (unsigned i = 0; i < n; i++) {
                uint64_t got;
                memcpy(&got, out + 1 + i * 8, 8);
                cr_assert_eq(got, vals[first + i], "at bits %u first %u i %u", bits, first, i);
            }
            bitpack_unpack_add(exact, len, first, n, bits, add, out + 1);
            for (unsigned i = 0; i < n; i++) {
                uint64_t got;
                memcpy(&got, out + 1 + i * 8, 8);
                cr_assert_eq(got, vals[first + i] + add, "add bits %u first %u", bits, first);
            }
            uint64_t prev = 77, last = bitpack_unpack_sum(exact, len, first, n, bits, step, prev,
                                                          out + 1);
            for (unsigned i = 0; i < n; i++) {
                uint64_t got;
                memcpy(&got, out + 1 + i * 8, 8);
                prev += step + vals[first + i];
                cr_assert_eq(got, prev, "sum bits %u first %u i %u", bits, first, i);
            }
            cr_assert_eq(last, prev);
        }
        /* Short inputs: garbage, never a read past them (ASan). */
        if (len) {
            bitpack_unpack_add(exact, len - 1, 3, N - 3, bits, 1, out + 1);
            bitpack_unpack_sum(exact, len / 2, 0, N, bits, 1, 0, out + 1);
        }
        free(exact);
    }
}
