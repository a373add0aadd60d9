/* test_format_roundtrip.c -- blocks decode to exactly what was encoded.
 *
 * Property tests over seeded random columns of every type and distribution
 * (constant, small and full ranges, the int64 and int128 extremes, sorted and
 * evenly spaced timestamps, NaNs), every codec forced and every policy; plus
 * the SMALLEST policy's choices: it must pick the smallest encoding, break
 * ties towards RAW, and actually compress the columns the store writes; and
 * the QUICK policy's: the smallest of the one-pass codecs, never another. */
#include "tests/unit/test_format_util.h"
#include "base/scratch.h"

#include <criterion/criterion.h>
#include <stdio.h>

/* A generated column and the codec it is forced to (or COLUMN_CODEC_AUTO). */
struct gcol {
    struct format_column col;
    void *mem;
    int codec;
};

static uint32_t pick_n(struct rng *r)
{
    static const uint32_t sizes[] = {0, 1, 2, 3, 7, 8, 9, 63, 64, 65, 127, 128, 129, 1000, 4096};
    switch (rng_below(r, 10)) {
    case 0: case 1: case 2: case 3: case 4: case 5:
        return sizes[rng_below(r, sizeof sizes / sizeof *sizes)];
    case 6: case 7: case 8:
        return (uint32_t)rng_below(r, 3000);
    default:
        return rng_below(r, 30) == 0 ? 50000 + (uint32_t)rng_below(r, 50000)
                                     : (uint32_t)rng_below(r, 300);
    }
}

/* Whether an i128 column's smallest value fits in int64 (a directory base)
 * and its range is at most max_range. */
static bool i128_fits(const i128 *v, uint32_t n, u128 max_range)
{
    if (n == 0)
        return true;
    i128 min = v[0], max = v[0];
    for (uint32_t i = 1; i < n; i++) {
        if (v[i] < min)
            min = v[i];
        if (v[i] > max)
            max = v[i];
    }
    return min >= INT64_MIN && min <= INT64_MAX && (u128)max - (u128)min <= max_range;
}

/* BITPACK holds a range of 64 bits; PFOR codes the offsets from the
 * smallest as i64 values, below 2^63. */
static bool i128_fits_bitpack(const i128 *v, uint32_t n) { return i128_fits(v, n, UINT64_MAX); }
static bool i128_fits_pfor(const i128 *v, uint32_t n) { return i128_fits(v, n, INT64_MAX); }

static void gen_column(struct rng *r, enum format_type type, int dist, uint32_t n,
                       struct gcol *g)
{
    size_t size = format_type_size(type);
    *g = (struct gcol){0};
    g->mem = malloc(n ? n * size : 1);
    cr_assert(g->mem);
    if (type == FORMAT_I64)
        gen_i64(r, dist, g->mem, n);
    else if (type == FORMAT_I128)
        gen_i128(r, dist, g->mem, n);
    else
        gen_f64(r, dist, g->mem, n);
    g->col.type = type;
    g->col.n = n;
    g->col.values = g->mem;
    g->codec = COLUMN_CODEC_AUTO;
}

static void random_column(struct rng *r, struct gcol *g)
{
    enum format_type type = (enum format_type)(1 + rng_below(r, 3));
    int ndist = type == FORMAT_I64 ? DIST_I64 : type == FORMAT_I128 ? DIST_I128 : DIST_F64;
    gen_column(r, type, (int)rng_below(r, (uint64_t)ndist), pick_n(r), g);
    if (rng_below(r, 2)) {
        /* Force one of the codecs valid for these values. */
        int ok[8], nok = 0;
        ok[nok++] = FORMAT_RAW;
        ok[nok++] = FORMAT_LZ4;
        if (type == FORMAT_I64) {
            ok[nok++] = FORMAT_BITPACK;
            ok[nok++] = FORMAT_DELTA;
            ok[nok++] = FORMAT_PFOR;
            ok[nok++] = FORMAT_DPFOR;
            ok[nok++] = FORMAT_RICE;
            ok[nok++] = FORMAT_DRICE;
        } else if (type == FORMAT_I128 && i128_fits_bitpack(g->mem, g->col.n)) {
            ok[nok++] = FORMAT_BITPACK;
            if (i128_fits_pfor(g->mem, g->col.n))
                ok[nok++] = FORMAT_PFOR;
        }
        g->codec = ok[rng_below(r, (uint64_t)nok)];
    }
}

/* Checks that block buf[0..len) holds exactly cols, in order. */
static void check_block(const uint8_t *buf, size_t len, const struct format_block_info *info,
                        const struct gcol *g, int ncols, enum format_policy policy)
{
    struct format_block b;
    struct format_error err = {{0}};
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "open: %s", err.message);
    cr_assert_eq(format_block_verify(&b, &err), 0, "verify: %s", err.message);
    cr_assert_eq(b.ncolumns, ncols);
    cr_assert_eq(b.info.span_start, info->span_start);
    cr_assert_eq(b.info.width, info->width);
    cr_assert_eq(b.info.ncells, info->ncells);
    cr_assert_eq(len % 8, 0);

    uint32_t prev_end = 32 + 40 * (uint32_t)ncols;
    for (int i = 0; i < ncols; i++) {
        const struct format_column *c = &g[i].col;
        struct format_column_info ci;
        format_block_column(&b, i, &ci);
        cr_assert_eq(ci.role, c->role);
        cr_assert_eq(ci.index, c->index);
        cr_assert_eq(ci.type, c->type);
        cr_assert_eq(ci.n, c->n);
        if (g[i].codec != COLUMN_CODEC_AUTO)
            cr_assert_eq((int)ci.codec, g[i].codec);
        else if (policy == FORMAT_POLICY_RAW)
            cr_assert_eq(ci.codec, FORMAT_RAW);
        else if (policy == FORMAT_POLICY_QUICK)
            cr_assert(ci.codec == FORMAT_RAW || ci.codec == FORMAT_BITPACK ||
                          ci.codec == FORMAT_DELTA || ci.codec == FORMAT_GFOR,
                      "QUICK picked %s", format_codec_name(ci.codec));
        cr_assert_eq(ci.offset % 8, 0);
        if (ci.offset < prev_end) {
            /* Only a copy of an earlier column may point back, at its bytes. */
            bool shared = false;
            for (int j = 0; j < i && !shared; j++) {
                struct format_column_info cj;
                format_block_column(&b, j, &cj);
                shared = cj.offset == ci.offset && cj.length == ci.length &&
                         cj.codec == ci.codec && cj.checksum == ci.checksum;
            }
            cr_assert(shared && ci.length > 0, "column %d overlaps another's bytes", i);
        } else {
            prev_end = ci.offset + ci.length;
        }
        cr_assert_eq(XXH64(buf + ci.offset, ci.length, 0), ci.checksum);
        cr_assert_eq(format_block_find(&b, c->role, c->index), i);

        size_t bytes = (size_t)c->n * format_type_size(c->type);
        /* Decode into a deliberately misaligned buffer half of the time. */
        int shift = (int)(c->n % 2);
        uint8_t *out = malloc(bytes + 1);
        cr_assert(out);
        cr_assert_eq(format_block_decode(&b, i, out + shift, &err), 0, "decode %d: %s", i,
                     err.message);
        cr_assert(bytes == 0 || memcmp(out + shift, c->values, bytes) == 0,
                  "column %d (%s, n %u) decodes to different values", i,
                  format_codec_name(ci.codec), c->n);
        /* Ranges: the empty one at each end, a single value, and a few
         * picked from the column's own bytes (deterministic per column). */
        uint32_t picks[][2] = {{0, 0}, {c->n, 0}, {0, c->n}, {c->n / 3, c->n ? 1 : 0},
                               {c->n / 7, c->n - c->n / 7 - c->n / 5},
                               {c->n ? (uint32_t)(ci.checksum % c->n) : 0, 0}};
        picks[5][1] = c->n - picks[5][0] > 3 ? 3 : c->n - picks[5][0];
        size_t size = format_type_size(c->type);
        for (size_t p = 0; p < sizeof picks / sizeof picks[0]; p++) {
            uint32_t first = picks[p][0], count = picks[p][1];
            cr_assert_eq(format_block_decode_range(&b, i, first, count, out + shift, &err), 0,
                         "decode_range %d [%u, +%u): %s", i, first, count, err.message);
            cr_assert(count == 0 ||
                          memcmp(out + shift, (const uint8_t *)c->values + first * size,
                                 count * size) == 0,
                      "column %d (%s, n %u) rows [%u, +%u) decode differently", i,
                      format_codec_name(ci.codec), c->n, first, count);
        }
        cr_assert_neq(format_block_decode_range(&b, i, c->n, 1, out + shift, &err), 0,
                      "a range past the end is refused");
        free(out);

        const void *raw = format_block_raw(&b, i, true, &err);
        if (ci.codec == FORMAT_RAW) {
            cr_assert(raw, "raw: %s", err.message);
            cr_assert_eq(format_block_raw(&b, i, false, &err), raw);
            for (uint32_t k = 0; k < c->n; k++) {
                if (c->type == FORMAT_I64)
                    cr_assert_eq(format_load_i64(raw, k), ((const int64_t *)c->values)[k]);
                else if (c->type == FORMAT_I128)
                    cr_assert(format_load_i128(raw, k) == ((const i128 *)c->values)[k]);
                else {
                    double x = format_load_f64(raw, k);
                    cr_assert_eq(memcmp(&x, (const double *)c->values + k, 8), 0);
                }
            }
        } else {
            cr_assert_null(raw);
            cr_assert(strstr(err.message, "is not raw"), "%s", err.message);
        }
    }
    cr_assert_leq(prev_end + 8, len);
    cr_assert_geq(prev_end + 8 + 7, len, "no slack before the trailer");

    /* Opening without the trailer check sees the same block. */
    struct format_block b2;
    cr_assert_eq(format_block_open(&b2, buf, len, false, &err), 0, "%s", err.message);
    cr_assert_eq(b2.ncolumns, ncols);
}

