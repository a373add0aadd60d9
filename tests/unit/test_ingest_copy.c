/* test_ingest_copy.c -- the streaming binary COPY parser: hand-built streams
 * fed whole, byte by byte and in random chunks; NULLs, empty values, the
 * trailer; every malformed case with its message; and that memory stays
 * bounded by a tuple, not by the stream. */
#include "ingest/copy_binary.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Building streams ---------------------------------------------------- */

struct stream {
    uint8_t *p;
    size_t len, cap;
};

static void put(struct stream *s, const void *data, size_t len)
{
    if (s->len + len > s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap < s->len + len)
            cap *= 2;
        s->p = realloc(s->p, cap);
        cr_assert_not_null(s->p);
        s->cap = cap;
    }
    if (len)
        memcpy(s->p + s->len, data, len);
    s->len += len;
}

static void put16(struct stream *s, int v)
{
    uint8_t b[2] = {(uint8_t)((unsigned)v >> 8), (uint8_t)v};
    put(s, b, 2);
}

static void put32(struct stream *s, int64_t v)
{
    uint32_t u = (uint32_t)v;
    uint8_t b[4] = {(uint8_t)(u >> 24), (uint8_t)(u >> 16), (uint8_t)(u >> 8), (uint8_t)u};
    put(s, b, 4);
}

static void header_flags(struct stream *s, uint32_t flags, int32_t ext)
{
    put(s, "PGCOPY\n\377\r\n\0", 11);
    put32(s, flags);
    put32(s, ext);
}

static void header(struct stream *s)
{
    header_flags(s, 0, 0);
}

/* A field: NULL when text is NULL. */
static void field(struct stream *s, const char *text)
{
    if (!text) {
        put32(s, -1);
        return;
    }
    put32(s, (int64_t)strlen(text));
    put(s, text, strlen(text));
}

static void trailer(struct stream *s)
{
    put16(s, -1);
}

/* ---- Collecting tuples --------------------------------------------------- */

/* Tuples copied out of the parser (its pointers die on the next feed). */
#define MAXT 64
#define MAXF 8
struct collected {
    int ntuples;
    int nfields[MAXT];
    bool null[MAXT][MAXF];
    char text[MAXT][MAXF][64];
    int rc_last;
};

static struct copy_tuple tuple;

/* Takes every tuple now available; returns next's last result. */
static int drain(struct copy_parser *p, struct collected *c)
{
    int rc;
    while ((rc = copy_parser_next(p, &tuple)) == 1) {
        cr_assert_lt(c->ntuples, MAXT);
        int t = c->ntuples++;
        c->nfields[t] = tuple.nfields;
        for (int f = 0; f < tuple.nfields && f < MAXF; f++) {
            c->null[t][f] = tuple.fields[f].is_null;
            if (!tuple.fields[f].is_null) {
                cr_assert_lt(tuple.fields[f].len, 64u);
                memcpy(c->text[t][f], tuple.fields[f].data, tuple.fields[f].len);
                c->text[t][f][tuple.fields[f].len] = '\0';
            }
        }
    }
    c->rc_last = rc;
    return rc;
}

/* Lends s in chunks of the given sizes (cycled; 0 = everything at once).
 * Each chunk is a copy freed once drained, as libpq's are: under ASan, a
 * parser that reads a lent chunk after next said it had kept what it needs
 * fails here. (The tests that feed s whole take the copying path.) */
