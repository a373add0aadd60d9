/* test_heap_tuple.c -- ingest/heap_tuple.c, heap tuples as stored turned into
 * the binary send format, in two parts.
 *
 * Crafted (no server): tuples laid out here by hand: the null bitmap,
 * alignment of fixed and varlena values, 1-byte headers, pglz and lz4
 * compressed values, TOAST pointers, numeric's special values; every
 * truncation of a tuple, a stale descriptor, atthasmissing and broken
 * layouts are refused with a message.
 *
 * The oracle (PostgreSQL's own send functions): a table with a column of
 * every type Straum keeps, NULLs in every position, texts with 1- and
 * 4-byte headers, compressed inline by pglz and by lz4 (when the server
 * has it), a compressed numeric, values TOASTed out of line, two columns
 * dropped in the middle and two added later (old tuples have fewer
 * attributes), an updated row. Every tuple of its pages is read with
 * pageinspect, both as it lies on the page (get_raw_page at lp_off and
 * lp_len) and as a WAL record logs it (xl_heap_header and the bytes from
 * t_bits on, rebuilt from heap_page_items), and taken apart with a
 * descriptor read from pg_attribute. Each visible row's values must equal,
 * byte for byte, what `SELECT` sends in binary format for that ctid; an
 * out-of-line value must be reported external with the value's size and
 * the table's TOAST relation; and pgvalue_decode_binary must give the same
 * code (or the same refusal) for both. A table with a column added with a
 * default is refused until VACUUM FULL rewrites it.
 *
 * STRAUM_HEAP_TUPLE_CORPUS=<dir> writes seed inputs for fuzz_heap_tuple
 * there (how tests/fuzz/corpus/heap_tuple was made). */
#include "base/bytes.h"
#include "ingest/heap_tuple.h"
#include "ingest/pgvalue.h"
#include "tests/pg/pgtest.h"

#include <criterion/criterion.h>
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLCKSZ 8192
#define MAX_ATTRS 64

/* ---- small tools ------------------------------------------------------------------ */

static struct heap_attr attr(const char *name, int attnum, uint32_t oid, int16_t len, bool byval,
                             char align)
{
    struct heap_attr a = {.name = name, .attnum = (int16_t)attnum, .type_oid = oid, .typmod = -1,
                          .attlen = len, .attbyval = byval, .attalign = align};
    return a;
}

/* A tuple laid out by hand: 23-byte header, bitmap, data from t_hoff. */
struct tup {
    uint8_t b[4096];
    size_t len;
};

static void tup_start(struct tup *t, int natts, const bool *isnull)
{
    memset(t, 0, sizeof *t);
    bool hasnull = false;
    for (int i = 0; isnull != NULL && i < natts; i++)
        hasnull |= isnull[i];
    size_t hoff = 23 + (hasnull ? ((size_t)natts + 7) / 8 : 0);
    hoff = (hoff + 7) & ~(size_t)7;
    le_store_u16(t->b + 18, (uint16_t)natts);
    le_store_u16(t->b + 20, hasnull ? HEAP_HASNULL : 0);
    t->b[22] = (uint8_t)hoff;
    for (int i = 0; hasnull && i < natts; i++)
        if (!isnull[i])
            t->b[23 + i / 8] |= (uint8_t)(1u << (i % 8));
    t->len = hoff;
}

static void tup_align(struct tup *t, size_t a)
{
    while ((t->len - t->b[22]) % a != 0)
        t->b[t->len++] = 0;
}

static void tup_put(struct tup *t, const void *p, size_t n)
{
    memcpy(t->b + t->len, p, n);
    t->len += n;
}

static int deform(const struct heap_desc *d, const uint8_t *tuple, size_t len,
                  struct heap_datum *out, char *err, size_t errlen)
{
    struct heap_tuple_header h;
    const uint8_t *body;
    size_t blen;
    if (heap_tuple_split_page(tuple, len, &h, &body, &blen, err, errlen))
        return -1;
    return heap_tuple_deform(d, &h, body, blen, out, err, errlen);
}

/* Sends one datum into a fresh arena of heap_datum_send_size bytes; the
 * arena is freed by the caller (returned in *arena). */
static int send1(const struct heap_attr *a, const struct heap_datum *v, struct heap_value *out,
                 uint8_t **arena, char *err, size_t errlen)
{
    size_t cap = heap_datum_send_size(a, v), used = 0;
    *arena = malloc(cap + 1);
    cr_assert_not_null(*arena);
    int rc = heap_datum_send(a, v, *arena, cap, &used, out, err, errlen);
    if (rc == 0)
        cr_assert_leq(used, cap);
    return rc;
}

/* ---- crafted tuples ----------------------------------------------------------------- */