static void free_columns(struct gcol *g, int n)
{
    for (int i = 0; i < n; i++)
        free(g[i].mem);
}

Test(format_roundtrip, random_blocks, .timeout = 120)
{
    enum { BLOCKS = 2000, MAXCOLS = 8 };
    for (uint64_t seed = 1; seed <= BLOCKS; seed++) {
        struct rng r = {seed * 7919};
        int ncols = (int)rng_below(&r, MAXCOLS + 1);
        struct gcol g[MAXCOLS];
        struct format_column cols[MAXCOLS];
        int codecs[MAXCOLS];
        for (int i = 0; i < ncols; i++) {
            random_column(&r, &g[i]);
            g[i].col.role = (uint16_t)rng_below(&r, 4);
            g[i].col.index = (uint16_t)i; /* (role, index) unique */
            g[i].col.compact = rng_below(&r, 2);
            cols[i] = g[i].col;
            codecs[i] = g[i].codec;
        }
        enum format_policy policy = (enum format_policy)rng_below(&r, 3);
        struct format_block_info info = {
            .span_start = i64_of(rng_next(&r)), .width = 3600000000, .ncells = (uint32_t)seed};
        size_t len;
        uint8_t *buf = encode_block(&info, cols, ncols, policy, codecs, &len);
        check_block(buf, len, &info, g, ncols, policy);

        /* The public encoder gives the same bytes when nothing is forced. */
        bool forced = false;
        for (int i = 0; i < ncols; i++)
            forced |= codecs[i] != COLUMN_CODEC_AUTO;
        if (!forced) {
            size_t cap = format_block_bound(cols, ncols), len2;
            uint8_t *buf2 = malloc(cap);
            struct format_error err;
            cr_assert_eq(format_block_encode(&info, cols, ncols, policy, buf2, cap, &len2, &err),
                         0, "%s", err.message);
            cr_assert_eq(len2, len);
            cr_assert_eq(memcmp(buf, buf2, len), 0);
            free(buf2);
        }
        free(buf);
        free_columns(g, ncols);
    }
}

/* Every type x distribution x size x codec, one column per block. */
Test(format_roundtrip, every_codec_every_distribution, .timeout = 120)
{
    static const uint32_t sizes[] = {0, 1, 2, 5, 8, 17, 64, 100, 1001};
    struct rng r = {42};
    int blocks = 0;
    for (int type = FORMAT_I64; type <= FORMAT_F64; type++) {
        int ndist = type == FORMAT_I64 ? DIST_I64 : type == FORMAT_I128 ? DIST_I128 : DIST_F64;
        for (int dist = 0; dist < ndist; dist++) {
            for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
                for (int codec = COLUMN_CODEC_AUTO; codec <= FORMAT_CODEC_LAST; codec++) {
                    for (int policy = 0; policy < 3; policy++) {
                        if (codec != COLUMN_CODEC_AUTO && policy != 0)
                            continue; /* a forced codec ignores the policy */
                        struct gcol g;
                        struct rng rr = r;
                        gen_column(&rr, (enum format_type)type, dist, sizes[s], &g);
                        r.s++;
                        g.col.role = 1;
                        g.col.index = 2;
                        g.codec = codec;
                        bool valid = codec == COLUMN_CODEC_AUTO || codec == FORMAT_RAW ||
                                     codec == FORMAT_LZ4 ||
                                     (type == FORMAT_I64) ||
                                     (type == FORMAT_I128 && codec == FORMAT_BITPACK &&
                                      i128_fits_bitpack(g.mem, g.col.n)) ||
                                     (type == FORMAT_I128 && codec == FORMAT_PFOR &&
                                      i128_fits_pfor(g.mem, g.col.n));
                        struct format_block_info info = {.span_start = 0, .width = 60000000};
                        if (valid) {
                            size_t len;
                            uint8_t *buf = encode_block(&info, &g.col, 1,
                                                        (enum format_policy)policy, &g.codec,
                                                        &len);
                            check_block(buf, len, &info, &g, 1, (enum format_policy)policy);
                            free(buf);
                            blocks++;
                        } else {
                            size_t cap = format_block_bound(&g.col, 1), len;
                            uint8_t *buf = malloc(cap);
                            struct format_error err;
                            cr_assert_eq(format_block_encode_codecs(&info, &g.col, 1,
                                                                    FORMAT_POLICY_SMALLEST,
                                                                    &g.codec, buf, cap, &len,
                                                                    &err),
                                         -1);
                            cr_assert(strncmp(err.message, "column 0 (role 1, index 2): ", 28) == 0,
                                      "%s", err.message);
                            free(buf);
                        }
                        free(g.mem);
                    }
                }
            }
        }
    }
    cr_assert_gt(blocks, 500);
}

/* The length of col's encoding by each codec forced (ok[codec]: the codec
 * takes it). */
static void forced_lengths(const struct format_column *col, uint32_t length[FORMAT_CODEC_LAST + 1],
                           bool ok[FORMAT_CODEC_LAST + 1])
{
    struct format_block_info info = {0};
    for (int codec = FORMAT_RAW; codec <= FORMAT_CODEC_LAST; codec++) {
        size_t cap = format_block_bound(col, 1), len;
        uint8_t *buf = malloc(cap);
        struct format_error err;
        ok[codec] = format_block_encode_codecs(&info, col, 1, FORMAT_POLICY_SMALLEST, &codec, buf,
                                               cap, &len, &err) == 0;
        if (ok[codec])
            memcpy(&length[codec], buf + 32 + 16, 4); /* the directory entry's length */
        free(buf);
    }
}