static int feed_chunks(struct copy_parser *p, const struct stream *s, const size_t *sizes,
                       int nsizes, struct collected *c)
{
    size_t at = 0;
    int k = 0;
    while (at < s->len) {
        size_t n = nsizes ? sizes[k++ % nsizes] : s->len;
        if (n > s->len - at)
            n = s->len - at;
        uint8_t *chunk = malloc(n);
        cr_assert_not_null(chunk);
        memcpy(chunk, s->p + at, n);
        cr_assert_eq(copy_parser_lend(p, chunk, n), 0);
        at += n;
        int rc = drain(p, c);
        free(chunk);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static void sample_stream(struct stream *s)
{
    header(s);
    put16(s, 3);
    field(s, "42");
    field(s, NULL);
    field(s, "hello");
    put16(s, 3);
    field(s, "");
    field(s, "x");
    field(s, NULL);
    put16(s, 0); /* a tuple of a table without columns */
    put16(s, 3);
    field(s, NULL);
    field(s, NULL);
    field(s, NULL);
    trailer(s);
}

static void check_sample(const struct collected *c)
{
    cr_assert_eq(c->ntuples, 4);
    cr_assert_eq(c->nfields[0], 3);
    cr_assert_str_eq(c->text[0][0], "42");
    cr_assert(c->null[0][1]);
    cr_assert_str_eq(c->text[0][2], "hello");
    cr_assert_not(c->null[1][0], "an empty string is not NULL");
    cr_assert_str_eq(c->text[1][0], "");
    cr_assert_str_eq(c->text[1][1], "x");
    cr_assert(c->null[1][2]);
    cr_assert_eq(c->nfields[2], 0);
    cr_assert_eq(c->nfields[3], 3);
    cr_assert(c->null[3][0] && c->null[3][1] && c->null[3][2]);
}

/* ---- Well-formed streams ------------------------------------------------- */

Test(ingest_copy, whole_stream)
{
    struct stream s = {0};
    sample_stream(&s);
    struct copy_parser p;
    copy_parser_init(&p);
    struct collected c = {0};
    cr_assert_eq(feed_chunks(&p, &s, NULL, 0, &c), 0);
    check_sample(&c);
    cr_assert_eq(c.rc_last, 0);
    cr_assert(p.trailer_seen);
    cr_assert_eq(copy_parser_next(&p, &tuple), 0, "nothing more after the trailer");
    cr_assert_eq(copy_parser_finish(&p), 0, "%s", p.error);
    copy_parser_free(&p);
    free(s.p);
}

Test(ingest_copy, byte_by_byte)
{
    struct stream s = {0};
    sample_stream(&s);
    struct copy_parser p;
    copy_parser_init(&p);
    struct collected c = {0};
    size_t one = 1;
    cr_assert_eq(feed_chunks(&p, &s, &one, 1, &c), 0, "%s", p.error);
    check_sample(&c);
    cr_assert(p.trailer_seen);
    cr_assert_eq(copy_parser_finish(&p), 0, "%s", p.error);
    copy_parser_free(&p);
    free(s.p);
}

Test(ingest_copy, odd_chunks)
{
    struct stream s = {0};
    sample_stream(&s);
    static const size_t sizes[][4] = {{2, 3, 5, 7}, {11, 1, 1, 4}, {19, 2, 100, 1}, {18, 6, 1, 9}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        struct copy_parser p;
        copy_parser_init(&p);
        struct collected c = {0};
        cr_assert_eq(feed_chunks(&p, &s, sizes[k], 4, &c), 0, "%s", p.error);
        check_sample(&c);
        cr_assert_eq(copy_parser_finish(&p), 0, "%s", p.error);
        copy_parser_free(&p);
    }
    srand(7);
    for (int round = 0; round < 200; round++) {
        size_t r[16];
        for (int i = 0; i < 16; i++)
            r[i] = 1 + (size_t)(rand() % 9);
        struct copy_parser p;
        copy_parser_init(&p);
        struct collected c = {0};
        cr_assert_eq(feed_chunks(&p, &s, r, 16, &c), 0, "%s", p.error);
        check_sample(&c);
        cr_assert_eq(copy_parser_finish(&p), 0, "%s", p.error);
        copy_parser_free(&p);
    }
    free(s.p);
}

Test(ingest_copy, empty_table_and_header_extension)
{
    struct stream s = {0};
    header_flags(&s, 0x0000FFFF, 5); /* bits 0-15 are not critical: ignored */
    put(&s, "abcde", 5);
    trailer(&s);
    struct copy_parser p;
    copy_parser_init(&p);
    struct collected c = {0};
    size_t one = 1;
    cr_assert_eq(feed_chunks(&p, &s, &one, 1, &c), 0, "%s", p.error);
    cr_assert_eq(c.ntuples, 0);
    cr_assert(p.header_done && p.trailer_seen);
    cr_assert_eq(copy_parser_finish(&p), 0, "%s", p.error);
    copy_parser_free(&p);
    free(s.p);
}

Test(ingest_copy, real_postgresql_output)
{
    /* psql \copy (select 1::int4, 12.50::numeric(10,2), NULL::text, 'hi'::text,
     * now(), current_date, true, 1.5::float8, -0.0::float4) to ... binary */
    static const uint8_t bytes[] = {
        0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,
        0x01, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00,
        0x0c, 0x13, 0x88, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x02, 0x68, 0x69, 0x00,
        0x00, 0x00, 0x08, 0x00, 0x03, 0x04, 0x73, 0xa8, 0xe3, 0x0a, 0xb6, 0x00, 0x00, 0x00,
        0x04, 0x00, 0x00, 0x26, 0x66, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x08,
        0x3f, 0xf8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x80, 0x00,
        0x00, 0x00, 0xff, 0xff,
    };
    struct copy_parser p;
    copy_parser_init(&p);
    cr_assert_eq(copy_parser_feed(&p, bytes, sizeof bytes), 0);
    cr_assert_eq(copy_parser_next(&p, &tuple), 1, "%s", p.error);
    cr_assert_eq(tuple.nfields, 9);
    static const int lens[] = {4, 12, -1, 2, 8, 4, 1, 8, 4};
    for (int i = 0; i < 9; i++) {
        cr_assert_eq(tuple.fields[i].is_null, lens[i] < 0, "field %d", i);
        if (lens[i] >= 0)
            cr_assert_eq(tuple.fields[i].len, (uint32_t)lens[i], "field %d", i);
    }
    cr_assert_eq(memcmp(tuple.fields[3].data, "hi", 2), 0);
    cr_assert_eq(copy_parser_next(&p, &tuple), 0);
    cr_assert(p.trailer_seen);
    cr_assert_eq(copy_parser_finish(&p), 0);
    copy_parser_free(&p);
}

Test(ingest_copy, widest_tuple_byte_by_byte)
{
    struct stream s = {0};
    header(&s);
    put16(&s, COPY_MAX_FIELDS);
    for (int i = 0; i < COPY_MAX_FIELDS; i++)
        field(&s, i % 3 == 0 ? NULL : "ab");
    trailer(&s);
    struct copy_parser p;
    copy_parser_init(&p);
    int got = 0;
    for (size_t i = 0; i < s.len; i++) {
        cr_assert_eq(copy_parser_feed(&p, s.p + i, 1), 0);
        int rc;
        while ((rc = copy_parser_next(&p, &tuple)) == 1) {
            got++;
            cr_assert_eq(tuple.nfields, COPY_MAX_FIELDS);
            cr_assert(tuple.fields[0].is_null);
            cr_assert_eq(tuple.fields[1598].len, 2u);
            cr_assert_eq(memcmp(tuple.fields[1598].data, "ab", 2), 0);
        }
        cr_assert_eq(rc, 0, "%s", p.error);
    }
    cr_assert_eq(got, 1);
    cr_assert_eq(copy_parser_finish(&p), 0, "%s", p.error);
    copy_parser_free(&p);
    free(s.p);
}

Test(ingest_copy, large_field_across_chunks)
{
    struct stream s = {0};
    header(&s);
    put16(&s, 2);
    size_t big = 3u << 20;
    char *payload = malloc(big);
    cr_assert_not_null(payload);
    for (size_t i = 0; i < big; i++)
        payload[i] = (char)('a' + i % 26);
    put32(&s, (int64_t)big);
    put(&s, payload, big);
    field(&s, "end");
    trailer(&s);
    struct copy_parser p;
    copy_parser_init(&p);
    int got = 0;
    for (size_t at = 0; at < s.len; at += 8192) {
        size_t n = s.len - at < 8192 ? s.len - at : 8192;
        cr_assert_eq(copy_parser_feed(&p, s.p + at, n), 0);
        while (copy_parser_next(&p, &tuple) == 1) {
            got++;
            cr_assert_eq(tuple.fields[0].len, big);
            cr_assert_eq(memcmp(tuple.fields[0].data, payload, big), 0);
            cr_assert_eq(memcmp(tuple.fields[1].data, "end", 3), 0);
        }
    }
    cr_assert_eq(got, 1);
    cr_assert_eq(copy_parser_finish(&p), 0, "%s", p.error);
    cr_assert_lt(p.cap, 2 * (big + 8192 + 64), "bounded by the tuple: %zu", p.cap);
    copy_parser_free(&p);
    free(payload);
    free(s.p);
}

/* 100k tuples in 1 KB chunks: the buffer holds one chunk plus the unread
 * part of one tuple, never the stream. */
Test(ingest_copy, memory_stays_bounded)
{
    struct stream s = {0};
    header(&s);
    char text[32];
    for (int i = 0; i < 100000; i++) {
        put16(&s, 3);
        put32(&s, 4);
        put32(&s, i);
        snprintf(text, sizeof text, "row number %d", i);
        field(&s, text);
        field(&s, NULL);
    }
    trailer(&s);
    struct copy_parser p;
    copy_parser_init(&p);
    int64_t rows = 0, sum = 0;
    size_t max_cap = 0;
    for (size_t at = 0; at < s.len; at += 1024) {
        size_t n = s.len - at < 1024 ? s.len - at : 1024;
        cr_assert_eq(copy_parser_feed(&p, s.p + at, n), 0);
        int rc;
        while ((rc = copy_parser_next(&p, &tuple)) == 1) {
            const uint8_t *d = tuple.fields[0].data;
            int32_t v = (int32_t)((uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 |
                                  (uint32_t)d[2] << 8 | d[3]);
            cr_assert_eq(v, rows);
            snprintf(text, sizeof text, "row number %d", v);
            cr_assert_eq(tuple.fields[1].len, strlen(text));
            cr_assert_eq(memcmp(tuple.fields[1].data, text, strlen(text)), 0);
            cr_assert(tuple.fields[2].is_null);
            sum += v;
            rows++;
        }
        cr_assert_eq(rc, 0, "%s", p.error);
        if (p.cap > max_cap)
            max_cap = p.cap;
    }
    cr_assert_eq(rows, 100000);
    cr_assert_eq(sum, 100000LL * 99999 / 2);
    cr_assert_leq(max_cap, 4096, "buffer grew to %zu bytes", max_cap);
    cr_assert_eq(copy_parser_finish(&p), 0, "%s", p.error);
    copy_parser_free(&p);
    free(s.p);
}

/* ---- Malformed streams --------------------------------------------------- */

/* Feeds s whole and byte by byte; both must fail with the same message,
 * from next (at_finish false) or from finish. */
static void expect_error(const struct stream *s, bool at_finish, const char *message)
{
    for (int mode = 0; mode < 2; mode++) {
        struct copy_parser p;
        copy_parser_init(&p);
        struct collected c = {0};
        size_t one = 1;
        int rc = feed_chunks(&p, s, mode ? &one : NULL, mode ? 1 : 0, &c);
        if (at_finish) {
            cr_assert_eq(rc, 0, "mode %d: early error %s", mode, p.error);
            rc = copy_parser_finish(&p);
        }
        cr_assert_eq(rc, -1, "mode %d: accepted, expected %s", mode, message);
        cr_assert_str_eq(p.error, message, "mode %d", mode);
        /* Errors stick. */
        cr_assert_eq(copy_parser_next(&p, &tuple), -1);
        cr_assert_eq(copy_parser_finish(&p), -1);
        cr_assert_str_eq(p.error, message);
        copy_parser_free(&p);
    }
}

Test(ingest_copy, bad_signature)
{
    struct stream s = {0};
    put(&s, "PGCOPY\n\377\n\n\0", 11); /* \r munged to \n */
    put32(&s, 0);
    put32(&s, 0);
    trailer(&s);
    expect_error(&s, false, "binary COPY: bad signature");

    /* Text COPY output fails on its first byte, without waiting for 19. */
    struct copy_parser p;
    copy_parser_init(&p);
    cr_assert_eq(copy_parser_feed(&p, "1", 1), 0);
    cr_assert_eq(copy_parser_next(&p, &tuple), -1);
    cr_assert_str_eq(p.error, "binary COPY: bad signature");
    copy_parser_free(&p);
    free(s.p);
}

Test(ingest_copy, header_flags_and_extension)
{
    struct stream s = {0};
    header_flags(&s, 1u << 16, 0);
    trailer(&s);
    expect_error(&s, false,
                 "binary COPY: the stream includes OIDs (header flag bit 16), which Straum "
                 "does not read");
    s.len = 0;
    header_flags(&s, 1u << 17, 0);
    trailer(&s);
    expect_error(&s, false, "binary COPY: header has unknown critical flags 0x00020000");
    s.len = 0;
    header_flags(&s, 0x80000000u, 0);
    expect_error(&s, false, "binary COPY: header has unknown critical flags 0x80000000");
    s.len = 0;
    header_flags(&s, 0, -1);
    expect_error(&s, false, "binary COPY: header extension length is -1");
    s.len = 0;
    header_flags(&s, 0, (1 << 30) + 1);
    expect_error(&s, false, "binary COPY: header extension of 1073741825 bytes is more than "
                            "1073741824");
    free(s.p);
}

Test(ingest_copy, bad_counts_and_lengths)
{
    struct stream s = {0};
    header(&s);
    put16(&s, -2);
    expect_error(&s, false, "binary COPY: tuple has field count -2");

    s.len = 0;
    header(&s);
    put16(&s, 2000);
    expect_error(&s, false, "binary COPY: tuple has 2000 fields, more than 1600");

    s.len = 0;
    header(&s);
    put16(&s, 1601);
    expect_error(&s, false, "binary COPY: tuple has 1601 fields, more than 1600");

    s.len = 0;
    header(&s);
    put16(&s, 1);
    field(&s, "ok");
    put16(&s, 4);
    field(&s, "a");
    field(&s, NULL);
    put32(&s, -7);
    expect_error(&s, false, "binary COPY: field 3 of a tuple has length -7");

    s.len = 0;
    header(&s);
    put16(&s, 1);
    put32(&s, INT32_MIN);
    expect_error(&s, false, "binary COPY: field 1 of a tuple has length -2147483648");

    s.len = 0;
    header(&s);
    put16(&s, 1);
    put32(&s, (1 << 30) + 1);
    expect_error(&s, false,
                 "binary COPY: field 1 of a tuple has length 1073741825, more than 1073741824");
    free(s.p);
}

Test(ingest_copy, trailer_handling)
{
    struct stream s = {0};
    header(&s);
    put16(&s, 1);
    field(&s, "a");
    trailer(&s);
    put(&s, "x", 1);
    expect_error(&s, false, "binary COPY: bytes after the trailer");

    /* A second trailer is bytes after the trailer too. */
    s.len = 0;
    header(&s);
    trailer(&s);
    trailer(&s);
    expect_error(&s, false, "binary COPY: bytes after the trailer");

    /* Bytes fed after next already reported the trailer. */
    s.len = 0;
    header(&s);
    trailer(&s);
    struct copy_parser p;
    copy_parser_init(&p);
    cr_assert_eq(copy_parser_feed(&p, s.p, s.len), 0);
    cr_assert_eq(copy_parser_next(&p, &tuple), 0);
    cr_assert(p.trailer_seen);
    cr_assert_eq(copy_parser_feed(&p, "\0", 1), 0);
    cr_assert_eq(copy_parser_finish(&p), -1);
    cr_assert_str_eq(p.error, "binary COPY: bytes after the trailer");
    copy_parser_free(&p);

    /* finish finds a trailer next has not looked at yet. */
    copy_parser_init(&p);
    cr_assert_eq(copy_parser_feed(&p, s.p, s.len), 0);
    cr_assert_eq(copy_parser_finish(&p), 0, "%s", p.error);
    copy_parser_free(&p);
    free(s.p);
}

Test(ingest_copy, truncated_streams)
{
    struct stream s = {0};
    expect_error(&s, true, "binary COPY: stream is empty: no header");

    header(&s);
    s.len = 10;
    expect_error(&s, true, "binary COPY: stream ended inside the header (10 bytes)");

    s.len = 0;
    header_flags(&s, 0, 4);
    put(&s, "ab", 2);
    expect_error(&s, true, "binary COPY: stream ended inside the header (21 bytes)");

    s.len = 0;
    header(&s);
    expect_error(&s, true, "binary COPY: stream ended without the trailer");

    s.len = 0;
    header(&s);
    put16(&s, 1);
    field(&s, "a");
    expect_error(&s, true, "binary COPY: stream ended without the trailer");

    s.len = 0;
    header(&s);
    put16(&s, 2);
    field(&s, "abc");
    put32(&s, 10);
    put(&s, "12345", 5);
    expect_error(&s, true, "binary COPY: stream ended inside a tuple (18 bytes left over)");

    s.len = 0;
    header(&s);
    put(&s, "\xff", 1);
    expect_error(&s, true, "binary COPY: stream ended inside a tuple (1 byte left over)");

    /* Whole tuples nobody took. */
    s.len = 0;
    header(&s);
    put16(&s, 1);
    field(&s, "a");
    trailer(&s);
    struct copy_parser p;
    copy_parser_init(&p);
    cr_assert_eq(copy_parser_feed(&p, s.p, s.len), 0);
    cr_assert_eq(copy_parser_finish(&p), -1);
    cr_assert_str_eq(p.error, "binary COPY: finished with tuples not yet taken");
    copy_parser_free(&p);
    free(s.p);
}

Test(ingest_copy, incomplete_tuple_is_not_consumed)
{
    struct stream s = {0};
    header(&s);
    put16(&s, 2);
    field(&s, "first");
    field(&s, "second");
    trailer(&s);
    struct copy_parser p;
    copy_parser_init(&p);
    size_t cut = s.len - 5;
    cr_assert_eq(copy_parser_feed(&p, s.p, cut), 0);
    cr_assert_eq(copy_parser_next(&p, &tuple), 0);
    cr_assert_not(p.trailer_seen);
    cr_assert_eq(copy_parser_next(&p, &tuple), 0, "asking again changes nothing");
    cr_assert_eq(copy_parser_feed(&p, s.p + cut, 5), 0);
    cr_assert_eq(copy_parser_next(&p, &tuple), 1, "%s", p.error);
    cr_assert_eq(tuple.nfields, 2);
    cr_assert_eq(tuple.fields[1].len, 6u);
    cr_assert_eq(memcmp(tuple.fields[1].data, "second", 6), 0);
    cr_assert_eq(copy_parser_next(&p, &tuple), 0);
    cr_assert(p.trailer_seen);
    cr_assert_eq(copy_parser_finish(&p), 0);
    copy_parser_free(&p);
    free(s.p);
}