Test(heap_tuple_crafted, walk_align_and_nulls)
{
    struct heap_attr at[6] = {
        attr("b", 1, PG_BOOL, 1, true, 'c'),    attr("t", 2, PG_TEXT, -1, false, 'i'),
        attr("n", 3, PG_INT8, 8, true, 'd'),    attr("s", 4, PG_INT2, 2, true, 's'),
        attr("u", 5, PG_TEXT, -1, false, 'i'),  attr("f", 6, PG_FLOAT8, 8, true, 'd'),
    };
    struct heap_desc d = {6, at};
    char err[512];
    cr_assert_eq(heap_desc_check(&d, err, sizeof err), 0, "%s", err);

    /* b = true, t = 'hi' (1-byte header: unaligned), n = -2 (aligned to 8),
     * s = NULL, u = 200 bytes (4-byte header: aligned to 4), f = 1.5. */
    bool isnull[6] = {false, false, false, true, false, false};
    struct tup t;
    tup_start(&t, 6, isnull);
    tup_put(&t, "\x01", 1);
    tup_put(&t, "\x07hi", 3); /* (1 + 2) << 1 | 1 */
    tup_align(&t, 8);
    int64_t n = -2;
    tup_put(&t, &n, 8);
    tup_align(&t, 4);
    uint8_t h4[4];
    le_store_u32(h4, (200 + 4) << 2);
    tup_put(&t, h4, 4);
    uint8_t big[200];
    memset(big, 'z', sizeof big);
    tup_put(&t, big, sizeof big);
    tup_align(&t, 8);
    double f = 1.5;
    tup_put(&t, &f, 8);

    struct heap_datum v[6];
    cr_assert_eq(deform(&d, t.b, t.len, v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(v[0].kind, HEAP_DATUM_FIXED);
    cr_assert_eq(v[1].kind, HEAP_DATUM_PLAIN);
    cr_assert_eq(v[1].len, 2);
    cr_assert(memcmp(v[1].data, "hi", 2) == 0);
    cr_assert_eq(v[3].kind, HEAP_DATUM_NULL);
    cr_assert_eq(v[4].len, 200);
    cr_assert_eq(v[5].kind, HEAP_DATUM_FIXED);

    uint8_t arena[64];
    struct heap_value out[6];
    cr_assert_eq(heap_tuple_send_size(&d, v), 1 + 8 + 8);
    cr_assert_eq(heap_tuple_send(&d, v, arena, sizeof arena, out, err, sizeof err), 0, "%s", err);
    cr_assert(out[0].len == 1 && out[0].data[0] == 1);
    cr_assert(out[2].len == 8 && memcmp(out[2].data, "\xff\xff\xff\xff\xff\xff\xff\xfe", 8) == 0);
    cr_assert(out[3].is_null);
    cr_assert(out[5].len == 8 && memcmp(out[5].data, "\x3f\xf8\0\0\0\0\0\0", 8) == 0);
    struct store_column_type ct;
    struct pgvalue pv;
    cr_assert_eq(pgvalue_store_type(PG_INT8, -1, &ct, err, sizeof err), 0);
    cr_assert_eq(pgvalue_decode_binary(PG_INT8, &ct, out[2].data, out[2].len, &pv, err, sizeof err), 0);
    cr_assert_eq(pv.code, -2);

    /* Every shorter tuple is refused (f, the last value, no longer fits). */
    for (size_t len = 0; len < t.len; len++) {
        uint8_t *cut = malloc(len + 1);
        memcpy(cut, t.b, len);
        err[0] = '\0';
        cr_assert_eq(deform(&d, cut, len, v, err, sizeof err), -1, "cut to %zu bytes", len);
        cr_assert(err[0] != '\0');
        free(cut);
    }

    /* The data ends after u: the tuple stored 5 of 6 attributes (f was
     * added later): f is NULL. */
    le_store_u16(t.b + 18, 5);
    cr_assert_eq(deform(&d, t.b, t.len - 8, v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(v[5].kind, HEAP_DATUM_NULL);
    /* ... unless it has a missing default. */
    at[5].atthasmissing = true;
    cr_assert_eq(deform(&d, t.b, t.len - 8, v, err, sizeof err), -1);
    cr_assert(strstr(err, "column \"f\"") && strstr(err, "VACUUM FULL"), "%s", err);
    cr_assert_eq(heap_desc_check(&d, err, sizeof err), -1);
    cr_assert(strstr(err, "atthasmissing"), "%s", err);
    at[5].atthasmissing = false;

    /* More attributes than the descriptor: stale. */
    le_store_u16(t.b + 18, 7);
    cr_assert_eq(deform(&d, t.b, t.len, v, err, sizeof err), -1);
    cr_assert(strstr(err, "older"), "%s", err);
    le_store_u16(t.b + 18, 6);

    /* t_hoff not aligned, or over the bitmap. */
    t.b[22] = 25;
    cr_assert_eq(deform(&d, t.b, t.len, v, err, sizeof err), -1);
    t.b[22] = 16;
    cr_assert_eq(deform(&d, t.b, t.len, v, err, sizeof err), -1);
    t.b[22] = 24;

    /* The WAL form: xl_heap_header, then the bytes from t_bits on. */
    uint8_t rec[4096];
    memcpy(rec, t.b + 18, 5);
    memcpy(rec + 5, t.b + 23, t.len - 23);
    struct heap_tuple_header h;
    const uint8_t *body;
    size_t blen;
    cr_assert_eq(heap_tuple_split_xlog(rec, t.len - 18, &h, &body, &blen, err, sizeof err), 0);
    cr_assert_eq(heap_tuple_deform(&d, &h, body, blen, v, err, sizeof err), 0, "%s", err);
    cr_assert(v[4].len == 200 && v[4].data > body && v[4].data + 200 <= body + blen);
    cr_assert_eq(heap_tuple_split_xlog(rec, 4, &h, &body, &blen, err, sizeof err), -1);
}

Test(heap_tuple_crafted, dropped_and_layouts)
{
    /* A dropped int8 between two int4s still takes its aligned 8 bytes. */
    struct heap_attr at[3] = {
        attr("a", 1, PG_INT4, 4, true, 'i'),
        attr("........pg.dropped.2........", 2, 0, 8, true, 'd'),
        attr("c", 3, PG_INT4, 4, true, 'i'),
    };
    at[1].attisdropped = true;
    struct heap_desc d = {3, at};
    char err[512];
    cr_assert_eq(heap_desc_check(&d, err, sizeof err), 0, "%s", err);
    struct tup t;
    tup_start(&t, 3, NULL);
    int32_t a = 1, c = 3;
    int64_t b = 2;
    tup_put(&t, &a, 4);
    tup_align(&t, 8);
    tup_put(&t, &b, 8);
    tup_put(&t, &c, 4);
    struct heap_datum v[3];
    cr_assert_eq(deform(&d, t.b, t.len, v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(v[1].kind, HEAP_DATUM_NULL);
    cr_assert(v[2].kind == HEAP_DATUM_FIXED && le_load_u32(v[2].data) == 3);

    /* Broken layouts: cstring, bad alignment, by value of 3 bytes, a
     * supported type stored with another length. */
    struct heap_attr bad = attr("x", 1, PG_TEXT, -2, false, 'c');
    struct heap_desc d1 = {1, &bad};
    cr_assert_eq(heap_desc_check(&d1, err, sizeof err), -1);
    cr_assert(strstr(err, "cstring"), "%s", err);
    bad = attr("x", 1, PG_INT4, 4, true, 'q');
    cr_assert_eq(heap_desc_check(&d1, err, sizeof err), -1);
    bad = attr("x", 1, 2950, 3, true, 'c');
    cr_assert_eq(heap_desc_check(&d1, err, sizeof err), -1);
    bad = attr("x", 1, PG_INT4, 8, true, 'd');
    cr_assert_eq(heap_desc_check(&d1, err, sizeof err), -1);
    cr_assert(strstr(err, "int4"), "%s", err);
    /* ... which deform walks, and send refuses. */
    tup_start(&t, 1, NULL);
    tup_put(&t, &b, 8);
    cr_assert_eq(deform(&d1, t.b, t.len, v, err, sizeof err), 0, "%s", err);
    struct heap_value hv;
    uint8_t *arena;
    cr_assert_eq(send1(&bad, &v[0], &hv, &arena, err, sizeof err), -1);
    cr_assert(strstr(err, "expected 4"), "%s", err);
    free(arena);
    /* An unsupported type is walked and left alone. */
    bad = attr("x", 1, 2950 /* uuid */, 8, false, 'c');
    cr_assert_eq(heap_desc_check(&d1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(deform(&d1, t.b, t.len, v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(send1(&bad, &v[0], &hv, &arena, err, sizeof err), 0, "%s", err);
    cr_assert(hv.unsupported && hv.data == NULL);
    free(arena);
}

Test(heap_tuple_crafted, compressed_external_numeric)
{
    struct heap_attr at[4] = {
        attr("p", 1, PG_TEXT, -1, false, 'i'),
        attr("l", 2, PG_TEXT, -1, false, 'i'),
        attr("e", 3, PG_VARCHAR, -1, false, 'i'),
        attr("n", 4, PG_NUMERIC, -1, false, 'i'),
    };
    struct heap_desc d = {4, at};
    char err[512];

    /* p: "abcabcabcabcabcab" (17 bytes) in pglz: control byte 0x08 (items
     * 4 is a tag), 'a' 'b' 'c', tag length 14 offset 3. */
    const uint8_t pglz[] = {0x08, 'a', 'b', 'c', 0x0B, 0x03};
    /* l: 3000 bytes by lz4. */
    char raw[3000];
    for (size_t i = 0; i < sizeof raw; i++)
        raw[i] = "lz4!"[i % 4];
    char lz[512];
    int lzn = LZ4_compress_default(raw, lz, sizeof raw, sizeof lz);
    cr_assert_gt(lzn, 0);

    struct tup t;
    tup_start(&t, 4, NULL);
    uint8_t h[8];
    le_store_u32(h, (uint32_t)((8 + sizeof pglz) << 2 | 0x02));
    le_store_u32(h + 4, 17);
    tup_put(&t, h, 8);
    tup_put(&t, pglz, sizeof pglz);
    tup_align(&t, 4);
    le_store_u32(h, (uint32_t)((8 + lzn) << 2 | 0x02));
    le_store_u32(h + 4, (uint32_t)sizeof raw | 1u << 30);
    tup_put(&t, h, 8);
    tup_put(&t, lz, (size_t)lzn);
    /* e: a TOAST pointer, unaligned: 1, tag 18, rawsize, extinfo,
     * valueid, toastrelid. */
    uint8_t ptr[18] = {0x01, 18};
    le_store_u32(ptr + 2, 100004);
    le_store_u32(ptr + 6, 100000);
    le_store_u32(ptr + 10, 777);
    le_store_u32(ptr + 14, 888);
    tup_put(&t, ptr, sizeof ptr);
    /* n: -12.5 as NumericShort (1-byte varlena header): sign bit,
     * dscale 1, weight 0, digits 12, 5000. */
    uint8_t num[7] = {(uint8_t)(7 << 1 | 1)};
    le_store_u16(num + 1, 0x8000 | 0x2000 | 1 << 7 | 0);
    le_store_u16(num + 3, 12);
    le_store_u16(num + 5, 5000);
    tup_put(&t, num, sizeof num);

    struct heap_datum v[4];
    cr_assert_eq(deform(&d, t.b, t.len, v, err, sizeof err), 0, "%s", err);
    cr_assert(v[0].kind == HEAP_DATUM_COMPRESSED && v[0].raw_size == 17 &&
              v[0].compression == HEAP_COMPRESSION_PGLZ);
    cr_assert(v[1].kind == HEAP_DATUM_COMPRESSED && v[1].compression == HEAP_COMPRESSION_LZ4);
    cr_assert(v[2].kind == HEAP_DATUM_EXTERNAL && v[2].raw_size == 100000 &&
              v[2].ext_size == 100000 && v[2].value_id == 777 && v[2].toast_relid == 888);
    size_t cap = heap_tuple_send_size(&d, v);
    cr_assert_eq(cap, 17 + 3000 + 0 + 6 + 6);
    uint8_t *arena = malloc(cap);
    struct heap_value out[4];
    cr_assert_eq(heap_tuple_send(&d, v, arena, cap, out, err, sizeof err), 0, "%s", err);
    cr_assert(out[0].len == 17 && memcmp(out[0].data, "abcabcabcabcabcab", 17) == 0);
    cr_assert(out[1].len == 3000 && memcmp(out[1].data, raw, 3000) == 0);
    cr_assert(out[2].external && out[2].data == NULL);
    const uint8_t want[] = {0, 2, 0, 0, 0x40, 0, 0, 1, 0, 12, 0x13, 0x88};
    cr_assert(out[3].len == sizeof want && memcmp(out[3].data, want, sizeof want) == 0);
    /* An arena one byte short fails with a message. */
    cr_assert_eq(heap_tuple_send(&d, v, arena, cap - 1, out, err, sizeof err), -1);
    cr_assert(strstr(err, "arena"), "%s", err);
    free(arena);

    /* Corrupt pglz: a back reference before the start, a truncated tag,
     * a stream that ends short or runs long. */
    const uint8_t bad1[] = {0x01, 0x00, 0x05};
    const uint8_t bad2[] = {0x08, 'a', 'b', 'c', 0x0B};
    const uint8_t bad3[] = {0x08, 'a', 'b', 'c', 0x0B, 0x03, 'x'};
    const struct {
        const uint8_t *p;
        size_t n;
        uint32_t raw;
    } bads[] = {{bad1, sizeof bad1, 3}, {bad2, sizeof bad2, 17}, {bad3, sizeof bad3, 17},
                {pglz, sizeof pglz, 18}};
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        struct heap_datum bv = {.kind = HEAP_DATUM_COMPRESSED, .data = bads[i].p,
                                .len = bads[i].n, .raw_size = bads[i].raw};
        struct heap_value hv;
        uint8_t *a;
        cr_assert_eq(send1(&at[0], &bv, &hv, &a, err, sizeof err), -1, "case %zu", i);
        cr_assert(strstr(err, "pglz"), "%s", err);
        free(a);
    }
    struct heap_datum m3 = {.kind = HEAP_DATUM_COMPRESSED, .data = pglz, .len = sizeof pglz,
                            .raw_size = 17, .compression = 2};
    struct heap_value hv;
    uint8_t *a;
    cr_assert_eq(send1(&at[0], &m3, &hv, &a, err, sizeof err), -1);
    cr_assert(strstr(err, "method"), "%s", err);
    free(a);

    /* numeric's special values, with the 2-byte header: NaN, +-Infinity
     * (whose header bits read as dscale 32 through NUMERIC_DSCALE, and
     * numeric_send sends them so); and a long header (weight 100). */
    const struct {
        uint16_t h;
        uint8_t dscale;
    } specials[] = {{0xC000, 0}, {0xD000, 32}, {0xF000, 32}};
    for (size_t i = 0; i < 3; i++) {
        uint8_t p[2];
        le_store_u16(p, specials[i].h);
        struct heap_datum nv = {.kind = HEAP_DATUM_PLAIN, .data = p, .len = 2};
        cr_assert_eq(send1(&at[3], &nv, &hv, &a, err, sizeof err), 0, "%s", err);
        uint8_t w[8] = {0, 0, 0, 0, (uint8_t)(specials[i].h >> 8), 0, 0, specials[i].dscale};
        cr_assert(hv.len == 8 && memcmp(hv.data, w, 8) == 0);
        free(a);
    }
    uint8_t lp[6];
    le_store_u16(lp, 0x4000 | 3);  /* negative, dscale 3 */
    le_store_u16(lp + 2, 100);     /* weight */
    le_store_u16(lp + 4, 7);
    struct heap_datum nv = {.kind = HEAP_DATUM_PLAIN, .data = lp, .len = 6};
    cr_assert_eq(send1(&at[3], &nv, &hv, &a, err, sizeof err), 0, "%s", err);
    const uint8_t lw[] = {0, 1, 0, 100, 0x40, 0, 0, 3, 0, 7};
    cr_assert(hv.len == sizeof lw && memcmp(hv.data, lw, sizeof lw) == 0);
    free(a);
    nv.len = 5; /* half a digit */
    cr_assert_eq(send1(&at[3], &nv, &hv, &a, err, sizeof err), -1);
    free(a);

    /* A TOAST pointer of another tag cannot be on disk. */
    tup_start(&t, 1, NULL);
    ptr[1] = 1;
    tup_put(&t, ptr, sizeof ptr);
    struct heap_desc d1 = {1, at};
    cr_assert_eq(deform(&d1, t.b, t.len, v, err, sizeof err), -1);
    cr_assert(strstr(err, "tag 1"), "%s", err);
}

/* ---- the oracle ----------------------------------------------------------------------- */

static void run(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    cr_assert(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql,
              PQerrorMessage(c));
    PQclear(r);
}

static bool try_run(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok;
}

static PGresult *query(PGconn *c, const char *sql, int format)
{
    PGresult *r = PQexecParams(c, sql, 0, NULL, NULL, NULL, NULL, format);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", sql, PQerrorMessage(c));
    return r;
}

static PGconn *new_db(void)
{
    char ci[1024];
    cr_assert_eq(pgtest_new_db(ci, sizeof ci), 0);
    PGconn *c = PQconnectdb(ci);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    /* Texts are sent in the client encoding; stored in the server's. */
    run(c, "SELECT set_config('client_encoding', current_setting('server_encoding'), false)");
    run(c, "CREATE EXTENSION pageinspect");
    return c;
}

struct table {
    int natts;
    struct heap_attr attrs[MAX_ATTRS];
    char names[MAX_ATTRS][64];
    uint32_t toast_relid;
    struct heap_desc desc;
};

static void load_table(PGconn *c, const char *rel, struct table *t)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT attnum, attname, atttypid, atttypmod, attlen, attbyval, attalign, "
             "attisdropped, atthasmissing FROM pg_attribute WHERE attrelid = '%s'::regclass "
             "AND attnum > 0 ORDER BY attnum",
             rel);
    PGresult *r = query(c, sql, 0);
    memset(t, 0, sizeof *t);
    t->natts = PQntuples(r);
    cr_assert_leq(t->natts, MAX_ATTRS);
    for (int i = 0; i < t->natts; i++) {
        struct heap_attr *a = &t->attrs[i];
        snprintf(t->names[i], sizeof t->names[i], "%s", PQgetvalue(r, i, 1));
        a->name = t->names[i];
        a->attnum = (int16_t)atoi(PQgetvalue(r, i, 0));
        a->type_oid = (uint32_t)strtoul(PQgetvalue(r, i, 2), NULL, 10);
        a->typmod = atoi(PQgetvalue(r, i, 3));
        a->attlen = (int16_t)atoi(PQgetvalue(r, i, 4));
        a->attbyval = PQgetvalue(r, i, 5)[0] == 't';
        a->attalign = PQgetvalue(r, i, 6)[0];
        a->attisdropped = PQgetvalue(r, i, 7)[0] == 't';
        a->atthasmissing = PQgetvalue(r, i, 8)[0] == 't';
    }
    PQclear(r);
    snprintf(sql, sizeof sql, "SELECT reltoastrelid FROM pg_class WHERE oid = '%s'::regclass", rel);
    r = query(c, sql, 0);
    t->toast_relid = (uint32_t)strtoul(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    t->desc.natts = t->natts;
    t->desc.attrs = t->attrs;
}

/* The fuzz target's input: natts, 8 bytes an attribute (u16 type OID, i32
 * typmod, i8 attlen, flags: 1 byval, 2 dropped, 4 hasmissing, alignment
 * index << 3), a form byte (0 page, 1 WAL), the tuple. */
static void write_seed(const struct table *t, int form, const uint8_t *tuple, size_t len,
                       const char *name)
{
    const char *dir = getenv("STRAUM_HEAP_TUPLE_CORPUS");
    if (dir == NULL || *dir == '\0')
        return;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    fputc(t->natts, f);
    for (int i = 0; i < t->natts; i++) {
        const struct heap_attr *a = &t->attrs[i];
        uint8_t b[8];
        le_store_u16(b, (uint16_t)a->type_oid);
        le_store_u32(b + 2, (uint32_t)a->typmod);
        b[6] = (uint8_t)(int8_t)a->attlen;
        int align = a->attalign == 'c' ? 0 : a->attalign == 's' ? 1 : a->attalign == 'i' ? 2 : 3;
        b[7] = (uint8_t)((a->attbyval ? 1 : 0) | (a->attisdropped ? 2 : 0) |
                         (a->atthasmissing ? 4 : 0) | align << 3);
        fwrite(b, 1, 8, f);
    }
    fputc(form, f);
    fwrite(tuple, 1, len, f);
    cr_assert_eq(fclose(f), 0);
}

static int hexval(char ch)
{
    return ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10;
}

/* What the walk saw, for the coverage asserts. */
struct seen {
    int tuples, updated, rows_compared, short_tuples, no_bitmap, nulls, short_hdr, long_hdr, pglz, lz4,
        external, compressed_numeric, values_compared, decodes_ok, decodes_refused;
};

/* Compares our value of attribute a with PostgreSQL's (row, field) and
 * their codes. */
static void compare_value(const struct table *t, int i, const struct heap_datum *dv,
                          const struct heap_value *v, PGresult *r, int row, int field,
                          struct seen *seen)
{
    const struct heap_attr *a = &t->attrs[i];
    bool pg_null = PQgetisnull(r, row, field);
    const uint8_t *pg = (const uint8_t *)PQgetvalue(r, row, field);
    size_t pglen = (size_t)PQgetlength(r, row, field);
    cr_assert_eq(v->is_null, pg_null, "row %d %s: NULL %d, PostgreSQL %d", row, a->name,
                 v->is_null, pg_null);
    if (pg_null) {
        seen->nulls++;
        return;
    }
    if (v->external) {
        seen->external++;
        cr_assert_eq(dv->raw_size, pglen, "row %d %s: external of %u bytes, PostgreSQL %zu",
                     row, a->name, dv->raw_size, pglen);
        cr_assert_eq(dv->toast_relid, t->toast_relid);
        return;
    }
    cr_assert_not(v->unsupported);
    cr_assert(v->len == pglen && memcmp(v->data, pg, pglen) == 0,
              "row %d %s: %zu bytes sent, PostgreSQL sends %zu", row, a->name, v->len, pglen);
    seen->values_compared++;

    struct store_column_type ct;
    char err1[512], err2[512];
    if (pgvalue_store_type(a->type_oid, a->typmod, &ct, err1, sizeof err1) != 0)
        return;
    struct pgvalue p1, p2;
    int rc1 = pgvalue_decode_binary(a->type_oid, &ct, v->data, v->len, &p1, err1, sizeof err1);
    int rc2 = pgvalue_decode_binary(a->type_oid, &ct, pg, pglen, &p2, err2, sizeof err2);
    cr_assert_eq(rc1, rc2, "row %d %s: decoded %d (%s), PostgreSQL's %d (%s)", row, a->name, rc1,
                 rc1 ? err1 : "", rc2, rc2 ? err2 : "");
    if (rc1 != 0) {
        cr_assert_str_eq(err1, err2);
        seen->decodes_refused++;
        return;
    }
    seen->decodes_ok++;
    cr_assert_eq(p1.code, p2.code, "row %d %s", row, a->name);
    cr_assert_eq(p1.len, p2.len);
    if (p1.len > 0)
        cr_assert(memcmp(p1.text, p2.text, p1.len) == 0);
}

/* Every tuple of rel's pages, in both forms, against `SELECT ctid, <live
 * columns>` in binary. */
static void check_table(PGconn *c, const char *rel, struct seen *seen)
{
    struct table t;
    load_table(c, rel, &t);
    char err[1024];
    cr_assert_eq(heap_desc_check(&t.desc, err, sizeof err), 0, "%s", err);

    /* PostgreSQL's send format of every visible row. */
    char sql[4096];
    size_t n = (size_t)snprintf(sql, sizeof sql, "SELECT ctid");
    int field_of[MAX_ATTRS];
    int nf = 1;
    for (int i = 0; i < t.natts; i++) {
        field_of[i] = -1;
        if (t.attrs[i].attisdropped)
            continue;
        field_of[i] = nf++;
        n += (size_t)snprintf(sql + n, sizeof sql - n, ", \"%s\"", t.names[i]);
    }
    snprintf(sql + n, sizeof sql - n, " FROM %s", rel);
    PGresult *rows = query(c, sql, 1);
    int nrows = PQntuples(rows);
    bool *matched = calloc((size_t)nrows + 1, 1);

    snprintf(sql, sizeof sql, "SELECT pg_relation_size('%s') / %d", rel, BLCKSZ);
    PGresult *r = query(c, sql, 0);
    int npages = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    cr_assert_gt(npages, 0);

    for (int blk = 0; blk < npages; blk++) {
        snprintf(sql, sizeof sql, "SELECT get_raw_page('%s', %d)", rel, blk);
        PGresult *pr = query(c, sql, 1);
        cr_assert_eq(PQgetlength(pr, 0, 0), BLCKSZ);
        const uint8_t *page = (const uint8_t *)PQgetvalue(pr, 0, 0);
        snprintf(sql, sizeof sql,
                 "SELECT lp, t_infomask2, t_infomask, t_hoff, t_bits, encode(t_data, 'hex') "
                 "FROM heap_page_items(get_raw_page('%s', %d)) WHERE lp_flags = 1 ORDER BY lp",
                 rel, blk);
        PGresult *items = query(c, sql, 0);
        int nitems = PQntuples(items);
        int lower = le_load_u16(page + 12), nlp = (lower - 24) / 4, item = 0;
        for (int lp = 1; lp <= nlp; lp++) {
            uint32_t w = le_load_u32(page + 24 + 4 * (lp - 1));
            unsigned off = w & 0x7FFF, flags = (w >> 15) & 3, len = w >> 17;
            if (flags != 1)
                continue; /* LP_NORMAL only */
            cr_assert_lt(item, nitems);
            cr_assert_eq(atoi(PQgetvalue(items, item, 0)), lp);
            cr_assert_leq(off + len, BLCKSZ);
            seen->tuples++;

            /* On the page. */
            const uint8_t *tuple = page + off;
            struct heap_datum dv[MAX_ATTRS], dw[MAX_ATTRS];
            cr_assert_eq(deform(&t.desc, tuple, len, dv, err, sizeof err), 0,
                         "%s block %d lp %d: %s", rel, blk, lp, err);
            int natts = le_load_u16(tuple + 18) & HEAP_NATTS_MASK;
            if (natts < t.natts)
                seen->short_tuples++;
            if (!(le_load_u16(tuple + 20) & HEAP_HASNULL))
                seen->no_bitmap++;
            if (le_load_u16(tuple + 20) & 0x2000) /* HEAP_UPDATED */
                seen->updated++;

            /* As a WAL record logs it, rebuilt from heap_page_items. */
            uint8_t rec[BLCKSZ];
            le_store_u16(rec, (uint16_t)atoi(PQgetvalue(items, item, 1)));
            le_store_u16(rec + 2, (uint16_t)atoi(PQgetvalue(items, item, 2)));
            rec[4] = (uint8_t)atoi(PQgetvalue(items, item, 3));
            size_t rl = 5;
            memset(rec + 5, 0, sizeof rec - 5);
            if (!PQgetisnull(items, item, 4)) {
                const char *bits = PQgetvalue(items, item, 4);
                for (size_t k = 0; bits[k] != '\0'; k++)
                    if (bits[k] == '1')
                        rec[5 + k / 8] |= (uint8_t)(1u << (k % 8));
            }
            rl += (size_t)rec[4] - 23;
            const char *hex = PQgetvalue(items, item, 5);
            for (size_t k = 0; hex[2 * k] != '\0'; k++)
                rec[rl++] = (uint8_t)(hexval(hex[2 * k]) << 4 | hexval(hex[2 * k + 1]));
            cr_assert_eq(rl, len - 18, "block %d lp %d: heap_page_items' bytes", blk, lp);
            struct heap_tuple_header h;
            const uint8_t *body;
            size_t blen;
            cr_assert_eq(heap_tuple_split_xlog(rec, rl, &h, &body, &blen, err, sizeof err), 0);
            cr_assert_eq(heap_tuple_deform(&t.desc, &h, body, blen, dw, err, sizeof err), 0,
                         "%s block %d lp %d (WAL form): %s", rel, blk, lp, err);
            item++;

            char name[64];
            snprintf(name, sizeof name, "%s_%d_%d_page", rel, blk, lp);
            write_seed(&t, 0, tuple, len, name);
            if (lp % 4 == 1) {
                snprintf(name, sizeof name, "%s_%d_%d_wal", rel, blk, lp);
                write_seed(&t, 1, rec, rl, name);
            }

            /* Both forms convert to the same bytes. */
            size_t cap = heap_tuple_send_size(&t.desc, dv);
            cr_assert_eq(heap_tuple_send_size(&t.desc, dw), cap);
            uint8_t *a1 = malloc(cap + 1), *a2 = malloc(cap + 1);
            struct heap_value v1[MAX_ATTRS], v2[MAX_ATTRS];
            cr_assert_eq(heap_tuple_send(&t.desc, dv, a1, cap, v1, err, sizeof err), 0,
                         "block %d lp %d: %s", blk, lp, err);
            cr_assert_eq(heap_tuple_send(&t.desc, dw, a2, cap, v2, err, sizeof err), 0,
                         "block %d lp %d (WAL form): %s", blk, lp, err);
            for (int i = 0; i < t.natts; i++) {
                cr_assert(v1[i].is_null == v2[i].is_null && v1[i].external == v2[i].external &&
                          v1[i].len == v2[i].len &&
                          (v1[i].len == 0 || memcmp(v1[i].data, v2[i].data, v1[i].len) == 0));
                const struct heap_datum *d = &dv[i];
                if (d->kind == HEAP_DATUM_PLAIN && (d->data[-1] & 1))
                    seen->short_hdr++;
                else if (d->kind == HEAP_DATUM_PLAIN)
                    seen->long_hdr++;
                else if (d->kind == HEAP_DATUM_COMPRESSED) {
                    if (d->compression == HEAP_COMPRESSION_PGLZ)
                        seen->pglz++;
                    else
                        seen->lz4++;
                    if (t.attrs[i].type_oid == PG_NUMERIC)
                        seen->compressed_numeric++;
                }
            }

            /* The visible row at this ctid, if any. */
            for (int row = 0; row < nrows; row++) {
                const uint8_t *tid = (const uint8_t *)PQgetvalue(rows, row, 0);
                uint32_t rb = (uint32_t)tid[0] << 24 | (uint32_t)tid[1] << 16 |
                              (uint32_t)tid[2] << 8 | tid[3];
                unsigned ro = (unsigned)(tid[4] << 8 | tid[5]);
                if (rb != (uint32_t)blk || ro != (unsigned)lp)
                    continue;
                cr_assert_not(matched[row]);
                matched[row] = true;
                seen->rows_compared++;
                for (int i = 0; i < t.natts; i++)
                    if (field_of[i] >= 0)
                        compare_value(&t, i, &dv[i], &v1[i], rows, row, field_of[i], seen);
            }
            free(a1);
            free(a2);
        }
        cr_assert_eq(item, nitems);
        PQclear(items);
        PQclear(pr);
    }
    for (int row = 0; row < nrows; row++)
        cr_assert(matched[row], "row %d of %s found on no page", row, rel);
    free(matched);
    PQclear(rows);
}

/* Columns of t and the values their rows cycle through (index 0 never
 * NULL: the first row of each batch has no null bitmap). */
struct column {
    const char *name, *type;
    const char *const *vals;
    int n;
};

#define VALS(...) (const char *const[]){__VA_ARGS__}, (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

#define MD5S(n) "(SELECT string_agg(md5(i::text), '') FROM generate_series(1, " #n ") i)"

static struct column columns[] = {
    {"b", "bool", VALS("true", "false", "NULL")},
    {"s", "int2", VALS("1", "-32768", "32767", "NULL", "0")},
    {"big", "int8", VALS("1", "-9223372036854775808", "9223372036854775807", "NULL", "-1", "4294967296")},
    {"gone", "int8", VALS("42", "NULL", "-7")},
    {"f4", "float4", VALS("1.5", "'-Infinity'", "'NaN'", "NULL", "'-0'", "3.4028235e38", "1e-45")},
    {"f8", "float8", VALS("2.25", "'NaN'", "NULL", "'-0'", "1.7976931348623157e308", "5e-324", "'Infinity'", "-0.1")},
    {"n", "numeric", VALS("0", "-0.5", "'NaN'", "'Infinity'", "'-Infinity'", "1e100", "1e300", "1e-200", "NULL",
                          "-1e-10", "123456789012345678901234567890.123456789", "-0.0", "12.50",
                          "repeat('9', 4000)::numeric")},
    {"n2", "numeric(12,2)", VALS("0.00", "-1234567890.12", "NULL", "9999999999.99", "0.01", "-0.01")},
    {"nneg", "numeric(6,-2)", VALS("12345", "-12345", "NULL", "0", "999999")},
    {"ntiny", "numeric(20,18)", VALS("0.000000000000000001", "NULL", "-99.999999999999999999", "0", "1.5")},
    {"d", "date", VALS("'2000-01-01'", "'0001-01-01'", "NULL", "'infinity'", "'-infinity'", "'2024-02-29'",
                       "'4713-01-01 BC'", "'5874897-12-31'")},
    {"ts", "timestamp", VALS("'2000-01-01 00:00'", "'1900-02-28 12:34:56.789'", "NULL", "'infinity'",
                             "'294276-12-31 23:59:59.999999'", "'4713-01-01 00:00 BC'")},
    {"tz", "timestamptz", VALS("'2000-01-01 00:00+00'", "'2024-01-17 10:00:00.123456+02'", "NULL",
                               "'-infinity'", "'1970-01-01 00:00:00+00'")},
    {"txt", "text", VALS("'a'", "''", "NULL", "repeat('é', 100)", "repeat('x', 126)", "repeat('y', 127)",
                         "'hello, world'")},
    {"vc", "varchar(300)", VALS("'v'", "NULL", "repeat('w', 300)", "'ünïcödé'")},
    {"bc", "char(5)", VALS("'ab'", "'abcde'", "NULL", "''", "'é'")},
    {"long", "text", VALS("repeat('abc', 1000)", "NULL", "repeat('x', 500)", MD5S(20),
                          "repeat('0123456789', 300)", MD5S(2000))},
    {"l4", "text", VALS("repeat('xyz', 2000)", "NULL", "'short'", "repeat('lz4 ', 900)")},
    {"ext", "text", VALS("'inline'", MD5S(160), "NULL", "NULL")},
    {"gone2", "text", VALS("'g'", "NULL", "repeat('G', 200)")},
    {"late", "int8", VALS("7", "NULL", "-1")},
    {"late_txt", "text", VALS("'late'", "NULL", "repeat('L', 3000)")},
};
#define NCOLS (int)(sizeof columns / sizeof columns[0])

static bool col_in(const char *name, const char *const *list)
{
    for (; *list != NULL; list++)
        if (strcmp(*list, name) == 0)
            return true;
    return false;
}

/* Inserts rows first .. first + n - 1 with the columns present. */
static void insert_rows(PGconn *c, int first, int n, const char *const *absent)
{
    static char sql[65536];
    for (int row = first; row < first + n; row++) {
        size_t len = (size_t)snprintf(sql, sizeof sql, "INSERT INTO t (id");
        for (int k = 0; k < NCOLS; k++)
            if (!col_in(columns[k].name, absent))
                len += (size_t)snprintf(sql + len, sizeof sql - len, ", %s", columns[k].name);
        len += (size_t)snprintf(sql + len, sizeof sql - len, ") VALUES (%d", row);
        for (int k = 0; k < NCOLS; k++) {
            if (col_in(columns[k].name, absent))
                continue;
            /* The batch's first row takes every column's first value. */
            int at = row == first ? 0 : (row * 7 + k) % columns[k].n;
            len += (size_t)snprintf(sql + len, sizeof sql - len, ", %s", columns[k].vals[at]);
        }
        snprintf(sql + len, sizeof sql - len, ")");
        run(c, sql);
    }
}

Test(heap_tuple_oracle, every_tuple, .timeout = 300)
{
    PGconn *c = new_db();
    PGresult *r = query(c, "SHOW server_version_num", 0);
    int version = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    if (version < 150000)
        columns[8].type = "numeric(6,0)"; /* negative scales came in 15 */

    char sql[4096];
    size_t n = (size_t)snprintf(sql, sizeof sql, "CREATE TABLE t (id int4 NOT NULL");
    const char *const later[] = {"late", "late_txt", NULL};
    for (int k = 0; k < NCOLS; k++)
        if (!col_in(columns[k].name, later))
            n += (size_t)snprintf(sql + n, sizeof sql - n, ", %s %s", columns[k].name,
                                  columns[k].type);
    snprintf(sql + n, sizeof sql - n, ") WITH (autovacuum_enabled = off)");
    run(c, sql);
    run(c, "ALTER TABLE t ALTER COLUMN ext SET STORAGE EXTERNAL");
    bool lz4 = try_run(c, "ALTER TABLE t ALTER COLUMN l4 SET COMPRESSION lz4");
    if (!lz4)
        fprintf(stderr, "test_heap_tuple: the server has no lz4; l4 is compressed by pglz\n");

    /* Batch A with every column; gone dropped; batch B; gone2 dropped and
     * two columns added; batch C; an update. */
    const char *const absent_a[] = {"late", "late_txt", NULL};
    insert_rows(c, 1, 16, absent_a);
    run(c, "INSERT INTO t (id) VALUES (100)");
    run(c, "ALTER TABLE t DROP COLUMN gone");
    const char *const absent_b[] = {"gone", "late", "late_txt", NULL};
    insert_rows(c, 17, 12, absent_b);
    run(c, "ALTER TABLE t DROP COLUMN gone2");
    run(c, "ALTER TABLE t ADD COLUMN late int8");
    run(c, "ALTER TABLE t ADD COLUMN late_txt text");
    const char *const absent_c[] = {"gone", "gone2", NULL};
    insert_rows(c, 29, 14, absent_c);
    run(c, "INSERT INTO t (id) VALUES (101)");
    run(c, "UPDATE t SET f8 = 1.0, late = 5 WHERE id IN (2, 20, 30)");

    struct seen seen = {0};
    check_table(c, "t", &seen);
    fprintf(stderr,
            "test_heap_tuple: %d tuples (%d updated), %d rows, %d values compared (%d decoded, %d refused by "
            "both), %d NULLs, %d short tuples, %d without bitmap, headers 1-byte %d 4-byte %d, "
            "pglz %d, lz4 %d, compressed numerics %d, external %d\n",
            seen.tuples, seen.updated, seen.rows_compared, seen.values_compared, seen.decodes_ok,
            seen.decodes_refused, seen.nulls, seen.short_tuples, seen.no_bitmap, seen.short_hdr,
            seen.long_hdr, seen.pglz, seen.lz4, seen.compressed_numeric, seen.external);
    cr_assert_eq(seen.rows_compared, 16 + 1 + 12 + 14 + 1);
    cr_assert_geq(seen.updated, 3, "the updated rows' new versions");
    cr_assert_gt(seen.short_tuples, 0);
    cr_assert_gt(seen.no_bitmap, 0);
    cr_assert_gt(seen.nulls, 0);
    cr_assert_gt(seen.short_hdr, 0);
    cr_assert_gt(seen.long_hdr, 0);
    cr_assert_gt(seen.pglz, 0);
    if (lz4)
        cr_assert_gt(seen.lz4, 0);
    cr_assert_gt(seen.compressed_numeric, 0);
    cr_assert_gt(seen.external, 0);
    cr_assert_gt(seen.decodes_ok, 0);
    cr_assert_gt(seen.decodes_refused, 0);
    PQfinish(c);
}

Test(heap_tuple_oracle, missing_default, .timeout = 120)
{
    PGconn *c = new_db();
    run(c, "CREATE TABLE m (a int4, b text) WITH (autovacuum_enabled = off)");
    run(c, "INSERT INTO m VALUES (1, 'one'), (2, NULL)");
    run(c, "ALTER TABLE m ADD COLUMN c int8 DEFAULT 7");
    run(c, "INSERT INTO m VALUES (3, 'three', 8)");

    struct table t;
    load_table(c, "m", &t);
    char err[1024];
    cr_assert_eq(heap_desc_check(&t.desc, err, sizeof err), -1);
    cr_assert(strstr(err, "column \"c\"") && strstr(err, "VACUUM FULL"), "%s", err);
    /* Tuple by tuple: the old ones lack the value, the new one has it. */
    PGresult *pr = query(c, "SELECT get_raw_page('m', 0)", 1);
    const uint8_t *page = (const uint8_t *)PQgetvalue(pr, 0, 0);
    int refused = 0, read = 0;
    for (int lp = 1; lp <= (le_load_u16(page + 12) - 24) / 4; lp++) {
        uint32_t w = le_load_u32(page + 24 + 4 * (lp - 1));
        struct heap_datum dv[MAX_ATTRS];
        if (deform(&t.desc, page + (w & 0x7FFF), w >> 17, dv, err, sizeof err) == 0)
            read++;
        else
            refused++;
    }
    PQclear(pr);
    cr_assert(refused == 2 && read == 1, "%d refused, %d read", refused, read);

    run(c, "VACUUM FULL m");
    struct seen seen = {0};
    check_table(c, "m", &seen);
    cr_assert_eq(seen.rows_compared, 3);
    cr_assert_eq(seen.short_tuples, 0);
    PQfinish(c);
}