/* The SMALLEST policy picks the shortest encoding, ties to the earliest of
 * RAW, BITPACK, DELTA, PFOR, DPFOR, RICE, DRICE, LZ4; the RICE codecs only
 * for a column marked compact. */
Test(format_roundtrip, smallest_is_smallest, .timeout = 120)
{
    for (uint64_t seed = 1; seed <= 1000; seed++) {
        struct rng r = {seed * 104729};
        struct gcol g;
        random_column(&r, &g);
        g.codec = COLUMN_CODEC_AUTO;
        g.col.compact = seed % 2;
        uint32_t length[FORMAT_CODEC_LAST + 1];
        bool ok[FORMAT_CODEC_LAST + 1] = {false};
        struct format_block_info info = {0};
        forced_lengths(&g.col, length, ok);
        size_t len;
        uint8_t *buf = encode_block(&info, &g.col, 1, FORMAT_POLICY_SMALLEST, NULL, &len);
        struct format_block b;
        struct format_error err;
        cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0);
        struct format_column_info ci;
        format_block_column(&b, 0, &ci);
        static const int order[] = {FORMAT_RAW,  FORMAT_BITPACK, FORMAT_DELTA, FORMAT_PFOR,
                                    FORMAT_DPFOR, FORMAT_RICE,   FORMAT_DRICE, FORMAT_LZ4};
        int want = -1;
        for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
            int codec = order[k];
            if ((codec == FORMAT_RICE || codec == FORMAT_DRICE) && !g.col.compact)
                continue;
            if (ok[codec] && (want < 0 || length[codec] < length[want]))
                want = codec;
        }
        cr_assert_eq((int)ci.codec, want, "seed %llu: %s type %d n %u: picked %s (%u bytes)",
                     (unsigned long long)seed, format_codec_name((enum format_codec)want),
                     g.col.type, g.col.n, format_codec_name(ci.codec), ci.length);
        cr_assert_eq(ci.length, length[want]);
        free(buf);
        free(g.mem);
    }
}

/* The QUICK policy picks the shortest of RAW, BITPACK, then GFOR for a
 * seekable i64 column or DELTA for any other, ties to the earliest: the
 * codecs whose plans take one pass over the values. */
Test(format_roundtrip, quick_is_smallest_of_one_pass_codecs, .timeout = 120)
{
    int picked[FORMAT_CODEC_LAST + 1] = {0};
    for (uint64_t seed = 1; seed <= 1000; seed++) {
        struct rng r = {seed * 7727};
        struct gcol g;
        random_column(&r, &g);
        g.col.compact = seed % 2; /* no RICE for QUICK, compact or not */
        g.col.seekable = seed % 3 == 0;
        uint32_t length[FORMAT_CODEC_LAST + 1];
        bool ok[FORMAT_CODEC_LAST + 1] = {false};
        struct format_block_info info = {0};
        forced_lengths(&g.col, length, ok);
        bool i64 = g.col.type == FORMAT_I64;
        const int order[] = {FORMAT_RAW, FORMAT_BITPACK,
                             g.col.seekable ? (i64 ? FORMAT_GFOR : -1) : FORMAT_DELTA};
        int want = -1;
        for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
            int codec = order[k];
            if (codec >= 0 && ok[codec] && (want < 0 || length[codec] < length[want]))
                want = codec;
        }
        size_t len;
        uint8_t *buf = encode_block(&info, &g.col, 1, FORMAT_POLICY_QUICK, NULL, &len);
        struct format_block b;
        struct format_error err;
        cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0);
        struct format_column_info ci;
        format_block_column(&b, 0, &ci);
        cr_assert_eq((int)ci.codec, want, "seed %llu: %s type %d n %u: picked %s (%u bytes)",
                     (unsigned long long)seed, format_codec_name((enum format_codec)want),
                     g.col.type, g.col.n, format_codec_name(ci.codec), ci.length);
        cr_assert_eq(ci.length, length[want]);
        picked[ci.codec]++;
        free(buf);
        free(g.mem);
    }
    /* The columns drawn reach each of the four. */
    cr_assert(picked[FORMAT_RAW] && picked[FORMAT_BITPACK] && picked[FORMAT_DELTA] &&
              picked[FORMAT_GFOR], "RAW %d BITPACK %d DELTA %d GFOR %d", picked[FORMAT_RAW],
              picked[FORMAT_BITPACK], picked[FORMAT_DELTA], picked[FORMAT_GFOR]);
}

static struct format_column_info encode_one(const struct format_column *col,
                                            enum format_policy policy)
{
    struct format_block_info info = {0};
    size_t len;
    uint8_t *buf = encode_block(&info, col, 1, policy, NULL, &len);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
    struct format_column_info ci;
    format_block_column(&b, 0, &ci);
    int64_t *out = malloc((size_t)col->n * format_type_size(col->type) + 1);
    cr_assert_eq(format_block_decode(&b, 0, out, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(out, col->values, (size_t)col->n * format_type_size(col->type)), 0);
    free(out);
    free(buf);
    return ci;
}

Test(format_roundtrip, smallest_compresses)
{
    enum { N = 10000 };
    int64_t *v = malloc(N * sizeof *v);
    struct rng r = {7};
    struct format_column col = {.role = 0, .index = 0, .type = FORMAT_I64, .n = N, .values = v};

    /* Small values: 4 bits each. */
    for (int i = 0; i < N; i++)
        v[i] = (int64_t)rng_below(&r, 16);
    struct format_column_info ci = encode_one(&col, FORMAT_POLICY_SMALLEST);
    cr_assert_leq(ci.length, 5100, "%u bytes", ci.length);
    cr_assert_eq(ci.codec, FORMAT_BITPACK);
    cr_assert_eq(ci.bits, 4);
    ci = encode_one(&col, FORMAT_POLICY_RAW);
    cr_assert_eq(ci.codec, FORMAT_RAW);
    cr_assert_eq(ci.length, N * 8);

    /* Hourly bucket offsets: one delta, 0 bits. */
    for (int i = 0; i < N; i++)
        v[i] = 1700000000000000 + (int64_t)i * 3600000000;
    ci = encode_one(&col, FORMAT_POLICY_SMALLEST);
    cr_assert_eq(ci.codec, FORMAT_DELTA);
    cr_assert_eq(ci.bits, 0);
    cr_assert_eq(ci.length, 8);

    /* Sorted timestamps with jitter: still DELTA. */
    for (int i = 0; i < N; i++)
        v[i] = 1700000000000000 + (int64_t)i * 1000000 + (int64_t)rng_below(&r, 1000);
    ci = encode_one(&col, FORMAT_POLICY_SMALLEST);
    cr_assert_eq(ci.codec, FORMAT_DELTA);
    cr_assert_leq(ci.length, 8 + (N * 11 + 7) / 8);

    /* A constant: 0 bits, nothing stored. */
    for (int i = 0; i < N; i++)
        v[i] = -123456789;
    ci = encode_one(&col, FORMAT_POLICY_SMALLEST);
    cr_assert_eq(ci.codec, FORMAT_BITPACK);
    cr_assert_eq(ci.length, 0);

    /* Four wide values in a repeating pattern: LZ4. */
    for (int i = 0; i < N; i++)
        v[i] = i64_of(0x0123456789abcdefull * (uint64_t)(i % 4 + 1));
    ci = encode_one(&col, FORMAT_POLICY_SMALLEST);
    cr_assert_eq(ci.codec, FORMAT_LZ4);
    cr_assert_lt(ci.length, 1000);

    /* Incompressible: every codec ties with or loses to RAW. */
    for (int i = 0; i < N; i++)
        v[i] = i64_of(rng_next(&r));
    v[0] = INT64_MIN;
    v[1] = INT64_MAX;
    ci = encode_one(&col, FORMAT_POLICY_SMALLEST);
    cr_assert_eq(ci.codec, FORMAT_RAW);

    /* n = 0: every codec takes 0 bytes, RAW wins the tie. */
    col.n = 0;
    ci = encode_one(&col, FORMAT_POLICY_SMALLEST);
    cr_assert_eq(ci.codec, FORMAT_RAW);
    cr_assert_eq(ci.length, 0);
    free(v);

    /* I128 sums close together: bitpacked. */
    i128 *w = malloc(N * sizeof *w);
    for (int i = 0; i < N; i++)
        w[i] = (i128)1000000000000000 + (i128)rng_below(&r, 256);
    struct format_column c128 = {.type = FORMAT_I128, .n = N, .values = w};
    ci = encode_one(&c128, FORMAT_POLICY_SMALLEST);
    cr_assert_eq(ci.codec, FORMAT_BITPACK);
    cr_assert_eq(ci.bits, 8);
    cr_assert_eq(ci.length, N);
    /* Beyond int64 the base does not fit the directory: not bitpacked. */
    for (int i = 0; i < N; i++)
        w[i] = (i128)INT64_MAX * 4 + (i128)rng_below(&r, 256);
    ci = encode_one(&c128, FORMAT_POLICY_SMALLEST);
    cr_assert_neq(ci.codec, FORMAT_BITPACK);
    free(w);

    /* Constant doubles: LZ4. */
    double *d = malloc(N * sizeof *d);
    for (int i = 0; i < N; i++)
        d[i] = 0.5;
    struct format_column cf = {.type = FORMAT_F64, .n = N, .values = d};
    ci = encode_one(&cf, FORMAT_POLICY_SMALLEST);
    cr_assert_eq(ci.codec, FORMAT_LZ4);
    cr_assert_lt(ci.length, 1000);
    free(d);
}

Test(format_roundtrip, empty_block)
{
    struct format_block_info info = {.span_start = -5, .width = 1, .ncells = 0};
    size_t len;
    uint8_t *buf = encode_block(&info, NULL, 0, FORMAT_POLICY_SMALLEST, NULL, &len);
    cr_assert_eq(len, 40);
    cr_assert_eq(format_block_bound(NULL, 0), 40);
    check_block(buf, len, &info, NULL, 0, FORMAT_POLICY_SMALLEST);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0);
    cr_assert_eq(format_block_find(&b, 0, 0), -1);
    free(buf);
}

Test(format_roundtrip, find)
{
    int64_t a[] = {1, 2, 3};
    struct format_column cols[] = {
        {.role = 1, .index = 0, .type = FORMAT_I64, .n = 3, .values = a},
        {.role = 2, .index = 0, .type = FORMAT_I64, .n = 2, .values = a},
        {.role = 1, .index = 1, .type = FORMAT_I64, .n = 1, .values = a},
        {.role = 2, .index = 0, .type = FORMAT_I64, .n = 0, .values = NULL},
    };
    struct format_block_info info = {0};
    size_t len;
    uint8_t *buf = encode_block(&info, cols, 4, FORMAT_POLICY_SMALLEST, NULL, &len);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0);
    cr_assert_eq(format_block_find(&b, 1, 0), 0);
    cr_assert_eq(format_block_find(&b, 2, 0), 1, "the first of two equal tags");
    cr_assert_eq(format_block_find(&b, 1, 1), 2);
    cr_assert_eq(format_block_find(&b, 1, 2), -1);
    cr_assert_eq(format_block_find(&b, 65535, 65535), -1);
    free(buf);
}

/* LMDB hands out values at any address: open and read at every misalignment. */
Test(format_roundtrip, unaligned_buffer)
{
    int64_t v[100];
    for (int i = 0; i < 100; i++)
        v[i] = i * 1000 - 50000;
    i128 w[50];
    for (int i = 0; i < 50; i++)
        w[i] = (i128)i << 100;
    struct format_column cols[] = {
        {.role = 0, .index = 0, .type = FORMAT_I64, .n = 100, .values = v},
        {.role = 0, .index = 1, .type = FORMAT_I128, .n = 50, .values = w},
    };
    struct format_block_info info = {.span_start = 1, .width = 2, .ncells = 3};
    size_t len;
    uint8_t *buf = encode_block(&info, cols, 2, FORMAT_POLICY_RAW, NULL, &len);
    uint8_t *shifted = malloc(len + 8);
    for (int s = 1; s < 8; s++) {
        memcpy(shifted + s, buf, len);
        struct format_block b;
        struct format_error err;
        cr_assert_eq(format_block_open(&b, shifted + s, len, true, &err), 0, "%s", err.message);
        cr_assert_eq(format_block_verify(&b, &err), 0);
        const void *p = format_block_raw(&b, 0, true, &err);
        cr_assert(p);
        for (int i = 0; i < 100; i++)
            cr_assert_eq(format_load_i64(p, (size_t)i), v[i]);
        p = format_block_raw(&b, 1, true, &err);
        cr_assert(p);
        for (int i = 0; i < 50; i++)
            cr_assert(format_load_i128(p, (size_t)i) == w[i]);
    }
    free(shifted);
    free(buf);
}

/* The encoder never writes past cap, and says so when cap is short. */
Test(format_roundtrip, output_too_small)
{
    struct rng r = {99};
    for (int k = 0; k < 40; k++) {
        struct gcol g;
        random_column(&r, &g);
        g.col.n = g.col.n % 500;
        struct format_block_info info = {0};
        size_t len;
        uint8_t *buf = encode_block(&info, &g.col, 1, FORMAT_POLICY_SMALLEST, &g.codec, &len);
        for (size_t cap = 0; cap < len; cap += 1 + cap / 16) {
            uint8_t *out = malloc(cap ? cap : 1);
            struct format_error err = {{0}};
            size_t len2;
            cr_assert_eq(format_block_encode_codecs(&info, &g.col, 1, FORMAT_POLICY_SMALLEST,
                                                    &g.codec, out, cap, &len2, &err),
                         -1, "cap %zu of %zu", cap, len);
            cr_assert(strstr(err.message, "too small"), "%s", err.message);
            free(out);
        }
        /* Exactly len is enough. */
        uint8_t *out = malloc(len);
        size_t len2;
        struct format_error err;
        cr_assert_eq(format_block_encode_codecs(&info, &g.col, 1, FORMAT_POLICY_SMALLEST,
                                                &g.codec, out, len, &len2, &err),
                     0, "%s", err.message);
        cr_assert_eq(len2, len);
        cr_assert_eq(memcmp(out, buf, len), 0);
        free(out);
        free(buf);
        free(g.mem);
    }
}

static void expect_encode_error(const struct format_column *cols, int ncols, const int *codecs,
                                enum format_policy policy, const char *message)
{
    struct format_block_info info = {0};
    uint8_t buf[4096];
    size_t len;
    struct format_error err = {{0}};
    cr_assert_eq(format_block_encode_codecs(&info, cols, ncols, policy, codecs, buf, sizeof buf,
                                            &len, &err),
                 -1);
    cr_assert_str_eq(err.message, message);
}

Test(format_roundtrip, encode_errors)
{
    double d[2] = {1, 2};
    i128 w[2] = {0, (i128)1 << 80};
    int64_t v[2] = {1, 2};
    struct format_column cf = {.role = 3, .index = 4, .type = FORMAT_F64, .n = 2, .values = d};
    struct format_column cw = {.role = 0, .index = 1, .type = FORMAT_I128, .n = 2, .values = w};
    int delta = FORMAT_DELTA, bitpack = FORMAT_BITPACK, bogus = 9, pfor = FORMAT_PFOR,
        dpfor = FORMAT_DPFOR;
    expect_encode_error(&cw, 1, &pfor, FORMAT_POLICY_SMALLEST,
                        "column 0 (role 0, index 1): i128 values too far apart (or too far "
                        "from zero) for pfor");
    expect_encode_error(&cw, 1, &dpfor, FORMAT_POLICY_SMALLEST,
                        "column 0 (role 0, index 1): codec dpfor is not valid for i128 columns");
    expect_encode_error(&cf, 1, &dpfor, FORMAT_POLICY_SMALLEST,
                        "column 0 (role 3, index 4): codec dpfor is not valid for f64 columns");
    expect_encode_error(&cf, 1, &delta, FORMAT_POLICY_SMALLEST,
                        "column 0 (role 3, index 4): codec delta is not valid for f64 columns");
    expect_encode_error(&cf, 1, &bitpack, FORMAT_POLICY_SMALLEST,
                        "column 0 (role 3, index 4): codec bitpack is not valid for f64 columns");
    expect_encode_error(&cw, 1, &delta, FORMAT_POLICY_SMALLEST,
                        "column 0 (role 0, index 1): codec delta is not valid for i128 columns");
    expect_encode_error(&cw, 1, &bitpack, FORMAT_POLICY_SMALLEST,
                        "column 0 (role 0, index 1): i128 values too far apart (or too far "
                        "from zero) for bitpack");
    expect_encode_error(&cf, 1, &bogus, FORMAT_POLICY_SMALLEST,
                        "column 0 (role 3, index 4): unknown codec 9");

    struct format_column bad[2] = {
        {.role = 1, .index = 1, .type = FORMAT_I64, .n = 2, .values = v},
        {.role = 1, .index = 2, .type = (enum format_type)9, .n = 2, .values = v},
    };
    expect_encode_error(bad, 2, NULL, FORMAT_POLICY_SMALLEST,
                        "column 1 (role 1, index 2): unknown type 9");
    bad[1].type = FORMAT_I64;
    bad[1].n = FORMAT_MAX_VALUES + 1;
    expect_encode_error(bad, 2, NULL, FORMAT_POLICY_RAW,
                        "column 1 (role 1, index 2): 268435457 values exceed the limit of "
                        "268435456");
    bad[1].n = 2;
    bad[1].values = NULL;
    expect_encode_error(bad, 2, NULL, FORMAT_POLICY_RAW, "column 1 (role 1, index 2): no values");
    expect_encode_error(bad, 1, NULL, (enum format_policy)5, "unknown encoding policy 5");
    expect_encode_error(bad, 4097, NULL, FORMAT_POLICY_RAW,
                        "a block holds 0 to 4096 columns, not 4097");
    expect_encode_error(bad, -1, NULL, FORMAT_POLICY_RAW, "a block holds 0 to 4096 columns, not -1");
}

Test(format_roundtrip, names)
{
    cr_assert_str_eq(format_codec_name(FORMAT_RAW), "raw");
    cr_assert_str_eq(format_codec_name(FORMAT_BITPACK), "bitpack");
    cr_assert_str_eq(format_codec_name(FORMAT_DELTA), "delta");
    cr_assert_str_eq(format_codec_name(FORMAT_LZ4), "lz4");
    cr_assert_str_eq(format_codec_name(FORMAT_PFOR), "pfor");
    cr_assert_str_eq(format_codec_name(FORMAT_DPFOR), "dpfor");
    cr_assert_str_eq(format_codec_name(FORMAT_RICE), "rice");
    cr_assert_str_eq(format_codec_name(FORMAT_DRICE), "drice");
    cr_assert_str_eq(format_codec_name((enum format_codec)9), "unknown");
    cr_assert_eq(format_type_size(FORMAT_I64), 8);
    cr_assert_eq(format_type_size(FORMAT_I128), 16);
    cr_assert_eq(format_type_size(FORMAT_F64), 8);
    cr_assert_eq(format_type_size((enum format_type)0), 0);
}

/* ---- PFOR and DPFOR on the shapes they are for ------------------------------ */

/* Encodes v[0..n) with codec forced (or AUTO), checks the whole column and
 * every slice [first, first + count) over a grid of starts and lengths
 * (around DPFOR's anchors too), and returns the directory entry. */
static struct format_column_info shaped(const int64_t *v, uint32_t n, int codec)
{
    struct format_column col = {.role = 6, .index = 0, .type = FORMAT_I64, .n = n,
                                .values = n ? v : NULL};
    struct gcol g = {.col = col, .codec = codec};
    struct format_block_info info = {0};
    size_t len;
    uint8_t *buf = encode_block(&info, &col, 1, FORMAT_POLICY_SMALLEST, &g.codec, &len);
    check_block(buf, len, &info, &g, 1, FORMAT_POLICY_SMALLEST);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
    struct format_column_info ci;
    format_block_column(&b, 0, &ci);
    int64_t *out = malloc(((size_t)n + 1) * 8);
    static const uint32_t starts[] = {0, 1, 2, 126, 127, 128, 129, 255, 256, 257, 1000};
    static const uint32_t counts[] = {0, 1, 2, 3, 127, 128, 129, 300};
    for (size_t a = 0; a < sizeof starts / sizeof *starts; a++)
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
            uint32_t first = starts[a], count = counts[c];
            if ((uint64_t)first + count > n)
                continue;
            cr_assert_eq(format_block_decode_range(&b, 0, first, count, out, &err), 0,
                         "%s [%u, +%u): %s", format_codec_name(ci.codec), first, count,
                         err.message);
            for (uint32_t i = 0; i < count; i++)
                cr_assert_eq(out[i], v[first + i], "%s n %u: value %u of [%u, +%u)",
                             format_codec_name(ci.codec), n, first + i, first, count);
        }
    free(out);
    free(buf);
    return ci;
}

enum { SHAPED_N = 5000 };

Test(format_roundtrip, pfor_all_ones)
{
    int64_t *v = malloc(SHAPED_N * sizeof *v);
    for (int i = 0; i < SHAPED_N; i++)
        v[i] = 1;
    /* A constant is BITPACK at 0 bits; forced PFOR holds it too. */
    cr_assert_eq(shaped(v, SHAPED_N, COLUMN_CODEC_AUTO).codec, FORMAT_BITPACK);
    struct format_column_info ci = shaped(v, SHAPED_N, FORMAT_PFOR);
    cr_assert_eq(ci.bits, 0);
    cr_assert_eq(ci.length, 8, "header only, no exceptions");
    ci = shaped(v, SHAPED_N, FORMAT_DPFOR);
    cr_assert_eq(ci.codec, FORMAT_DPFOR);
    free(v);
}

Test(format_roundtrip, pfor_ones_with_rare_large)
{
    int64_t *v = malloc(SHAPED_N * sizeof *v);
    struct rng r = {11};
    for (int i = 0; i < SHAPED_N; i++)
        v[i] = rng_below(&r, 50) == 0 ? 1 + (int64_t)rng_below(&r, 100000) : 1;
    v[0] = 70000; /* an exception at position 0 */
    v[SHAPED_N - 1] = 99999; /* and at the last */
    struct format_column_info ci = shaped(v, SHAPED_N, COLUMN_CODEC_AUTO);
    cr_assert_eq(ci.codec, FORMAT_PFOR, "picked %s", format_codec_name(ci.codec));
    cr_assert_eq(ci.bits, 0);
    /* 17 bits a value bit-packed; about 2 % exceptions of 13 + 17 bits. */
    cr_assert_lt(ci.length, SHAPED_N / 8 + 1, "%u bytes", ci.length);
    /* Run rows: mostly 1, a tail of 2 to 30. */
    for (int i = 0; i < SHAPED_N; i++)
        v[i] = rng_below(&r, 4) ? 1 : 1 + (int64_t)rng_below(&r, rng_below(&r, 8) ? 3 : 30);
    ci = shaped(v, SHAPED_N, COLUMN_CODEC_AUTO);
    cr_assert_eq(ci.codec, FORMAT_PFOR, "picked %s", format_codec_name(ci.codec));
    cr_assert_lt(ci.length, SHAPED_N * 5 / 8, "%u bytes", ci.length);
    free(v);
}

/* Value codes of runs: ascending within a cell, reset at each cell. */
Test(format_roundtrip, dpfor_ascending_with_resets)
{
    int64_t *v = malloc(SHAPED_N * sizeof *v);
    struct rng r = {12};
    for (int i = 0; i < SHAPED_N;) {
        int runs = 1 + (int)rng_below(&r, 40);
        int64_t x = 250 + (int64_t)rng_below(&r, 3000);
        for (int k = 0; k < runs && i < SHAPED_N; k++, i++) {
            v[i] = x;
            x += 1 + (int64_t)rng_below(&r, rng_below(&r, 10) ? 60 : 5000);
        }
    }
    struct format_column_info ci = shaped(v, SHAPED_N, COLUMN_CODEC_AUTO);
    cr_assert_eq(ci.codec, FORMAT_DPFOR, "picked %s", format_codec_name(ci.codec));
    struct format_column_info bp = shaped(v, SHAPED_N, FORMAT_BITPACK);
    cr_assert_lt(ci.length, bp.length * 3 / 4, "dpfor %u bytes, bitpack %u", ci.length,
                 bp.length);
    shaped(v, SHAPED_N, FORMAT_PFOR);
    /* Strictly descending: every delta negative, dmin the smallest. */
    for (int i = 0; i < SHAPED_N; i++)
        v[i] = 1000000 - 3 * (int64_t)i - (int64_t)rng_below(&r, 2);
    ci = shaped(v, SHAPED_N, FORMAT_DPFOR);
    cr_assert_lt(ci.length, 16 + SHAPED_N / 4 + (SHAPED_N / 128 + 1) * 6, "%u bytes",
                 ci.length);
    free(v);
}

Test(format_roundtrip, pfor_dpfor_extremes)
{
    static const int64_t ext[] = {INT64_MIN, INT64_MAX, 0, -1, 1, INT64_MIN + 1, INT64_MAX - 1};
    int64_t v[600];
    struct rng r = {13};
    for (int shape = 0; shape < 4; shape++) {
        for (int i = 0; i < 600; i++) {
            switch (shape) {
            case 0: v[i] = ext[rng_below(&r, 7)]; break;
            case 1: v[i] = i % 2 ? INT64_MIN : INT64_MAX; break;
            case 2: v[i] = rng_below(&r, 100) ? 5 : ext[rng_below(&r, 7)]; break;
            default: v[i] = INT64_MIN + (int64_t)i * 7 + (i % 97 == 0 ? INT64_MAX : 0); break;
            }
        }
        for (uint32_t n = 0; n <= 600; n = n ? n * 3 : 1) {
            shaped(v, n, FORMAT_PFOR);
            shaped(v, n, FORMAT_DPFOR);
            shaped(v, n, COLUMN_CODEC_AUTO);
        }
    }
}

Test(format_roundtrip, pfor_dpfor_small_n)
{
    int64_t v[3] = {INT64_MAX, INT64_MIN, 42};
    for (uint32_t n = 0; n <= 3; n++) {
        struct format_column_info p = shaped(v, n, FORMAT_PFOR);
        struct format_column_info d = shaped(v, n, FORMAT_DPFOR);
        if (n == 0) {
            cr_assert_eq(p.length, 0);
            cr_assert_eq(d.length, 0);
        }
    }
    /* n = 1: one anchor, nothing else. */
    struct format_column_info d = shaped(v, 1, FORMAT_DPFOR);
    cr_assert_eq(d.length, 16 + 0 + 0 + 0, "%u bytes", d.length);
}

/* A column whose encoding equals an earlier one's (a count of a column that
 * is never NULL is the row count) points at those bytes: the block is as
 * long as with one copy, both columns decode, and a changed value, codec or
 * type stops the sharing. */
Test(format_roundtrip, equal_columns_share_bytes)
{
    enum { N = 2000 };
    int64_t rows[N], other[N];
    for (int i = 0; i < N; i++) {
        rows[i] = 1 + (i * 7919) % 13;
        other[i] = rows[i];
    }
    other[N / 2] += 1;
    struct format_column cols[] = {
        {.role = 3, .index = 0, .type = FORMAT_I64, .n = N, .values = rows},
        {.role = 3, .index = 1, .type = FORMAT_I64, .n = N, .values = rows},
        {.role = 3, .index = 2, .type = FORMAT_I64, .n = N, .values = other},
        {.role = 3, .index = 3, .type = FORMAT_I64, .n = N, .values = rows},
        {.role = 3, .index = 4, .type = FORMAT_I64, .n = N, .values = rows},
    };
    int codecs[] = {COLUMN_CODEC_AUTO, COLUMN_CODEC_AUTO, COLUMN_CODEC_AUTO, COLUMN_CODEC_AUTO,
                    FORMAT_RAW};
    struct format_block_info info = {.span_start = 0, .width = 1, .ncells = N};
    size_t len, alone;
    uint8_t *buf = encode_block(&info, cols, 5, FORMAT_POLICY_SMALLEST, codecs, &len);
    uint8_t *one = encode_block(&info, cols, 1, FORMAT_POLICY_SMALLEST, NULL, &alone);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
    cr_assert_eq(format_block_verify(&b, &err), 0, "%s", err.message);
    struct format_column_info c0, c1, c2, c3, c4;
    format_block_column(&b, 0, &c0);
    format_block_column(&b, 1, &c1);
    format_block_column(&b, 2, &c2);
    format_block_column(&b, 3, &c3);
    format_block_column(&b, 4, &c4);
    cr_assert_eq(c1.offset, c0.offset, "an equal column shares the first one's bytes");
    cr_assert_eq(c3.offset, c0.offset);
    cr_assert_neq(c2.offset, c0.offset, "one value differs");
    cr_assert_neq(c4.offset, c0.offset, "another codec");
    cr_assert_eq(format_block_shares(&b, 0), -1);
    cr_assert_eq(format_block_shares(&b, 1), 0);
    cr_assert_eq(format_block_shares(&b, 2), -1);
    cr_assert_eq(format_block_shares(&b, 3), 0);
    cr_assert_eq(format_block_shares(&b, 4), -1);
    cr_assert_eq(format_block_shares(&b, 5), -1);
    size_t data = (c0.length + 7) & ~7u, raw = N * 8;
    size_t others = ((c2.length + 7) & ~7u) + raw;
    cr_assert_eq(len, alone + 4 * 40 + others, "%zu bytes, %zu alone", len, alone);
    cr_assert_eq(alone, 32 + 40 + data + 8);
    int64_t out[N];
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(format_block_decode(&b, i, out, &err), 0, "%s", err.message);
        cr_assert_eq(memcmp(out, i == 2 ? other : rows, sizeof out), 0, "column %d", i);
    }
    /* A flipped byte in the shared bytes fails every column that reads them. */
    buf[c0.offset + c0.length / 2] ^= 0x10;
    cr_assert_eq(format_block_open(&b, buf, len, false, &err), 0);
    cr_assert_eq(format_block_decode(&b, 0, out, &err), -1);
    cr_assert_eq(format_block_decode(&b, 1, out, &err), -1);
    cr_assert_eq(format_block_decode(&b, 3, out, &err), -1);
    cr_assert_eq(format_block_decode(&b, 2, out, &err), 0, "%s", err.message);
    free(one);
    free(buf);
}

/* Exact sums are i128 but mostly small, a few large (a cell's fares: most
 * cells hold one or two trips): PFOR codes their offsets from the smallest
 * and beats BITPACK, which spends the widest on each. Whole and sliced
 * decodes give the values back, with a negative base and with one next to
 * the limit PFOR allows (offsets below 2^63). */
Test(format_roundtrip, pfor_i128_sums)
{
    enum { N = 5000 };
    static const i128 bases[] = {0, -250000, (i128)INT64_MIN, (i128)INT64_MAX - 1000000};
    i128 *v = malloc(N * sizeof *v), *out = malloc(N * sizeof *out);
    for (size_t k = 0; k < sizeof bases / sizeof *bases; k++) {
        struct rng r = {k + 5};
        for (int i = 0; i < N; i++)
            v[i] = bases[k] + (i128)(rng_below(&r, 40) == 0 ? rng_below(&r, 900000)
                                                           : rng_below(&r, 3000));
        struct format_column col = {.role = 4, .type = FORMAT_I128, .n = N, .values = v};
        struct format_block_info info = {.ncells = N};
        size_t len;
        uint8_t *buf = encode_block(&info, &col, 1, FORMAT_POLICY_SMALLEST, NULL, &len);
        struct format_block b;
        struct format_error err;
        cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
        cr_assert_eq(format_block_verify(&b, &err), 0, "%s", err.message);
        struct format_column_info ci;
        format_block_column(&b, 0, &ci);
        cr_assert_eq(ci.codec, FORMAT_PFOR, "picked %s", format_codec_name(ci.codec));
        cr_assert_lt(ci.length, (N * 20 + 7) / 8, "%u bytes: no smaller than bitpack",
                     ci.length);
        cr_assert_eq(format_block_decode(&b, 0, out, &err), 0, "%s", err.message);
        cr_assert_eq(memcmp(out, v, N * sizeof *v), 0);
        static const uint32_t firsts[] = {0, 1, 127, 2500, N - 1};
        for (size_t f = 0; f < sizeof firsts / sizeof *firsts; f++) {
            uint32_t count = N - firsts[f] < 300 ? N - firsts[f] : 300;
            cr_assert_eq(format_block_decode_range(&b, 0, firsts[f], count, out, &err), 0,
                         "%s", err.message);
            cr_assert_eq(memcmp(out, v + firsts[f], count * sizeof *v), 0, "from %u",
                         firsts[f]);
        }
        free(buf);
    }
    /* Offsets of 2^63 and more are refused when forced, and AUTO does not try. */
    v[0] = 0;
    v[1] = (i128)1 << 63;
    struct format_column wide = {.role = 4, .type = FORMAT_I128, .n = 2, .values = v};
    int pfor = FORMAT_PFOR;
    expect_encode_error(&wide, 1, &pfor, FORMAT_POLICY_SMALLEST,
                        "column 0 (role 4, index 0): i128 values too far apart (or too far "
                        "from zero) for pfor");
    free(out);
    free(v);
}

/* Value-count runs as the store writes them for cells: codes ascending
 * within a cell and back down at the next, rows mostly 1. Marked compact,
 * they take DRICE and RICE, smaller than DPFOR and PFOR, and decode whole
 * and in slices that start at, just after and just before an anchor. */
Test(format_roundtrip, rice_runs_and_rows)
{
    enum { N = 20000 };
    int64_t *codes = malloc(N * sizeof *codes), *rows = malloc(N * sizeof *rows);
    int64_t *out = malloc(N * sizeof *out);
    struct rng r = {2024};
    for (int i = 0, x = 0; i < N; i++) {
        /* Deltas of sorted samples: small ones common, large ones rare. */
        int step = 1 + (int)(rng_below(&r, 800) >> rng_below(&r, 6));
        x = rng_below(&r, 13) == 0 ? 300 + (int)rng_below(&r, 400) : x + step;
        codes[i] = x;
        rows[i] = rng_below(&r, 4) ? 1 : rng_below(&r, 50) ? 2 + (int64_t)rng_below(&r, 5)
                                                           : 1 + (int64_t)rng_below(&r, 100000);
    }
    const int64_t *cols[] = {codes, rows};
    const enum format_codec want[] = {FORMAT_DRICE, FORMAT_RICE};
    const enum format_codec fast[] = {FORMAT_DPFOR, FORMAT_PFOR};
    for (int c = 0; c < 2; c++) {
        struct format_column col = {.role = 6 + c, .type = FORMAT_I64, .n = N, .values = cols[c]};
        struct format_column_info plain = encode_one(&col, FORMAT_POLICY_SMALLEST);
        cr_assert_eq(plain.codec, fast[c], "not compact: %s", format_codec_name(plain.codec));
        col.compact = true;
        struct format_block_info info = {.ncells = N};
        size_t len;
        uint8_t *buf = encode_block(&info, &col, 1, FORMAT_POLICY_SMALLEST, NULL, &len);
        struct format_block b;
        struct format_error err;
        cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
        cr_assert_eq(format_block_verify(&b, &err), 0, "%s", err.message);
        struct format_column_info ci;
        format_block_column(&b, 0, &ci);
        cr_assert_eq(ci.codec, want[c], "picked %s", format_codec_name(ci.codec));
        cr_assert_lt(ci.length * 10, plain.length * 9, "%u bytes against %s's %u",
                     ci.length, format_codec_name(plain.codec), plain.length);
        cr_assert_eq(format_block_decode(&b, 0, out, &err), 0, "%s", err.message);
        cr_assert_eq(memcmp(out, cols[c], N * 8), 0);
        static const uint32_t firsts[] = {0, 1, 127, 128, 129, 255, 256, 9999, N - 129, N - 1};
        static const uint32_t counts[] = {1, 2, 127, 128, 300};
        for (size_t f = 0; f < sizeof firsts / sizeof *firsts; f++)
            for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
                uint32_t first = firsts[f], count = counts[k];
                if (first + count > N)
                    count = N - first;
                cr_assert_eq(format_block_decode_range(&b, 0, first, count, out, &err), 0,
                             "%s", err.message);
                cr_assert_eq(memcmp(out, cols[c] + first, count * 8), 0, "[%u, +%u)", first,
                             count);
            }
        free(buf);
    }
    free(out);
    free(rows);
    free(codes);
}

/* A block of one i64 column of n values in codec (RICE or DRICE), opened
 * into b and verified whole; the caller frees the bytes. */
static uint8_t *forced_rice_block(const int64_t *v, uint32_t n, int codec, struct format_block *b)
{
    struct format_column col = {.type = FORMAT_I64, .n = n, .values = v};
    struct format_block_info info = {0};
    size_t len;
    uint8_t *buf = encode_block(&info, &col, 1, FORMAT_POLICY_SMALLEST, &codec, &len);
    struct format_error err;
    cr_assert_eq(format_block_open(b, buf, len, true, &err), 0, "%s", err.message);
    cr_assert_eq(format_block_verify(b, &err), 0, "%u values, %s: %s", n,
                 format_codec_name((enum format_codec)codec), err.message);
    return buf;
}

/* Escapes of every width: the int64 extremes (escapes of 64 bits, read in
 * two parts), descents, equal neighbours (a DRICE delta of 0), and sizes
 * around the anchor stride, including streams shorter than the decoder's
 * in-place margin. */
Test(format_roundtrip, rice_extremes)
{
    static const uint32_t sizes[] = {1, 2, 3, 5, 8, 127, 128, 129, 256, 257, 1000};
    int64_t v[1000], out[1000];
    struct rng r = {31337};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        uint32_t n = sizes[s];
        for (int shape = 0; shape < 4; shape++) {
            for (uint32_t i = 0; i < n; i++) {
                switch (shape) {
                case 0: v[i] = i % 3 == 0 ? INT64_MIN : i % 3 == 1 ? INT64_MAX : 0; break;
                case 1: v[i] = 7; break;
                case 2: v[i] = (int64_t)(i / 2) * 1000 - 5; break;
                default: v[i] = (int64_t)(rng_next(&r) >> rng_below(&r, 64)); break;
                }
            }
            for (int codec = FORMAT_RICE; codec <= FORMAT_DRICE; codec++) {
                struct format_block b;
                struct format_error err;
                uint8_t *buf = forced_rice_block(v, n, codec, &b);
                cr_assert_eq(format_block_decode(&b, 0, out, &err), 0, "%s", err.message);
                cr_assert_eq(memcmp(out, v, n * 8), 0, "n %u shape %d %s", n, shape,
                             format_codec_name((enum format_codec)codec));
                uint32_t first = n / 2, count = n - n / 2;
                cr_assert_eq(format_block_decode_range(&b, 0, first, count, out, &err), 0);
                cr_assert_eq(memcmp(out, v + first, count * 8), 0);
                free(buf);
            }
        }
    }
}

/* Each block of 128 takes its own remainder width: a column of quiet
 * stretches (deltas of 1) and busy ones (deltas near 4,000) codes each at
 * about its own entropy, where one width for the column would spend 12
 * bits on every quiet delta or escape every busy one. */
Test(format_roundtrip, rice_width_per_block)
{
    enum { N = 2560 };
    int64_t v[N], out[N];
    struct rng r = {4};
    for (int i = 0, x = 0; i < N; i++)
        v[i] = x += (i / 128) % 2 ? 3000 + (int)rng_below(&r, 2000) : 1;
    struct format_column col = {.type = FORMAT_I64, .n = N, .values = v, .compact = true};
    struct format_block_info info = {0};
    size_t len;
    uint8_t *buf = encode_block(&info, &col, 1, FORMAT_POLICY_SMALLEST, NULL, &len);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
    struct format_column_info ci;
    format_block_column(&b, 0, &ci);
    cr_assert_eq(ci.codec, FORMAT_DRICE, "picked %s", format_codec_name(ci.codec));
    /* Quiet blocks: 1 bit a delta; busy ones: a 12-bit remainder, a 1- or
     * 2-bit quotient; anchors, escapes and header besides. */
    size_t bound = 8 + 4 * (N / 128) + (N / 2 * 1 + N / 2 * 15) / 8 + (N / 128) * 40 / 8;
    cr_assert_leq(ci.length, bound, "%u bytes, more than %zu", ci.length, bound);
    cr_assert_geq(ci.bits, 11, "the busy blocks' width");
    cr_assert_eq(format_block_verify(&b, &err), 0, "%s", err.message);
    cr_assert_eq(format_block_decode(&b, 0, out, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(out, v, sizeof v), 0);
    cr_assert_eq(format_block_decode_range(&b, 0, 1000, 700, out, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(out, v + 1000, 700 * 8), 0);
    free(buf);
}

/* Inside a block the decoder reads several codes from one 64-bit load
 * while they fit, and leaves the rest to its general step: codes of every
 * length up to a quotient of 31 and the widest remainders, escapes of every
 * width between them (descents, and values far out), for both codecs,
 * decoded whole and in slices that start and end anywhere. */
Test(format_roundtrip, rice_codes_across_loads)
{
    enum { N = 3000 };
    static int64_t v[N], out[N];
    struct rng r = {99};
    for (int shape = 0; shape < 6; shape++) {
        int64_t x = 0;
        for (int i = 0; i < N; i++) {
            uint64_t pick = rng_below(&r, 100);
            if (pick < 3) /* a far value: escaped, up to 64 bits */
                x = (int64_t)(rng_next(&r) >> (shape * 10 + rng_below(&r, 8)));
            else if (pick < 10) /* a descent: a DRICE escape */
                x -= (int64_t)rng_below(&r, 5000);
            else /* a step whose quotient ranges over 0..31 and beyond */
                x += 1 + (int64_t)(rng_below(&r, (uint64_t)1 << (2 + 3 * shape)) *
                                   (rng_below(&r, 8) ? 1 : rng_below(&r, 40)));
            v[i] = x;
        }
        for (int codec = FORMAT_RICE; codec <= FORMAT_DRICE; codec++) {
            struct format_block b;
            struct format_error err;
            uint8_t *buf = forced_rice_block(v, N, codec, &b);
            cr_assert_eq(format_block_decode(&b, 0, out, &err), 0, "%s", err.message);
            cr_assert_eq(memcmp(out, v, sizeof v), 0, "shape %d %s", shape,
                         format_codec_name((enum format_codec)codec));
            for (int t = 0; t < 200; t++) {
                uint32_t first = (uint32_t)rng_below(&r, N);
                uint32_t count = 1 + (uint32_t)rng_below(&r, N - first);
                cr_assert_eq(format_block_decode_range(&b, 0, first, count, out, &err), 0,
                             "%s", err.message);
                cr_assert_eq(memcmp(out, v + first, count * 8), 0, "shape %d %s [%u, +%u)",
                             shape, format_codec_name((enum format_codec)codec), first, count);
            }
            free(buf);
        }
    }
}

/* A slice of a DELTA or LZ4 column, which decode from their first value:
 * DELTA takes no memory (the sum of the deltas before the slice is read in
 * place), and LZ4's whole-column decode is counted in the ask's budget.
 * The value-count offsets of a 64-day segment of the warehouse (7.6
 * million values, DELTA) read for one cell took a 61 MB buffer the budget
 * never saw, which it neither bounded nor gave back (serve held it after
 * the ask). */
Test(format_roundtrip, a_slice_of_a_delta_column_takes_no_memory_and_lz4s_is_counted)
{
    enum { N = 1 << 20, FIRST = N / 2, COUNT = 100 };
    int64_t *v = malloc(sizeof *v * N), *out = malloc(sizeof *out * N);
    cr_assert(v && out);
    struct rng r = {11};
    for (int i = 0, x = -5000; i < N; i++)
        v[i] = x += (int)rng_below(&r, 9) - 2; /* deltas -2..6: both signs */
    static const int codecs[] = {FORMAT_DELTA, FORMAT_LZ4};
    for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++) {
        struct format_column col = {.type = FORMAT_I64, .n = N, .values = v};
        struct format_block_info info = {0};
        size_t len;
        uint8_t *buf = encode_block(&info, &col, 1, FORMAT_POLICY_SMALLEST, &codecs[c], &len);
        struct format_block b;
        struct format_error err;
        cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
        struct format_column_info ci;
        format_block_column(&b, 0, &ci);
        cr_assert_eq((int)ci.codec, codecs[c]);
        const uint32_t firsts[] = {0, 1, FIRST, N - COUNT};
        for (size_t f = 0; f < sizeof firsts / sizeof firsts[0]; f++) {
            struct scratch_budget budget = {0};
            struct scratch_budget *was = scratch_enter(&budget);
            int rc = format_block_decode_range(&b, 0, firsts[f], COUNT, out, &err);
            scratch_leave(was);
            cr_assert_eq(rc, 0, "%s", err.message);
            cr_assert_eq(memcmp(out, v + firsts[f], COUNT * sizeof *v), 0, "%s at %u",
                         format_codec_name(codecs[c]), firsts[f]);
            if (codecs[c] == FORMAT_DELTA)
                cr_assert_eq(budget.peak, 0, "DELTA slice at %u: %zu bytes taken", firsts[f],
                             budget.peak);
            else
                cr_assert_geq(budget.peak, (size_t)N * 8, "the values decoded are counted");
        }
        free(buf);
    }
    free(v);
    free(out);
}
