/* test_pgwal.c -- ingest/pgwal.c, the decoder of PostgreSQL 15's physical
 * WAL, in two parts.
 *
 * Laid-out WAL (no server): a small writer here lays records into pages as
 * PostgreSQL does (page headers, long headers at segment starts, records
 * continued across pages, a switch, a crash's overwritten continuation),
 * and the reader, fed in pieces of every size and from every page and
 * record start, must give back exactly the records written; every broken
 * page, header and length must be refused with a message saying what, and
 * page images (uncompressed, pglz, lz4) must restore byte for byte.
 *
 * The oracle (pg_waldump, PostgreSQL's own decoder): a workload on the test
 * cluster with full_page_writes on (turned on for the test, and back, if
 * the cluster runs without it) (COPY, single inserts, HOT and non-HOT
 * updates with pglz- and lz4-compressed page images, deletes, a rollback,
 * savepoints, 70 subtransactions, row locks, an upsert, two-phase commit
 * and rollback when the cluster allows it, VACUUM, VACUUM FREEZE, TRUNCATE,
 * a 30 kB logical message, a switch); its WAL, read from pg_wal from the
 * checkpoint's redo pointer to the switch, fed in random pieces, must match
 * pg_waldump's output record for record: LSN, resource manager, xid,
 * lengths, xl_prev, every block reference and image, and for the records
 * pgwal.c parses the whole description pg_waldump prints, rebuilt from the
 * parsed structs. Restored heap images must be sound pages holding each
 * logged tuple at its offset; read again from the segment's start and from
 * a page inside a continued record, the WAL must give the same records.
 *
 * STRAUM_PGWAL_SEED fixes the random pieces (each test prints the seed it
 * used); STRAUM_PGWAL_CORPUS=<dir> writes seed inputs for fuzz_pgwal
 * there (how tests/fuzz/corpus/pgwal was made). */
#include "base/bytes.h"
#include "ingest/internal.h"
#include "ingest/pgwal.h"
#include "tests/e2e/walfiles.h"
#include "tests/pg/pgtest.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <lz4.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PAGE PGWAL_PAGE_SIZE
#define SEG1M (1u << 20)

/* ---- small tools ------------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static uint64_t seed_once(void)
{
    static uint64_t seed;
    if (seed == 0) {
        const char *env = getenv("STRAUM_PGWAL_SEED");
        seed = env != NULL ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
        if (seed == 0)
            seed = 1;
        fprintf(stderr, "test_pgwal: STRAUM_PGWAL_SEED=%llu\n", (unsigned long long)seed);
    }
    rng_state = seed;
    return seed;
}

/* A growable byte string. */
struct bytes {
    uint8_t *p;
    size_t len, cap;
};

static void b_put(struct bytes *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        cr_assert_not_null(b->p);
        b->cap = cap;
    }
    if (src != NULL)
        memcpy(b->p + b->len, src, n);
    else
        memset(b->p + b->len, 0, n);
    b->len += n;
}

static void b_u8(struct bytes *b, uint8_t v)
{
    b_put(b, &v, 1);
}

static void b_u16(struct bytes *b, uint16_t v)
{
    uint8_t t[2];
    le_store_u16(t, v);
    b_put(b, t, 2);
}

static void b_u32(struct bytes *b, uint32_t v)
{
    uint8_t t[4];
    le_store_u32(t, v);
    b_put(b, t, 4);
}

static void b_u64(struct bytes *b, uint64_t v)
{
    uint8_t t[8];
    le_store_u64(t, v);
    b_put(b, t, 8);
}

/* A growable string, for descriptions. */
struct str {
    char *p;
    size_t len, cap;
};

__attribute__((format(printf, 2, 3))) static void s_printf(struct str *s, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(s->p ? s->p + s->len : NULL, s->p ? s->cap - s->len : 0, fmt, ap);
        va_end(ap);
        cr_assert_geq(n, 0);
        if (s->p != NULL && s->len + (size_t)n < s->cap) {
            s->len += (size_t)n;
            return;
        }
        size_t cap = s->cap ? s->cap : 256;
        while (cap <= s->len + (size_t)n)
            cap *= 2;
        s->p = realloc(s->p, cap);
        cr_assert_not_null(s->p);
        s->cap = cap;
        s->p[s->len] = '\0';
    }
}

static void s_clear(struct str *s)
{
    s->len = 0;
    if (s->p)
        s->p[0] = '\0';
}

/* ---- laying out WAL ---------------------------------------------------------------- */

#define SYSID 7311234567890123456ull

/* A record being built: its 24-byte header, then headers and payloads. */
static void rec_begin(struct bytes *r, uint8_t rmid, uint8_t info, uint32_t xid)
{
    r->len = 0;
    uint8_t h[24] = {0};
    le_store_u32(h + 4, xid);
    h[16] = info;
    h[17] = rmid;
    b_put(r, h, 24);
}

/* Sets xl_tot_len; xl_prev and xl_crc are the writer's. */
static void rec_end(struct bytes *r)
{
    le_store_u32(r->p, (uint32_t)r->len);
}

/* The main data header for n bytes (short or long form). */
static void rec_main_header(struct bytes *r, uint32_t n)
{
    if (n == 0)
        return;
    if (n < 256) {
        b_u8(r, 255);
        b_u8(r, (uint8_t)n);
    } else {
        b_u8(r, 254);
        b_u32(r, n);
    }
}

/* An XLOG NOOP record of tot bytes in all (at least 27; its main data, in
 * the short form when it fits, is a pattern seeded by tag). */
static void noop_record(struct bytes *r, uint32_t tot, uint32_t tag)
{
    cr_assert_geq(tot, 27, "noop of %u bytes", tot);
    rec_begin(r, PGWAL_RM_XLOG, PGWAL_XLOG_NOOP, 0);
    uint32_t data;
    if (tot - 26 <= 255) {
        data = tot - 26;
        b_u8(r, 255);
        b_u8(r, (uint8_t)data);
    } else {
        data = tot - 29;
        b_u8(r, 254);
        b_u32(r, data);
    }
    for (uint32_t i = 0; i < data; i++)
        b_u8(r, (uint8_t)(i * 31 + tag));
    rec_end(r);
}

struct walw {
    struct bytes out;
    uint64_t base;   /* LSN of out.p[0]: a page boundary */
    uint32_t seg;
    uint64_t prev;   /* the last record written */
    uint16_t flags;  /* more xlp_info bits for the next page header */
    uint32_t blcksz; /* for the long headers: 8192 but to test refusals */
};

static void ww_init(struct walw *w, uint64_t base, uint32_t seg)
{
    memset(w, 0, sizeof *w);
    cr_assert(base % PAGE == 0);
    w->base = base;
    w->seg = seg;
    w->prev = base > 0 ? base - 64 : 0;
    w->blcksz = PAGE;
}

static uint64_t ww_pos(const struct walw *w)
{
    return w->base + w->out.len;
}

static void ww_page_header(struct walw *w, uint16_t info, uint32_t rem)
{
    uint64_t lsn = ww_pos(w);
    bool lng = lsn % w->seg == 0;
    uint8_t h[40] = {0};
    le_store_u16(h, 0xD110);
    le_store_u16(h + 2, (uint16_t)(info | (lng ? 0x0002 : 0) | w->flags));
    le_store_u32(h + 4, 1);
    le_store_u64(h + 8, lsn);
    le_store_u32(h + 16, rem);
    if (lng) {
        le_store_u64(h + 24, SYSID);
        le_store_u32(h + 32, w->seg);
        le_store_u32(h + 36, w->blcksz);
    }
    b_put(&w->out, h, lng ? 40 : 24);
    w->flags = 0;
}

/* Writes the record's bytes from where the writer is, splitting it across
 * pages; stops at the first page end when partial. Returns its LSN. */
static uint64_t ww_put_record(struct walw *w, struct bytes *r, uint64_t prev, bool partial)
{
    if (ww_pos(w) % PAGE == 0)
        ww_page_header(w, 0, 0);
    uint64_t lsn = ww_pos(w);
    uint32_t tot = (uint32_t)r->len;
    le_store_u64(r->p + 8, prev);
    uint32_t crc = pgwal_crc32c(0xFFFFFFFFu, r->p + 24, tot - 24);
    crc = pgwal_crc32c(crc, r->p, 20) ^ 0xFFFFFFFFu;
    le_store_u32(r->p + 20, crc);
    for (uint32_t i = 0; i < tot;) {
        if (ww_pos(w) % PAGE == 0) {
            if (partial)
                return lsn;
            ww_page_header(w, 0x0001, tot - i);
        }
        size_t n = PAGE - ww_pos(w) % PAGE;
        if (n > tot - i)
            n = tot - i;
        b_put(&w->out, r->p + i, n);
        i += (uint32_t)n;
    }
    while (ww_pos(w) % 8 != 0)
        b_u8(&w->out, 0);
    return lsn;
}

static uint64_t ww_record(struct walw *w, struct bytes *r)
{
    uint64_t lsn = ww_put_record(w, r, w->prev, false);
    w->prev = lsn;
    return lsn;
}

/* The length of a record that, written next, ends at offset `at` (a
 * multiple of 8, or 8192 for the page's end) of this page, or of the next
 * one when too little room is left here. */
static uint32_t ww_len_to(struct walw *w, uint32_t at)
{
    if (ww_pos(w) % PAGE == 0)
        ww_page_header(w, 0, 0);
    uint32_t here = (uint32_t)(ww_pos(w) % PAGE);
    if (at >= here + 32)
        return at - here;
    return PAGE - here + at - 24;
}

/* A NOOP that ends exactly at offset `at` of a page. */
static uint64_t ww_fill_to(struct walw *w, uint32_t at, uint32_t tag)
{
    struct bytes r = {0};
    noop_record(&r, ww_len_to(w, at), tag);
    uint64_t lsn = ww_record(w, &r);
    free(r.p);
    cr_assert_eq(ww_pos(w) % PAGE, at % PAGE);
    return lsn;
}

/* The records written, as the reader must give them back. */
struct expect {
    uint64_t lsn[256], end[256];
    uint8_t *bytes[256];
    uint32_t len[256];
    int n;
};

static void expect_add(struct expect *e, uint64_t lsn, const struct bytes *r, uint64_t end)
{
    cr_assert_lt(e->n, 256);
    e->lsn[e->n] = lsn;
    e->end[e->n] = end;
    e->len[e->n] = (uint32_t)r->len;
    e->bytes[e->n] = malloc(r->len);
    memcpy(e->bytes[e->n], r->p, r->len);
    e->n++;
}

static void expect_free(struct expect *e)
{
    for (int i = 0; i < e->n; i++)
        free(e->bytes[i]);
    e->n = 0;
}

/* Writes a record and remembers it (its end: the aligned position after). */
static uint64_t ww_add(struct walw *w, struct expect *e, struct bytes *r)
{
    uint64_t lsn = ww_record(w, r);
    expect_add(e, lsn, r, ww_pos(w));
    return lsn;
}

/* Piece sizes: mode 0 one byte, 1 up to 7, 2 up to 100, 3 up to 20000,
 * 4 everything at once, 5 a mix. */
static size_t piece(int mode, size_t left)
{
    size_t n;
    switch (mode) {
    case 0: n = 1; break;
    case 1: n = 1 + rng() % 7; break;
    case 2: n = 1 + rng() % 100; break;
    case 3: n = 1 + rng() % 20000; break;
    case 4: n = left; break;
    default: {
        static const size_t caps[] = {1, 24, 8192, 300000};
        n = 1 + rng() % caps[rng() % 4];
    }
    }
    return n < left ? n : left;
}

/* Feeds stream[from - base ..] in pieces and collects what comes out:
 * returns the reader's last status (0: bytes used up, -1: error in err). */
static int run_reader(const struct walw *w, uint32_t seg, uint64_t from, int mode,
                      struct expect *got, char *err, size_t errlen)
{
    struct pgwal_reader r;
    int rc = pgwal_reader_init(&r, seg, from, 0, err, errlen);
    if (rc != 0)
        return -1;
    size_t off = (size_t)(from - w->base);
    got->n = 0;
    while (off < w->out.len) {
        size_t n = piece(mode, w->out.len - off);
        if (pgwal_reader_feed(&r, w->base + off, w->out.p + off, n, err, errlen) != 0) {
            rc = -1;
            break;
        }
        off += n;
        struct pgwal_record rec;
        while ((rc = pgwal_reader_next(&r, &rec, err, errlen)) == 1) {
            struct bytes copy = {0};
            b_put(&copy, rec.raw, rec.tot_len);
            expect_add(got, rec.lsn, &copy, rec.end);
            free(copy.p);
        }
        if (rc < 0)
            break;
    }
    pgwal_reader_free(&r);
    return rc;
}

/* got must be exactly want's records from index first on. */
static void same_records(const struct expect *want, int first, const struct expect *got,
                         const char *what)
{
    cr_assert_eq(got->n, want->n - first, "%s: %d records, expected %d", what, got->n,
                 want->n - first);
    for (int i = 0; i < got->n; i++) {
        int k = first + i;
        cr_assert_eq(got->lsn[i], want->lsn[k], "%s: record %d at %llX, expected %llX", what, i,
                     (unsigned long long)got->lsn[i], (unsigned long long)want->lsn[k]);
        cr_assert_eq(got->len[i], want->len[k], "%s: record %d length", what, i);
        cr_assert_eq(got->end[i], want->end[k], "%s: record %d end %llX, expected %llX", what, i,
                     (unsigned long long)got->end[i], (unsigned long long)want->end[k]);
        /* bytes 8..24 (xl_prev, xl_crc) are the writer's */
        cr_assert(memcmp(got->bytes[i] + 24, want->bytes[k] + 24, got->len[i] - 24) == 0 &&
                      memcmp(got->bytes[i], want->bytes[k], 8) == 0,
                  "%s: record %d bytes", what, i);
    }
}

/* Fuzz seeds: [flags][lsn LE 8][split seed LE 4][bytes] (fuzz_pgwal.c). */
static void corpus_write(const char *name, uint8_t flags, uint64_t lsn, const uint8_t *p,
                         size_t n)
{
    const char *dir = getenv("STRAUM_PGWAL_CORPUS");
    if (dir == NULL || *dir == '\0')
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    uint8_t h[13];
    h[0] = flags;
    le_store_u64(h + 1, lsn);
    le_store_u32(h + 9, 0x9E3779B9u ^ (uint32_t)n);
    cr_assert(fwrite(h, 1, sizeof h, f) == sizeof h && fwrite(p, 1, n, f) == n);
    cr_assert_eq(fclose(f), 0);
}

/* ---- The WAL's end ---------------------------------------------------------------------- */

/* An insert position just past a page's header is the end of the page
 * before (the last record ended there); every other position is a
 * record's end as it is. */
Test(pgwal_crafted, last_record_end)
{
    const uint32_t seg = 16u << 20;
    const uint64_t s0 = 7 * (uint64_t)seg; /* a segment's start */
    cr_assert_eq(pgwal_last_record_end(s0 + 5 * PAGE + 24, PAGE, seg), s0 + 5 * PAGE);
    cr_assert_eq(pgwal_last_record_end(s0 + 40, PAGE, seg), s0, "a segment's long header");
    cr_assert_eq(pgwal_last_record_end(s0 + 24, PAGE, seg), s0 + 24,
                 "inside a long header: no position of either kind");
    cr_assert_eq(pgwal_last_record_end(s0 + 5 * PAGE, PAGE, seg), s0 + 5 * PAGE);
    cr_assert_eq(pgwal_last_record_end(s0 + 5 * PAGE + 32, PAGE, seg), s0 + 5 * PAGE + 32);
    cr_assert_eq(pgwal_last_record_end(s0 + PAGE + 40, PAGE, seg), s0 + PAGE + 40);
    /* other block and segment sizes */
    cr_assert_eq(pgwal_last_record_end(3 * 16384 + 24, 16384, 1u << 20), 3 * 16384);
    cr_assert_eq(pgwal_last_record_end(PAGE + 24, 16384, 1u << 20), PAGE + 24);
    cr_assert_eq(pgwal_last_record_end(2 * (uint64_t)(1u << 20) + 40, 16384, 1u << 20),
                 2 * (uint64_t)(1u << 20));
    cr_assert_eq(pgwal_last_record_end(PAGE + 24, 0, 0), PAGE + 24, "sizes unknown");
}

/* ---- CRC ------------------------------------------------------------------------------ */

Test(pgwal_crafted, crc32c)
{
    /* The standard check value of CRC-32C, and pieces giving the same. */
    const char *s = "123456789";
    cr_assert_eq(pgwal_crc32c(0xFFFFFFFFu, s, 9) ^ 0xFFFFFFFFu, 0xE3069283u);
    uint32_t c = pgwal_crc32c(0xFFFFFFFFu, s, 4);
    cr_assert_eq(pgwal_crc32c(c, s + 4, 5) ^ 0xFFFFFFFFu, 0xE3069283u);
    uint8_t zeros[32] = {0};
    cr_assert_eq(pgwal_crc32c(0xFFFFFFFFu, zeros, 32) ^ 0xFFFFFFFFu, 0x8A9136AAu);
}

/* The CPU's crc32 instruction, where pgwal_crc32c uses it, and the table
 * agree at every length and alignment, from any running CRC. */
Test(pgwal_crafted, crc32c_by_instruction_equals_by_table)
{
    uint8_t buf[300];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t at = 0; at < 8; at++)
        for (size_t len = 0; at + len <= sizeof buf; len += len < 40 ? 1 : 37) {
            uint32_t start = 0xFFFFFFFFu ^ (uint32_t)(at * 2654435761u + len);
            uint32_t a = pgwal_crc32c(start, buf + at, len);
            uint32_t b = pgwal_crc32c_table(start, buf + at, len);
            cr_assert_eq(a, b, "offset %zu, %zu bytes: %08x against %08x", at, len, a, b);
        }
}

/* ---- pages and records ---------------------------------------------------------------- */

/* A stream over a segment boundary: small records, one ending on a page's
 * last byte, one whose header is cut by a page end, records of 20 and 30
 * kB over several pages. */
static void build_stream(struct walw *w, struct expect *e)
{
    ww_init(w, 5ull * SEG1M - 3 * PAGE + 7 * (uint64_t)SEG1M * 4096, SEG1M);
    struct bytes r = {0};
    uint32_t sizes[] = {27, 100, 300, 8000, 30000, 29, 20000, 64, 5000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        noop_record(&r, sizes[i], (uint32_t)i);
        ww_add(w, e, &r);
        if (i == 2) {
            /* end exactly at the page's end, then a record at the next
             * page's start */
            noop_record(&r, ww_len_to(w, PAGE), 99);
            ww_add(w, e, &r);
            cr_assert_eq(ww_pos(w) % PAGE, 0);
        }
        if (i == 5) {
            /* a record starting 8 bytes before a page's end: its header
             * is cut by the page end */
            noop_record(&r, ww_len_to(w, PAGE - 8), 98);
            ww_add(w, e, &r);
            cr_assert_eq(ww_pos(w) % PAGE, PAGE - 8);
        }
    }
    free(r.p);
    cr_assert_gt(ww_pos(w) / SEG1M, w->base / SEG1M, "the stream crosses a segment");
}

Test(pgwal_crafted, pieces_and_starts)
{
    seed_once();
    struct walw w;
    struct expect want = {0}, got = {0};
    build_stream(&w, &want);
    char err[512];

    /* From the first record, in pieces of every size. */
    for (int mode = 0; mode <= 5; mode++) {
        int rc = run_reader(&w, SEG1M, want.lsn[0], mode, &got, err, sizeof err);
        cr_assert_eq(rc, 0, "mode %d: %s", mode, err);
        same_records(&want, 0, &got, "from the first record");
        expect_free(&got);
    }
    /* From the stream's first page: the same. */
    cr_assert_eq(run_reader(&w, SEG1M, w.base, 5, &got, err, sizeof err), 0, "%s", err);
    same_records(&want, 0, &got, "from the first page");
    expect_free(&got);

    /* From every page boundary: the first record starting after it. */
    for (uint64_t page = w.base; page < ww_pos(&w); page += PAGE) {
        int first = 0;
        while (first < want.n && want.lsn[first] < page)
            first++;
        cr_assert_eq(run_reader(&w, SEG1M, page, 5, &got, err, sizeof err), 0, "page %llX: %s",
                     (unsigned long long)page, err);
        same_records(&want, first, &got, "from a page");
        expect_free(&got);
    }
    /* From every record. */
    for (int i = 0; i < want.n; i++) {
        cr_assert_eq(run_reader(&w, SEG1M, want.lsn[i], 3, &got, err, sizeof err), 0, "%s", err);
        same_records(&want, i, &got, "from a record");
        expect_free(&got);
    }

    /* A piece that repeats bytes already read (streaming restarted at an
     * earlier position): the repeat is dropped. */
    struct pgwal_reader r;
    cr_assert_eq(pgwal_reader_init(&r, SEG1M, w.base, 0, err, sizeof err), 0);
    struct pgwal_record rec;
    int n = 0;
    cr_assert_eq(pgwal_reader_feed(&r, w.base, w.out.p, 3 * PAGE + 100, err, sizeof err), 0);
    while (pgwal_reader_next(&r, &rec, err, sizeof err) == 1)
        n++;
    cr_assert_eq(pgwal_reader_want(&r), w.base + 3 * PAGE + 100);
    cr_assert_eq(pgwal_reader_feed(&r, w.base, w.out.p, w.out.len, err, sizeof err), 0, "%s", err);
    int rc;
    while ((rc = pgwal_reader_next(&r, &rec, err, sizeof err)) == 1)
        n++;
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_eq(n, want.n);
    /* a gap is refused */
    cr_assert_eq(pgwal_reader_feed(&r, ww_pos(&w) + 8, w.out.p, 8, err, sizeof err), -1);
    cr_assert(strstr(err, "missing") != NULL, "%s", err);
    pgwal_reader_free(&r);

    corpus_write("stream_pages", 0x02, w.base + PAGE, w.out.p + PAGE, w.out.len - PAGE);
    expect_free(&want);
    free(w.out.p);
}

Test(pgwal_crafted, switch_skips_the_segment)
{
    seed_once();
    struct walw w;
    struct expect want = {0}, got = {0};
    ww_init(&w, 3ull * SEG1M - 2 * PAGE, SEG1M);
    struct bytes r = {0};
    noop_record(&r, 500, 1);
    ww_add(&w, &want, &r);
    rec_begin(&r, PGWAL_RM_XLOG, PGWAL_XLOG_SWITCH, 0);
    rec_end(&r);
    uint64_t sw = ww_record(&w, &r);
    expect_add(&want, sw, &r, 3ull * SEG1M);
    /* the rest of the segment: junk the reader must not look at */
    while (ww_pos(&w) < 3ull * SEG1M)
        b_u8(&w.out, 0xEE);
    noop_record(&r, 3000, 2);
    ww_add(&w, &want, &r);
    noop_record(&r, 9000, 3);
    ww_add(&w, &want, &r);
    free(r.p);
    char err[512];
    for (int mode = 1; mode <= 5; mode++) {
        cr_assert_eq(run_reader(&w, SEG1M, w.base, mode, &got, err, sizeof err), 0, "%s", err);
        same_records(&want, 0, &got, "over a switch");
        expect_free(&got);
    }
    corpus_write("stream_switch", 0x02 | 0x08, w.base, w.out.p, w.out.len);
    expect_free(&want);
    free(w.out.p);
}

/* A record cut by a crash, the page after it flagged
 * XLP_FIRST_IS_OVERWRITE_CONTRECORD and starting with the
 * OVERWRITE_CONTRECORD that names it. */
static uint64_t build_overwrite(struct walw *w, struct expect *e, bool right_lsn)
{
    ww_init(w, 9ull * SEG1M + 4 * PAGE, SEG1M);
    struct bytes r = {0};
    noop_record(&r, 700, 1);
    ww_add(w, e, &r);
    noop_record(&r, 900, 2);
    ww_add(w, e, &r);
    noop_record(&r, 20000, 3);
    uint64_t cut = ww_put_record(w, &r, w->prev, true);
    w->flags = 0x0008;
    rec_begin(&r, PGWAL_RM_XLOG, PGWAL_XLOG_OVERWRITE_CONTRECORD, 0);
    rec_main_header(&r, 16);
    b_u64(&r, right_lsn ? cut : cut + 8);
    b_u64(&r, 777);
    rec_end(&r);
    ww_add(w, e, &r); /* xl_prev: the record before the cut one */
    noop_record(&r, 100, 4);
    ww_add(w, e, &r);
    free(r.p);
    return cut;
}

Test(pgwal_crafted, overwritten_continuation)
{
    seed_once();
    struct walw w;
    struct expect want = {0}, got = {0};
    uint64_t cut = build_overwrite(&w, &want, true);
    char err[512];
    for (int mode = 0; mode <= 5; mode++) {
        cr_assert_eq(run_reader(&w, SEG1M, w.base, mode, &got, err, sizeof err), 0, "%s", err);
        same_records(&want, 0, &got, "over an overwritten continuation");
        expect_free(&got);
    }
    /* From inside the cut record: the overwrite record comes first. */
    uint64_t page = want.lsn[2] - want.lsn[2] % PAGE;
    cr_assert_eq(run_reader(&w, SEG1M, page, 5, &got, err, sizeof err), 0, "%s", err);
    same_records(&want, 2, &got, "from the overwriting page");
    expect_free(&got);

    /* The parsed record names the cut one. */
    struct pgwal_record rec;
    cr_assert_eq(pgwal_decode_record(want.bytes[2], want.len[2], want.lsn[2], &rec, err,
                                     sizeof err), 0, "%s", err);
    struct pgwal_xlog x;
    cr_assert_eq(pgwal_xlog_parse(&rec, &x, err, sizeof err), 0, "%s", err);
    cr_assert_eq(x.op, PGWAL_XLOG_OVERWRITE_CONTRECORD);
    cr_assert_eq(x.overwritten_lsn, cut);
    corpus_write("stream_overwrite", 0x02 | 0x08, w.base, w.out.p, w.out.len);
    expect_free(&want);
    free(w.out.p);

    /* An overwrite record naming another LSN is refused. */
    build_overwrite(&w, &want, false);
    cr_assert_eq(run_reader(&w, SEG1M, w.base, 4, &got, err, sizeof err), -1);
    cr_assert(strstr(err, "OVERWRITE_CONTRECORD") != NULL, "%s", err);
    expect_free(&got);
    expect_free(&want);
    free(w.out.p);
}

/* ---- refusals ------------------------------------------------------------------------- */

/* Runs the broken stream whole and in pieces: both must fail with a message
 * holding `needle`, and a further call must return the same message. */
static void refused(struct walw *w, uint32_t seg, uint64_t from, const char *needle)
{
    char err[512], again[512];
    struct expect got = {0};
    for (int mode = 2; mode <= 4; mode++) {
        int rc = run_reader(w, seg, from, mode, &got, err, sizeof err);
        expect_free(&got);
        cr_assert_eq(rc, -1, "expected a refusal holding \"%s\"", needle);
        cr_assert(strstr(err, needle) != NULL, "\"%s\" not in: %s", needle, err);
    }
    /* sticky */
    struct pgwal_reader r;
    if (pgwal_reader_init(&r, seg, from, 0, err, sizeof err) != 0)
        return;
    size_t off = (size_t)(from - w->base);
    struct pgwal_record rec;
    cr_assert_eq(pgwal_reader_feed(&r, from, w->out.p + off, w->out.len - off, err, sizeof err), 0);
    while (pgwal_reader_next(&r, &rec, err, sizeof err) == 1)
        ;
    cr_assert_eq(pgwal_reader_next(&r, &rec, again, sizeof again), -1);
    cr_assert_str_eq(err, again);
    cr_assert_eq(pgwal_reader_feed(&r, pgwal_reader_want(&r), w->out.p, 1, again, sizeof again), -1);
    cr_assert_str_eq(err, again);
    pgwal_reader_free(&r);
}

/* Three records over pages 0..3 of a segment's second page on; returns the
 * LSN of the 20 kB one. */
static uint64_t simple_stream(struct walw *w, uint64_t base)
{
    ww_init(w, base, SEG1M);
    struct bytes r = {0};
    noop_record(&r, 300, 1);
    ww_record(w, &r);
    noop_record(&r, 20000, 2);
    uint64_t big = ww_record(w, &r);
    noop_record(&r, 300, 3);
    ww_record(w, &r);
    free(r.p);
    return big;
}

Test(pgwal_crafted, refusals)
{
    seed_once();
    struct walw w;
    uint64_t base = 11ull * SEG1M + PAGE;
    char err[512];

    /* CRC: one payload byte changed */
    uint64_t big = simple_stream(&w, base);
    w.out.p[big - base + 100] ^= 1;
    refused(&w, SEG1M, base, "CRC-32C");
    free(w.out.p);

    /* page magic */
    simple_stream(&w, base);
    w.out.p[PAGE] ^= 0x40;
    refused(&w, SEG1M, base, "magic 0x");
    free(w.out.p);

    /* unknown page flags */
    simple_stream(&w, base);
    w.out.p[PAGE + 2] |= 0x20;
    refused(&w, SEG1M, base, "unknown info bits");
    free(w.out.p);

    /* xlp_pageaddr of another place */
    simple_stream(&w, base);
    w.out.p[PAGE + 10] ^= 0x10;
    refused(&w, SEG1M, base, "says it is at");
    free(w.out.p);

    /* continuation flag missing, and the wrong remaining length */
    simple_stream(&w, base);
    w.out.p[PAGE + 2] &= (uint8_t)~1;
    refused(&w, SEG1M, base, "no continuation flag");
    free(w.out.p);
    simple_stream(&w, base);
    w.out.p[PAGE + 16] ^= 4;
    refused(&w, SEG1M, base, "xlp_rem_len");
    free(w.out.p);

    /* xl_prev not the record before */
    simple_stream(&w, base);
    {
        struct walw w2;
        ww_init(&w2, base, SEG1M);
        struct bytes r = {0};
        noop_record(&r, 300, 1);
        ww_record(&w2, &r);
        noop_record(&r, 300, 2);
        ww_put_record(&w2, &r, base - 8, false);
        free(r.p);
        refused(&w2, SEG1M, base, "xl_prev");
        free(w2.out.p);
    }
    free(w.out.p);

    /* WAL of 4 kB pages, and of another segment size */
    ww_init(&w, 12ull * SEG1M, SEG1M);
    w.blcksz = 4096;
    {
        struct bytes r = {0};
        noop_record(&r, 300, 1);
        ww_record(&w, &r);
        free(r.p);
    }
    refused(&w, SEG1M, w.base, "only 8192-byte pages");
    free(w.out.p);
    ww_init(&w, 12ull * SEG1M, SEG1M);
    {
        struct bytes r = {0};
        noop_record(&r, 300, 1);
        ww_record(&w, &r);
        free(r.p);
    }
    refused(&w, 2 * SEG1M, w.base, "segments of 1048576 bytes");
    /* a segment's first page without its long header */
    w.out.p[2] &= (uint8_t)~2;
    refused(&w, SEG1M, w.base, "no long header");
    free(w.out.p);

    /* a record longer than PGWAL_MAX_RECORD, and one of length 0: refused
     * from its header, before its bytes */
    ww_init(&w, base, SEG1M);
    {
        struct bytes r = {0};
        noop_record(&r, 300, 1);
        ww_record(&w, &r);
        noop_record(&r, 300, 2);
        size_t at = w.out.len;
        ww_record(&w, &r);
        le_store_u32(w.out.p + at, PGWAL_MAX_RECORD + 8);
        refused(&w, SEG1M, base, "PGWAL_MAX_RECORD");
        le_store_u32(w.out.p + at, 0);
        refused(&w, SEG1M, base, "length 0");
        le_store_u32(w.out.p + at, 12);
        refused(&w, SEG1M, base, "less than a record header");
        free(r.p);
    }
    free(w.out.p);

    /* a record with an unknown resource manager */
    ww_init(&w, base, SEG1M);
    {
        struct bytes r = {0};
        noop_record(&r, 300, 1);
        r.p[17] = 77;
        ww_record(&w, &r);
        free(r.p);
    }
    refused(&w, SEG1M, base, "unknown resource manager id 77");
    free(w.out.p);

    /* reader set-up */
    struct pgwal_reader r;
    cr_assert_eq(pgwal_reader_init(&r, 3 * SEG1M, 0, 0, err, sizeof err), -1);
    cr_assert(strstr(err, "power of two") != NULL, "%s", err);
    cr_assert_eq(pgwal_reader_init(&r, SEG1M, base + 12, 0, err, sizeof err), -1);
    cr_assert(strstr(err, "aligned") != NULL, "%s", err);
    cr_assert_eq(pgwal_reader_init(&r, SEG1M, base + 16, 0, err, sizeof err), -1);
    cr_assert(strstr(err, "header") != NULL, "%s", err);
    cr_assert_eq(pgwal_reader_init(&r, SEG1M, 12ull * SEG1M + 32, 0, err, sizeof err), -1);
    pgwal_reader_free(&r);
    cr_assert_eq(pgwal_reader_init(&r, SEG1M, base, 0, err, sizeof err), 0);
    uint8_t junk[64] = {0};
    cr_assert_eq(pgwal_reader_feed(&r, base, junk, 64, err, sizeof err), 0);
    cr_assert_eq(pgwal_reader_feed(&r, base + 64, junk, 64, err, sizeof err), -1);
    cr_assert(strstr(err, "before the piece") != NULL, "%s", err);
    pgwal_reader_free(&r);
    /* another cluster's WAL */
    simple_stream(&w, 12ull * SEG1M);
    cr_assert_eq(pgwal_reader_init(&r, SEG1M, w.base, 42, err, sizeof err), 0);
    struct pgwal_record rec;
    cr_assert_eq(pgwal_reader_feed(&r, w.base, w.out.p, w.out.len, err, sizeof err), 0);
    cr_assert_eq(pgwal_reader_next(&r, &rec, err, sizeof err), -1);
    cr_assert(strstr(err, "another cluster") != NULL, "%s", err);
    pgwal_reader_free(&r);
    free(w.out.p);
}

Test(pgwal_crafted, continuation_where_a_record_starts)
{
    /* A record ends on its page's last byte; the next page claims to
     * continue one. */
    struct walw w;
    ww_init(&w, 13ull * SEG1M + PAGE, SEG1M);
    ww_fill_to(&w, PAGE, 1);
    ww_page_header(&w, 0x0001, 40);
    struct bytes r = {0};
    noop_record(&r, 40, 2);
    b_put(&w.out, r.p, 40);
    free(r.p);
    refused(&w, SEG1M, w.base, "continues a record");
    free(w.out.p);
}

/* ---- record decoding and page images --------------------------------------------------- */

/* A heap page: header, n line pointers, tuples at the end, zeros between. */
static void make_page(uint8_t page[PAGE], int n)
{
    memset(page, 0, PAGE);
    uint16_t upper = PAGE;
    for (int i = 0; i < n; i++) {
        uint16_t len = (uint16_t)(40 + i % 13);
        upper = (uint16_t)((upper - len) & ~7);
        for (int k = 0; k < len; k++)
            page[upper + k] = (uint8_t)(k < 23 ? k * 7 + i : (i * 13 + k) % 5);
        page[upper + 22] = 24; /* t_hoff */
        le_store_u32(page + 24 + 4 * i, (uint32_t)upper | 1u << 15 | (uint32_t)len << 17);
    }
    le_store_u64(page, 0x12345678ull);
    le_store_u16(page + 12, (uint16_t)(24 + 4 * n));
    le_store_u16(page + 14, upper);
    le_store_u16(page + 16, PAGE);
    le_store_u16(page + 18, PAGE | 4);
}

/* A greedy pglz compressor (pg_lzcompress.c's format: a control byte for 8
 * items, a literal byte or a 2- to 3-byte back reference). */
static size_t pglz_compress(const uint8_t *src, size_t n, uint8_t *dst)
{
    size_t sp = 0, dp = 0;
    while (sp < n) {
        size_t ctrl_at = dp++;
        uint8_t ctrl = 0;
        for (int bit = 0; bit < 8 && sp < n; bit++) {
            size_t best = 0, best_off = 0;
            size_t from = sp > 1024 ? sp - 1024 : 0;
            for (size_t cand = from; cand < sp; cand++) {
                size_t l = 0;
                while (l < 273 && sp + l < n && src[cand + l] == src[sp + l])
                    l++;
                if (l > best) {
                    best = l;
                    best_off = sp - cand;
                }
            }
            if (best >= 3) {
                ctrl |= (uint8_t)(1 << bit);
                if (best >= 18) {
                    dst[dp++] = (uint8_t)(((best_off >> 4) & 0xF0) | 0x0F);
                    dst[dp++] = (uint8_t)best_off;
                    dst[dp++] = (uint8_t)(best - 18);
                } else {
                    dst[dp++] = (uint8_t)(((best_off >> 4) & 0xF0) | (best - 3));
                    dst[dp++] = (uint8_t)best_off;
                }
                sp += best;
            } else {
                dst[dp++] = src[sp++];
            }
        }
        dst[ctrl_at] = ctrl;
    }
    return dp;
}

/* An XLOG FPI record with one image of page (method: 0 none, else the
 * BKPIMAGE_COMPRESS_* bit), with or without its hole. */
static void fpi_record(struct bytes *r, const uint8_t page[PAGE], unsigned method, bool hole)
{
    uint16_t lower = pgwal_u16_at(page, 6), upper = pgwal_u16_at(page, 7);
    uint16_t hole_off = hole ? lower : 0, hole_len = hole ? (uint16_t)(upper - lower) : 0;
    uint8_t raw[PAGE], img[2 * PAGE];
    memcpy(raw, page, hole_off);
    memcpy(raw + hole_off, page + hole_off + hole_len, PAGE - hole_off - hole_len);
    size_t rawlen = PAGE - hole_len, imglen = rawlen;
    if (method == PGWAL_BKPIMAGE_COMPRESS_PGLZ)
        imglen = pglz_compress(raw, rawlen, img);
    else if (method == PGWAL_BKPIMAGE_COMPRESS_LZ4)
        imglen = (size_t)LZ4_compress_default((const char *)raw, (char *)img, (int)rawlen,
                                              (int)sizeof img);
    else if (method == PGWAL_BKPIMAGE_COMPRESS_ZSTD)
        imglen = 100, memset(img, 0x5A, 100);
    else
        memcpy(img, raw, rawlen);
    cr_assert(imglen > 0 && imglen < PAGE + (method ? 0u : 1u), "image of %zu bytes", imglen);
    rec_begin(r, PGWAL_RM_XLOG, PGWAL_XLOG_FPI, 0);
    b_u8(r, 0);                                      /* block 0 */
    b_u8(r, PGWAL_FORK_MAIN | PGWAL_BKPBLOCK_HAS_IMAGE);
    b_u16(r, 0);                                     /* no data */
    b_u16(r, (uint16_t)imglen);
    b_u16(r, hole_off);
    b_u8(r, (uint8_t)(PGWAL_BKPIMAGE_APPLY | (hole ? PGWAL_BKPIMAGE_HAS_HOLE : 0) | method));
    if (method != 0 && hole)
        b_u16(r, hole_len);
    b_u32(r, 1663);
    b_u32(r, 5);
    b_u32(r, 16384);
    b_u32(r, 17);                                    /* block number */
    b_put(r, img, imglen);
    rec_end(r);
}

Test(pgwal_crafted, page_images)
{
    uint8_t page[PAGE], back[PAGE];
    char err[512];
    make_page(page, 37);
    struct bytes r = {0};
    static const unsigned methods[] = {0, PGWAL_BKPIMAGE_COMPRESS_PGLZ, PGWAL_BKPIMAGE_COMPRESS_LZ4};
    for (int m = 0; m < 3; m++) {
        for (int hole = 0; hole <= 1; hole++) {
            fpi_record(&r, page, methods[m], hole);
            struct pgwal_record rec;
            cr_assert_eq(pgwal_decode_record(r.p, r.len, 0x1000028, &rec, err, sizeof err), 0,
                         "%s", err);
            const struct pgwal_block *b = &rec.blocks[0];
            cr_assert(b->in_use && b->has_image && b->apply_image && !b->has_data);
            cr_assert_eq(b->blkno, 17);
            cr_assert_eq(b->node.rel, 16384);
            cr_assert_eq(rec.fpi_len, b->bimg_len);
            cr_assert_eq(pgwal_block_image(b, back, err, sizeof err), 0, "method %u: %s",
                         methods[m], err);
            cr_assert(memcmp(page, back, PAGE) == 0, "method %u hole %d: restored page differs",
                      methods[m], hole);
            const uint8_t *tup;
            uint16_t len;
            cr_assert_eq(pgwal_page_tuple(back, 5, &tup, &len, err, sizeof err), 0, "%s", err);
            cr_assert_eq(len, 44);
            cr_assert_eq(pgwal_page_tuple(back, 38, &tup, &len, err, sizeof err), -1);
            if (methods[m] != 0) {
                char name[64];
                snprintf(name, sizeof name, "record_fpi_%s%s", m == 1 ? "pglz" : "lz4",
                         hole ? "_hole" : "");
                corpus_write(name, 0x01, 0x1000028, r.p, r.len);
                /* a corrupt compressed image is refused, never overrun */
                struct pgwal_block bad = *b;
                uint8_t copy[PAGE];
                memcpy(copy, b->image, b->bimg_len);
                bad.image = copy;
                for (int k = 0; k < 40; k++) {
                    copy[(size_t)(k * 7919) % b->bimg_len] ^= (uint8_t)(k + 1);
                    (void)pgwal_block_image(&bad, back, err, sizeof err);
                }
                bad.bimg_len = (uint16_t)(b->bimg_len - 1);
                cr_assert_eq(pgwal_block_image(&bad, back, err, sizeof err), -1);
                cr_assert(strstr(err, "decompress") != NULL, "%s", err);
            }
        }
    }
    fpi_record(&r, page, PGWAL_BKPIMAGE_COMPRESS_ZSTD, true);
    struct pgwal_record rec;
    cr_assert_eq(pgwal_decode_record(r.p, r.len, 0x1000028, &rec, err, sizeof err), 0, "%s", err);
    cr_assert_eq(pgwal_block_image(&rec.blocks[0], back, err, sizeof err), -1);
    cr_assert(strstr(err, "zstd") != NULL, "%s", err);
    free(r.p);
}

/* A record with headers `h` (after the 24-byte header) and nothing else. */
static int decode_headers(const uint8_t *h, size_t n, char *err, size_t errlen)
{
    struct bytes r = {0};
    rec_begin(&r, PGWAL_RM_HEAP, 0, 9);
    b_put(&r, h, n);
    rec_end(&r);
    struct pgwal_record rec;
    int rc = pgwal_decode_record(r.p, r.len, 0x2000018, &rec, err, errlen);
    free(r.p);
    return rc;
}

Test(pgwal_crafted, record_headers)
{
    char err[512];
    struct bytes r = {0};
    /* two blocks, the second SAME_REL, data on both, origin, top-level xid,
     * long main data */
    rec_begin(&r, PGWAL_RM_HEAP, PGWAL_HEAP_INSERT, 900);
    b_u8(&r, 253);
    b_u16(&r, 7);
    b_u8(&r, 252);
    b_u32(&r, 800);
    b_u8(&r, 0);
    b_u8(&r, PGWAL_BKPBLOCK_HAS_DATA | PGWAL_BKPBLOCK_WILL_INIT);
    b_u16(&r, 6);
    b_u32(&r, 1663), b_u32(&r, 5), b_u32(&r, 99);
    b_u32(&r, 4);
    b_u8(&r, 2);
    b_u8(&r, PGWAL_BKPBLOCK_HAS_DATA | PGWAL_BKPBLOCK_SAME_REL | PGWAL_FORK_VM);
    b_u16(&r, 3);
    b_u32(&r, 0);
    rec_main_header(&r, 300);
    b_put(&r, "abcdef", 6);
    b_put(&r, "xyz", 3);
    for (int i = 0; i < 300; i++)
        b_u8(&r, (uint8_t)i);
    rec_end(&r);
    struct pgwal_record rec;
    cr_assert_eq(pgwal_decode_record(r.p, r.len, 0x3000028, &rec, err, sizeof err), 0, "%s", err);
    cr_assert(rec.has_origin && rec.origin == 7);
    cr_assert_eq(rec.toplevel_xid, 800);
    cr_assert_eq(rec.xid, 900);
    cr_assert_eq(rec.max_block_id, 2);
    cr_assert(rec.blocks[0].in_use && !rec.blocks[1].in_use && rec.blocks[2].in_use);
    cr_assert(rec.blocks[0].will_init);
    cr_assert_eq(rec.blocks[2].node.rel, 99);
    cr_assert_eq(rec.blocks[2].fork, PGWAL_FORK_VM);
    cr_assert(memcmp(rec.blocks[0].data, "abcdef", 6) == 0);
    cr_assert(memcmp(rec.blocks[2].data, "xyz", 3) == 0);
    cr_assert_eq(rec.main_data_len, 300);
    cr_assert_eq(rec.main_data[299], (uint8_t)299);
    /* Cut short (xl_tot_len set to match): never a read past the cut, and
     * refused unless what is left happens to be a whole record (the
     * headers before the cut, their data after it); refused outright
     * inside the fixed header. */
    for (size_t n = 0; n < r.len; n++) {
        uint8_t *copy = malloc(n > 0 ? n : 1);
        memcpy(copy, r.p, n);
        if (n >= 4)
            le_store_u32(copy, (uint32_t)n);
        err[0] = '\0';
        int rc = pgwal_decode_record(n > 0 ? copy : NULL, n, 0x3000028, &rec, err, sizeof err);
        cr_assert(rc == 0 || (rc == -1 && err[0] != '\0'), "%zu bytes of %zu", n, r.len);
        cr_assert(n >= 24 || rc == -1);
        if (n == 24 || n == 27 || n == 32 || n == r.len - 1)
            cr_assert_eq(rc, n == r.len - 1 ? -1 : 0, "%zu bytes: %s", n, err);
        free(copy);
    }
    le_store_u32(r.p, (uint32_t)r.len + 1);
    b_u8(&r, 0);
    cr_assert_eq(pgwal_decode_record(r.p, r.len, 0x3000028, &rec, err, sizeof err), -1);
    cr_assert(strstr(err, "announce") != NULL, "%s", err);
    corpus_write("record_blocks", 0x01, 0x3000028, r.p, r.len - 1);
    free(r.p);

    /* hostile headers */
    const uint8_t same_rel_first[] = {0, PGWAL_BKPBLOCK_SAME_REL, 0, 0, 1, 0, 0, 0};
    cr_assert_eq(decode_headers(same_rel_first, sizeof same_rel_first, err, sizeof err), -1);
    cr_assert(strstr(err, "SAME_REL") != NULL, "%s", err);
    /* block 3 (fork_flags 0, no data, a relfilenode, block number), then 1 */
    const uint8_t order[] = {3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 9, 0, 0, 0,
                             1, 0, 0, 0};
    cr_assert_eq(decode_headers(order, sizeof order, err, sizeof err), -1);
    cr_assert(strstr(err, "must increase") != NULL, "%s", err);
    const uint8_t nodata[] = {0, PGWAL_BKPBLOCK_HAS_DATA, 0, 0, 1, 0, 0, 0,
                              2, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0};
    cr_assert_eq(decode_headers(nodata, sizeof nodata, err, sizeof err), -1);
    cr_assert(strstr(err, "no data") != NULL, "%s", err);
    const uint8_t badid[] = {33, 0, 0, 0};
    cr_assert_eq(decode_headers(badid, sizeof badid, err, sizeof err), -1);
    cr_assert(strstr(err, "invalid block id 33") != NULL, "%s", err);
    /* an image whose hole flag disagrees with its length */
    const uint8_t hole[] = {0, PGWAL_BKPBLOCK_HAS_IMAGE, 0, 0, 0x00, 0x20, 0, 0,
                            PGWAL_BKPIMAGE_HAS_HOLE, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0};
    cr_assert_eq(decode_headers(hole, sizeof hole, err, sizeof err), -1);
    cr_assert(strstr(err, "HAS_HOLE") != NULL, "%s", err);
}

/* ---- parsers ----------------------------------------------------------------------------- */

static void decoded(struct bytes *r, struct pgwal_record *rec)
{
    char err[512];
    rec_end(r);
    cr_assert_eq(pgwal_decode_record(r->p, r->len, 0x4000028, rec, err, sizeof err), 0, "%s", err);
}

Test(pgwal_crafted, parsers)
{
    char err[512];
    struct bytes r = {0};
    struct pgwal_record rec;

    /* UPDATE with prefix and suffix from the old tuple, the old key logged,
     * the old tuple on another page (block 1) */
    rec_begin(&r, PGWAL_RM_HEAP, PGWAL_HEAP_UPDATE, 700);
    uint8_t new_tuple[5 + 9] = {3, 0, 0x02, 0x08, 24, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    b_u8(&r, 0);
    b_u8(&r, PGWAL_BKPBLOCK_HAS_DATA);
    b_u16(&r, 4 + sizeof new_tuple);
    b_u32(&r, 1663), b_u32(&r, 5), b_u32(&r, 16384);
    b_u32(&r, 10);
    b_u8(&r, 1);
    b_u8(&r, PGWAL_BKPBLOCK_SAME_REL);
    b_u16(&r, 0);
    b_u32(&r, 3);
    rec_main_header(&r, 14 + 5 + 4);
    b_u16(&r, 11), b_u16(&r, 22);
    b_put(&r, new_tuple, sizeof new_tuple);
    b_u32(&r, 700), b_u16(&r, 4), b_u8(&r, PGWAL_XLHL_KEYS_UPDATED);
    b_u8(&r, PGWAL_XLH_UPDATE_PREFIX_FROM_OLD | PGWAL_XLH_UPDATE_SUFFIX_FROM_OLD |
                 PGWAL_XLH_UPDATE_CONTAINS_OLD_KEY);
    b_u32(&r, 0), b_u16(&r, 9);
    b_u16(&r, 1), b_u16(&r, 0x0802), b_u8(&r, 24), b_u32(&r, 0xABCDEF01);
    decoded(&r, &rec);
    struct pgwal_heap h;
    cr_assert_eq(pgwal_heap_parse(&rec, &h, err, sizeof err), 0, "%s", err);
    cr_assert_eq(h.op, PGWAL_HEAP_UPDATE);
    cr_assert_eq(h.offnum, 4);
    cr_assert_eq(h.new_offnum, 9);
    cr_assert_eq(h.old_block, 1);
    cr_assert_eq(h.prefix_len, 11);
    cr_assert_eq(h.suffix_len, 22);
    cr_assert(h.tuple.present && h.tuple.len == 9 && h.tuple.hoff == 24);
    cr_assert(h.old_tuple.present && h.old_tuple.len == 4);
    cr_assert_eq(le_load_u32(h.old_tuple.data), 0xABCDEF01u);
    corpus_write("record_update_prefix", 0x01, 0x4000028, r.p, r.len);
    /* main data shorter than xl_heap_update, or block data shorter than its
     * lengths and header: refused */
    struct pgwal_record rec2 = rec;
    rec2.main_data_len = 13;
    cr_assert_eq(pgwal_heap_parse(&rec2, &h, err, sizeof err), -1);
    rec2 = rec;
    rec2.blocks[0].data_len = 8;
    cr_assert_eq(pgwal_heap_parse(&rec2, &h, err, sizeof err), -1);
    cr_assert(strstr(err, "shorter than its 5-byte header") != NULL, "%s", err);

    /* COMMIT PREPARED with every part */
    rec_begin(&r, PGWAL_RM_XACT, PGWAL_XACT_COMMIT_PREPARED | PGWAL_XACT_HAS_INFO, 0);
    struct bytes m = {0};
    b_u64(&m, 123456789);
    uint32_t xinfo = PGWAL_XACT_XINFO_HAS_DBINFO | PGWAL_XACT_XINFO_HAS_SUBXACTS |
                     PGWAL_XACT_XINFO_HAS_RELFILENODES | PGWAL_XACT_XINFO_HAS_DROPPED_STATS |
                     PGWAL_XACT_XINFO_HAS_INVALS | PGWAL_XACT_XINFO_HAS_TWOPHASE |
                     PGWAL_XACT_XINFO_HAS_GID | PGWAL_XACT_XINFO_HAS_ORIGIN;
    b_u32(&m, xinfo);
    b_u32(&m, 5), b_u32(&m, 1663);
    b_u32(&m, 2), b_u32(&m, 801), b_u32(&m, 802);
    b_u32(&m, 1), b_u32(&m, 1663), b_u32(&m, 5), b_u32(&m, 16390);
    b_u32(&m, 1), b_u32(&m, 2), b_u32(&m, 5), b_u32(&m, 16390);
    b_u32(&m, 1);
    b_u8(&m, 0xFE), b_put(&m, NULL, 7), b_u32(&m, 1259), b_put(&m, NULL, 4);
    b_u32(&m, 800);
    b_put(&m, "gid-1", 6);
    b_u64(&m, 0x5000000), b_u64(&m, 42);
    rec_main_header(&r, (uint32_t)m.len);
    b_put(&r, m.p, m.len);
    decoded(&r, &rec);
    struct pgwal_xact x;
    cr_assert_eq(pgwal_xact_parse(&rec, &x, err, sizeof err), 0, "%s", err);
    cr_assert_eq(x.op, PGWAL_XACT_COMMIT_PREPARED);
    cr_assert_eq(x.xid, 800);
    cr_assert_eq(x.time, 123456789);
    cr_assert_eq(x.db_id, 5);
    cr_assert_eq(x.nsubxacts, 2);
    cr_assert_eq(pgwal_u32_at(x.subxacts, 1), 802);
    cr_assert_eq(x.nrels, 1);
    cr_assert_eq(pgwal_relfilenode_at(x.rels, 0).rel, 16390);
    cr_assert_eq(x.nstats, 1);
    cr_assert_eq(x.nmsgs, 1);
    cr_assert_eq((int8_t)x.msgs[0], -2);
    cr_assert_str_eq(x.gid, "gid-1");
    cr_assert(x.has_origin && x.origin_lsn == 0x5000000 && x.origin_time == 42);
    corpus_write("record_commit_prepared", 0x01, 0x4000028, r.p, r.len);
    /* the gid without its NUL, and a byte too many, are refused */
    for (size_t cut = 1; cut < m.len; cut++) {
        rec_begin(&r, PGWAL_RM_XACT, PGWAL_XACT_COMMIT_PREPARED | PGWAL_XACT_HAS_INFO, 0);
        rec_main_header(&r, (uint32_t)(m.len - cut));
        b_put(&r, m.p, m.len - cut);
        decoded(&r, &rec);
        cr_assert_eq(pgwal_xact_parse(&rec, &x, err, sizeof err), -1, "cut %zu", cut);
    }
    b_u8(&m, 0);
    rec_begin(&r, PGWAL_RM_XACT, PGWAL_XACT_COMMIT_PREPARED | PGWAL_XACT_HAS_INFO, 0);
    rec_main_header(&r, (uint32_t)m.len);
    b_put(&r, m.p, m.len);
    decoded(&r, &rec);
    cr_assert_eq(pgwal_xact_parse(&rec, &x, err, sizeof err), -1);
    cr_assert(strstr(err, "left over") != NULL, "%s", err);
    free(m.p);

    /* MULTI_INSERT onto an existing page: offsets, tuples at even offsets */
    rec_begin(&r, PGWAL_RM_HEAP2, PGWAL_HEAP2_MULTI_INSERT, 701);
    struct bytes d = {0};
    for (int i = 0; i < 3; i++) {
        if (d.len % 2)
            b_u8(&d, 0);
        uint16_t len = (uint16_t)(3 + i * 2); /* odd and even lengths */
        b_u16(&d, len), b_u16(&d, 2), b_u16(&d, 0x0800), b_u8(&d, 24);
        for (int k = 0; k < len; k++)
            b_u8(&d, (uint8_t)(i * 10 + k));
    }
    b_u8(&r, 0);
    b_u8(&r, PGWAL_BKPBLOCK_HAS_DATA);
    b_u16(&r, (uint16_t)d.len);
    b_u32(&r, 1663), b_u32(&r, 5), b_u32(&r, 16384);
    b_u32(&r, 2);
    rec_main_header(&r, 4 + 6);
    b_put(&r, d.p, d.len);
    b_u8(&r, PGWAL_XLH_INSERT_CONTAINS_NEW_TUPLE), b_u8(&r, 0), b_u16(&r, 3);
    b_u16(&r, 7), b_u16(&r, 8), b_u16(&r, 9);
    decoded(&r, &rec);
    struct pgwal_heap2 h2;
    cr_assert_eq(pgwal_heap2_parse(&rec, &h2, err, sizeof err), 0, "%s", err);
    uint32_t cursor = 0;
    for (uint16_t i = 0; i < 3; i++) {
        uint16_t off;
        struct pgwal_tuple t;
        cr_assert(pgwal_multi_insert_tuple(&h2, i, &cursor, &off, &t));
        cr_assert_eq(off, 7 + i);
        cr_assert_eq(t.len, 3u + i * 2u);
        cr_assert_eq(t.data[t.len - 1], (uint8_t)(i * 10 + t.len - 1));
    }
    corpus_write("record_multi_insert", 0x01, 0x4000028, r.p, r.len);
    free(d.p);

    /* PRUNE: 1 redirect, 2 dead, 3 unused */
    rec_begin(&r, PGWAL_RM_HEAP2, PGWAL_HEAP2_PRUNE, 0);
    b_u8(&r, 0);
    b_u8(&r, PGWAL_BKPBLOCK_HAS_DATA);
    b_u16(&r, 14);
    b_u32(&r, 1663), b_u32(&r, 5), b_u32(&r, 16384);
    b_u32(&r, 0);
    rec_main_header(&r, 8);
    for (uint16_t o = 1; o <= 7; o++)
        b_u16(&r, o);
    b_u32(&r, 650), b_u16(&r, 1), b_u16(&r, 2);
    decoded(&r, &rec);
    cr_assert_eq(pgwal_heap2_parse(&rec, &h2, err, sizeof err), 0, "%s", err);
    cr_assert(h2.offsets_present && h2.nredirected == 1 && h2.ndead == 2 && h2.nunused == 3);
    cr_assert_eq(pgwal_u16_at(h2.dead, 1), 4);
    cr_assert_eq(pgwal_u16_at(h2.unused, 2), 7);

    /* RUNNING_XACTS with subtransactions */
    rec_begin(&r, PGWAL_RM_STANDBY, PGWAL_STANDBY_RUNNING_XACTS, 0);
    rec_main_header(&r, 24 + 12);
    b_u32(&r, 2), b_u32(&r, 1), b_u8(&r, 0), b_put(&r, NULL, 3);
    b_u32(&r, 900), b_u32(&r, 850), b_u32(&r, 899);
    b_u32(&r, 850), b_u32(&r, 860), b_u32(&r, 861);
    decoded(&r, &rec);
    struct pgwal_standby sb;
    cr_assert_eq(pgwal_standby_parse(&rec, &sb, err, sizeof err), 0, "%s", err);
    cr_assert(sb.xcnt == 2 && sb.subxcnt == 1 && sb.next_xid == 900);
    cr_assert_eq(pgwal_u32_at(sb.xids, 2), 861);

    /* storage TRUNCATE */
    rec_begin(&r, PGWAL_RM_SMGR, PGWAL_SMGR_TRUNCATE, 0);
    rec_main_header(&r, 20);
    b_u32(&r, 3), b_u32(&r, 1663), b_u32(&r, 5), b_u32(&r, 16384), b_u32(&r, 7);
    decoded(&r, &rec);
    struct pgwal_smgr sm;
    cr_assert_eq(pgwal_smgr_parse(&rec, &sm, err, sizeof err), 0, "%s", err);
    cr_assert(sm.blkno == 3 && sm.node.rel == 16384 && sm.flags == 7);

    /* each parser refuses the others' records */
    cr_assert_eq(pgwal_heap_parse(&rec, &h, err, sizeof err), -1);
    cr_assert_eq(pgwal_heap2_parse(&rec, &h2, err, sizeof err), -1);
    cr_assert_eq(pgwal_xact_parse(&rec, &x, err, sizeof err), -1);
    struct pgwal_xlog xl;
    cr_assert_eq(pgwal_xlog_parse(&rec, &xl, err, sizeof err), -1);
    cr_assert_eq(pgwal_standby_parse(&rec, &sb, err, sizeof err), -1);
    free(r.p);
}

/* ---- the oracle: the cluster's WAL against pg_waldump ------------------------------------- */

static struct {
    PGconn *admin;          /* holds the temporary slot */
    char db[64];
    bool fpw_set;
    bool prepared;          /* a prepared transaction may be left */
} oracle;

static PGresult *q(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static PGresult *q(PGconn *c, const char *fmt, ...)
{
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(c, sql);
    cr_assert(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK,
              "%s: %s", sql, PQerrorMessage(c));
    return r;
}

static void sql_ok(PGconn *c, const char *sql)
{
    PQclear(q(c, "%s", sql));
}

/* The first row's first value. */
static void q1(PGconn *c, char *out, size_t cap, const char *sql)
{
    PGresult *r = q(c, "%s", sql);
    cr_assert(PQntuples(r) > 0, "%s: no rows", sql);
    snprintf(out, cap, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

static uint64_t q_lsn(PGconn *c, const char *sql)
{
    char t[64];
    unsigned hi, lo;
    q1(c, t, sizeof t, sql);
    cr_assert_eq(sscanf(t, "%X/%X", &hi, &lo), 2, "%s: %s", sql, t);
    return (uint64_t)hi << 32 | lo;
}

static void oracle_cleanup(void)
{
    if (oracle.admin == NULL)
        return;
    PGconn *a = oracle.admin;
    if (oracle.prepared) {
        PQclear(PQexec(a, "SELECT 1"));
        PGresult *r = PQexec(a, "SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'pgwal_%'");
        for (int i = 0; PQresultStatus(r) == PGRES_TUPLES_OK && i < PQntuples(r); i++) {
            char sql[200];
            snprintf(sql, sizeof sql, "ROLLBACK PREPARED '%s'", PQgetvalue(r, i, 0));
            PQclear(PQexec(a, sql));
        }
        PQclear(r);
    }
    if (oracle.fpw_set) {
        PQclear(PQexec(a, "ALTER SYSTEM RESET full_page_writes"));
        PQclear(PQexec(a, "SELECT pg_reload_conf()"));
    }
    if (oracle.db[0] != '\0') {
        char sql[200];
        snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", oracle.db);
        PQclear(PQexec(a, sql));
    }
    PQfinish(a); /* drops the temporary slot */
    oracle.admin = NULL;
}

/* A reader over the files: the next record, 1, or 0 at the end. */
struct feed {
    struct pgwal_reader r;
    struct walfiles src;
    int mode;
};

static int feed_next(struct feed *f, struct pgwal_record *rec)
{
    char err[512];
    for (;;) {
        int rc = pgwal_reader_next(&f->r, rec, err, sizeof err);
        cr_assert_geq(rc, 0, "%s", err);
        if (rc == 1)
            return 1;
        uint64_t lsn;
        size_t n = walfiles_read(&f->src, piece(f->mode, 1u << 20), &lsn);
        if (n == 0)
            return 0;
        cr_assert_eq(pgwal_reader_feed(&f->r, lsn, f->src.buf, n, err, sizeof err), 0, "%s", err);
    }
}

static const char *fork_name(int fork)
{
    static const char *const names[] = {"main", "fsm", "vm", "init"};
    return names[fork & 3];
}

static void relpath(struct str *s, struct pgwal_relfilenode n, int fork)
{
    static const char *const suffix[] = {"", "_fsm", "_vm", "_init"};
    if (n.spc == 1664)
        s_printf(s, "global/%u%s", n.rel, suffix[fork & 3]);
    else if (n.spc == 1663)
        s_printf(s, "base/%u/%u%s", n.db, n.rel, suffix[fork & 3]);
    else
        s_printf(s, "pg_tblspc/%u/PG_15_202209061/%u/%u%s", n.spc, n.db, n.rel, suffix[fork & 3]);
}

/* pg_waldump's timestamptz_to_str under TZ=UTC. */
static void ts_text(struct str *s, int64_t t)
{
    time_t secs = (time_t)(t / 1000000 + 946684800);
    struct tm tm;
    char buf[64];
    gmtime_r(&secs, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    s_printf(s, "%s.%06d UTC", buf, (int)(t % 1000000));
}

static void infobits(struct str *s, uint8_t b)
{
    if (b & PGWAL_XLHL_XMAX_IS_MULTI)
        s_printf(s, "IS_MULTI ");
    if (b & PGWAL_XLHL_XMAX_LOCK_ONLY)
        s_printf(s, "LOCK_ONLY ");
    if (b & PGWAL_XLHL_XMAX_EXCL_LOCK)
        s_printf(s, "EXCL_LOCK ");
    if (b & PGWAL_XLHL_XMAX_KEYSHR_LOCK)
        s_printf(s, "KEYSHR_LOCK ");
    if (b & PGWAL_XLHL_KEYS_UPDATED)
        s_printf(s, "KEYS_UPDATED ");
}

static void invals(struct str *s, uint32_t n, const uint8_t *msgs, uint32_t db, uint32_t ts,
                   bool init_file)
{
    if (n == 0)
        return;
    if (init_file)
        s_printf(s, "; relcache init file inval dbid %u tsid %u", db, ts);
    s_printf(s, "; inval msgs:");
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *m = msgs + (size_t)i * PGWAL_INVAL_MSG_SIZE;
        int8_t id = (int8_t)m[0];
        if (id >= 0)
            s_printf(s, " catcache %d", id);
        else if (id == -1)
            s_printf(s, " catalog %u", le_load_u32(m + 8));
        else if (id == -2)
            s_printf(s, " relcache %u", le_load_u32(m + 8));
        else if (id == -3)
            s_printf(s, " smgr");
        else if (id == -4)
            s_printf(s, " relmap db %u", le_load_u32(m + 4));
        else if (id == -5)
            s_printf(s, " snapshot %u", le_load_u32(m + 8));
        else
            s_printf(s, " unrecognized id %d", id);
    }
}

static void rels(struct str *s, const char *label, uint32_t n, const uint8_t *arr)
{
    if (n == 0)
        return;
    s_printf(s, "; %s:", label);
    for (uint32_t i = 0; i < n; i++) {
        s_printf(s, " ");
        relpath(s, pgwal_relfilenode_at(arr, i), 0);
    }
}

static void subxacts(struct str *s, uint32_t n, const uint8_t *arr)
{
    if (n == 0)
        return;
    s_printf(s, "; subxacts:");
    for (uint32_t i = 0; i < n; i++)
        s_printf(s, " %u", pgwal_u32_at(arr, i));
}

static void stats(struct str *s, const char *label, uint32_t n, const uint8_t *arr)
{
    if (n == 0)
        return;
    s_printf(s, "; %sdropped stats:", label);
    for (uint32_t i = 0; i < n; i++)
        s_printf(s, " %d/%u/%u", (int)pgwal_u32_at(arr, 3 * i), pgwal_u32_at(arr, 3 * i + 1),
                 pgwal_u32_at(arr, 3 * i + 2));
}

/* The description pg_waldump prints after the record's name, rebuilt from
 * the parsed record; false when pgwal.c does not parse its kind. */
static bool describe(const struct pgwal_record *rec, struct str *s)
{
    char err[512];
    s_clear(s);
    switch (rec->rmid) {
    case PGWAL_RM_HEAP: {
        struct pgwal_heap h;
        cr_assert_eq(pgwal_heap_parse(rec, &h, err, sizeof err), 0, "%s", err);
        switch (h.op) {
        case PGWAL_HEAP_INSERT:
            s_printf(s, "off %u flags 0x%02X", h.offnum, h.flags);
            break;
        case PGWAL_HEAP_DELETE:
            s_printf(s, "off %u flags 0x%02X ", h.offnum, h.flags);
            infobits(s, h.infobits);
            break;
        case PGWAL_HEAP_UPDATE:
        case PGWAL_HEAP_HOT_UPDATE:
            s_printf(s, "off %u xmax %u flags 0x%02X ", h.offnum, h.xmax, h.flags);
            infobits(s, h.infobits);
            s_printf(s, "; new off %u xmax %u", h.new_offnum, h.new_xmax);
            break;
        case PGWAL_HEAP_TRUNCATE:
            if (h.flags & PGWAL_XLH_TRUNCATE_CASCADE)
                s_printf(s, "cascade ");
            if (h.flags & PGWAL_XLH_TRUNCATE_RESTART_SEQS)
                s_printf(s, "restart_seqs ");
            s_printf(s, "nrelids %u relids", h.nrelids);
            for (uint32_t i = 0; i < h.nrelids; i++)
                s_printf(s, " %u", pgwal_u32_at(h.relids, i));
            break;
        case PGWAL_HEAP_CONFIRM:
        case PGWAL_HEAP_INPLACE:
            s_printf(s, "off %u", h.offnum);
            break;
        case PGWAL_HEAP_LOCK:
            s_printf(s, "off %u: xid %u: flags 0x%02X ", h.offnum, h.xmax, h.flags);
            infobits(s, h.infobits);
            break;
        }
        return true;
    }
    case PGWAL_RM_HEAP2: {
        struct pgwal_heap2 h;
        cr_assert_eq(pgwal_heap2_parse(rec, &h, err, sizeof err), 0, "%s", err);
        switch (h.op) {
        case PGWAL_HEAP2_PRUNE:
            s_printf(s, "latestRemovedXid %u nredirected %u ndead %u", h.xid, h.nredirected,
                     h.ndead);
            break;
        case PGWAL_HEAP2_VACUUM:
            s_printf(s, "nunused %u", h.nunused);
            break;
        case PGWAL_HEAP2_FREEZE_PAGE:
            s_printf(s, "cutoff xid %u ntuples %u", h.xid, h.ntuples);
            break;
        case PGWAL_HEAP2_VISIBLE:
            s_printf(s, "cutoff xid %u flags 0x%02X", h.xid, h.flags);
            break;
        case PGWAL_HEAP2_MULTI_INSERT:
            s_printf(s, "%d tuples flags 0x%02X", h.ntuples, h.flags);
            break;
        case PGWAL_HEAP2_LOCK_UPDATED:
            s_printf(s, "off %u: xmax %u: flags 0x%02X ", h.offnum, h.xid, h.flags);
            infobits(s, h.infobits);
            break;
        case PGWAL_HEAP2_NEW_CID:
            s_printf(s, "rel %u/%u/%u; tid %u/%u; cmin: %u, cmax: %u, combo: %u",
                     h.target_node.spc, h.target_node.db, h.target_node.rel, h.target_block,
                     h.target_offnum, h.cmin, h.cmax, h.combocid);
            break;
        }
        return true;
    }
    case PGWAL_RM_XACT: {
        struct pgwal_xact a;
        cr_assert_eq(pgwal_xact_parse(rec, &a, err, sizeof err), 0, "%s", err);
        switch (a.op) {
        case PGWAL_XACT_COMMIT:
        case PGWAL_XACT_COMMIT_PREPARED:
            if (a.xinfo & PGWAL_XACT_XINFO_HAS_TWOPHASE)
                s_printf(s, "%u: ", a.twophase_xid);
            ts_text(s, a.time);
            rels(s, "rels", a.nrels, a.rels);
            subxacts(s, a.nsubxacts, a.subxacts);
            stats(s, "", a.nstats, a.stats);
            invals(s, a.nmsgs, a.msgs, a.db_id, a.ts_id,
                   (a.xinfo & PGWAL_XACT_COMPLETION_UPDATE_RELCACHE_FILE) != 0);
            if (a.xinfo & PGWAL_XACT_COMPLETION_APPLY_FEEDBACK)
                s_printf(s, "; apply_feedback");
            if (a.xinfo & PGWAL_XACT_COMPLETION_FORCE_SYNC_COMMIT)
                s_printf(s, "; sync");
            if (a.has_origin) {
                s_printf(s, "; origin: node %u, lsn %X/%X, at ", rec->origin,
                         (unsigned)(a.origin_lsn >> 32), (unsigned)a.origin_lsn);
                ts_text(s, a.origin_time);
            }
            break;
        case PGWAL_XACT_ABORT:
        case PGWAL_XACT_ABORT_PREPARED:
            if (a.xinfo & PGWAL_XACT_XINFO_HAS_TWOPHASE)
                s_printf(s, "%u: ", a.twophase_xid);
            ts_text(s, a.time);
            rels(s, "rels", a.nrels, a.rels);
            subxacts(s, a.nsubxacts, a.subxacts);
            if (a.has_origin) {
                s_printf(s, "; origin: node %u, lsn %X/%X, at ", rec->origin,
                         (unsigned)(a.origin_lsn >> 32), (unsigned)a.origin_lsn);
                ts_text(s, a.origin_time);
            }
            stats(s, "", a.nstats, a.stats);
            break;
        case PGWAL_XACT_PREPARE:
            s_printf(s, "gid %s: ", a.gid);
            ts_text(s, a.time);
            rels(s, "rels(commit)", a.nrels, a.rels);
            rels(s, "rels(abort)", a.nabortrels, a.abortrels);
            subxacts(s, a.nsubxacts, a.subxacts);
            invals(s, a.nmsgs, a.msgs, a.db_id, 0, a.initfileinval);
            break;
        case PGWAL_XACT_ASSIGNMENT:
            s_printf(s, "xtop %u: subxacts:", a.xtop);
            for (uint32_t i = 0; i < a.nsubxacts; i++)
                s_printf(s, " %u", pgwal_u32_at(a.subxacts, i));
            break;
        case PGWAL_XACT_INVALIDATIONS:
            invals(s, a.nmsgs, a.msgs, 0, 0, false);
            break;
        }
        return true;
    }
    case PGWAL_RM_XLOG: {
        struct pgwal_xlog xl;
        cr_assert_eq(pgwal_xlog_parse(rec, &xl, err, sizeof err), 0, "%s", err);
        switch (xl.op) {
        case PGWAL_XLOG_CHECKPOINT_SHUTDOWN:
        case PGWAL_XLOG_CHECKPOINT_ONLINE: {
            const struct pgwal_checkpoint *k = &xl.checkpoint;
            s_printf(s,
                     "redo %X/%X; tli %u; prev tli %u; fpw %s; xid %u:%u; oid %u; multi %u; "
                     "offset %u; oldest xid %u in DB %u; oldest multi %u in DB %u; "
                     "oldest/newest commit timestamp xid: %u/%u; oldest running xid %u; %s",
                     (unsigned)(k->redo >> 32), (unsigned)k->redo, k->tli, k->prev_tli,
                     k->full_page_writes ? "true" : "false", (unsigned)(k->next_xid >> 32),
                     (unsigned)k->next_xid, k->next_oid, k->next_multi, k->next_multi_offset,
                     k->oldest_xid, k->oldest_xid_db, k->oldest_multi, k->oldest_multi_db,
                     k->oldest_commit_ts_xid, k->newest_commit_ts_xid, k->oldest_active_xid,
                     xl.op == PGWAL_XLOG_CHECKPOINT_SHUTDOWN ? "shutdown" : "online");
            return true;
        }
        case PGWAL_XLOG_NEXTOID:
            s_printf(s, "%u", xl.next_oid);
            return true;
        case PGWAL_XLOG_SWITCH:
        case PGWAL_XLOG_NOOP:
        case PGWAL_XLOG_FPI:
        case PGWAL_XLOG_FPI_FOR_HINT:
            return true;
        default:
            return false;
        }
    }
    case PGWAL_RM_SMGR: {
        struct pgwal_smgr sm;
        cr_assert_eq(pgwal_smgr_parse(rec, &sm, err, sizeof err), 0, "%s", err);
        if (sm.op == PGWAL_SMGR_CREATE) {
            relpath(s, sm.node, sm.fork);
        } else {
            relpath(s, sm.node, 0);
            s_printf(s, " to %u blocks flags %d", sm.blkno, (int)sm.flags);
        }
        return true;
    }
    case PGWAL_RM_STANDBY: {
        struct pgwal_standby sb;
        cr_assert_eq(pgwal_standby_parse(rec, &sb, err, sizeof err), 0, "%s", err);
        switch (sb.op) {
        case PGWAL_STANDBY_LOCK:
            for (uint32_t i = 0; i < sb.nlocks; i++)
                s_printf(s, "xid %u db %u rel %u ", pgwal_u32_at(sb.locks, 3 * i),
                         pgwal_u32_at(sb.locks, 3 * i + 1), pgwal_u32_at(sb.locks, 3 * i + 2));
            break;
        case PGWAL_STANDBY_RUNNING_XACTS:
            s_printf(s, "nextXid %u latestCompletedXid %u oldestRunningXid %u", sb.next_xid,
                     sb.latest_completed_xid, sb.oldest_running_xid);
            if (sb.xcnt > 0) {
                s_printf(s, "; %u xacts:", sb.xcnt);
                for (uint32_t i = 0; i < sb.xcnt; i++)
                    s_printf(s, " %u", pgwal_u32_at(sb.xids, i));
            }
            /* PostgreSQL 15's pg_waldump names the overflow and does not
             * list the subtransactions the record carries. */
            if (sb.subxid_overflow)
                s_printf(s, "; subxid ovf");
            break;
        case PGWAL_STANDBY_INVALIDATIONS:
            invals(s, sb.nmsgs, sb.msgs, sb.db_id, sb.ts_id, sb.relcache_init_file_inval);
            break;
        }
        return true;
    }
    default:
        return false;
    }
}

/* One record of pg_waldump --bkp-details. */
struct wd_block {
    int id;
    unsigned spc, db, rel, blk;
    char fork[8];
    bool image, apply;
    unsigned hole_off, hole_len;
    bool compressed;
    unsigned saved;
    char method[8];
};

struct wd_rec {
    char rmgr[32];
    unsigned rec_len, tot_len, xid;
    uint64_t lsn, prev;
    char *desc;
    int nblocks;
    struct wd_block blocks[PGWAL_MAX_BLOCKS];
};

/* What the oracle run saw, for the checks after it. */
struct seen {
    int records, described;
    int images[3];          /* restored: none, pglz, lz4 */
    int table_images;       /* of the test table's heap pages */
    int tuples_from_images; /* logged tuples equal to the image's */
    int multi_insert_tuples;
    int heap_ops[8], heap2_ops[8], xact_ops[8];
    bool truncate_commit_drops_old;
    uint32_t truncate_xid;
    bool checkpoint_seen, checkpoint_fpw, switch_last;
    int running_subxacts, running_overflowed; /* RUNNING_XACTS listing / overflowing subxids */
    uint64_t *lsns;         /* every record, for the later passes */
    uint32_t *crcs;
    size_t n, cap;
};

static void parse_block_line(const char *line, struct wd_block *b)
{
    int n = 0;
    memset(b, 0, sizeof *b);
    cr_assert(sscanf(line, "\tblkref #%d: rel %u/%u/%u fork %7s blk %u%n", &b->id, &b->spc,
                     &b->db, &b->rel, b->fork, &b->blk, &n) == 6,
              "block line: %s", line);
    const char *rest = line + n;
    if (strncmp(rest, " (FPW", 5) == 0) {
        b->image = true;
        b->apply = strncmp(rest, " (FPW)", 6) == 0;
        const char *h = strstr(rest, "hole: offset: ");
        cr_assert_not_null(h, "%s", line);
        cr_assert_eq(sscanf(h, "hole: offset: %u, length: %u", &b->hole_off, &b->hole_len), 2);
        const char *c = strstr(rest, "compression saved: ");
        if (c != NULL) {
            b->compressed = true;
            cr_assert_eq(sscanf(c, "compression saved: %u, method: %7s", &b->saved, b->method), 2);
        }
    }
}

struct table_ids {
    uint32_t db, rel;       /* the test table's relfilenode before TRUNCATE */
};

/* Compares one record with pg_waldump's, and checks its images. */
static void compare(const struct wd_rec *w, const struct pgwal_record *rec, struct str *desc,
                    const struct table_ids *t, struct seen *seen)
{
    char where[64], err[512];
    snprintf(where, sizeof where, "record at %X/%08X", (unsigned)(rec->lsn >> 32),
             (unsigned)rec->lsn);
    cr_assert_eq(rec->lsn, w->lsn, "%s: pg_waldump's is at %llX", where,
                 (unsigned long long)w->lsn);
    const char *rm = pgwal_rmgr_name(rec->rmid);
    cr_assert(rm != NULL && strcmp(rm, w->rmgr) == 0, "%s: rmgr %s, pg_waldump %s", where,
              rm ? rm : "?", w->rmgr);
    cr_assert_eq(rec->tot_len, w->tot_len, "%s: length", where);
    cr_assert_eq(rec->tot_len - rec->fpi_len, w->rec_len, "%s: length without images", where);
    cr_assert_eq(rec->xid, w->xid, "%s: xid", where);
    cr_assert_eq(rec->prev, w->prev, "%s: xl_prev", where);
    const char *name = pgwal_record_name(rec->rmid, rec->info);
    if (name != NULL) {
        size_t nl = strlen(name);
        cr_assert(strncmp(w->desc, name, nl) == 0 && w->desc[nl] == ' ',
                  "%s: kind %s, pg_waldump: %s", where, name, w->desc);
        if (describe(rec, desc)) {
            cr_assert_str_eq(w->desc + nl + 1, desc->p ? desc->p : "",
                             "%s (%s): description differs: pg_waldump \"%s\", ours \"%s\"",
                             where, name, w->desc + nl + 1, desc->p ? desc->p : "");
            seen->described++;
        }
    }
    /* block references */
    int k = 0;
    for (int id = 0; id <= rec->max_block_id; id++) {
        const struct pgwal_block *b = &rec->blocks[id];
        if (!b->in_use)
            continue;
        cr_assert_lt(k, w->nblocks, "%s: block %d not in pg_waldump's", where, id);
        const struct wd_block *wb = &w->blocks[k++];
        cr_assert_eq(wb->id, id, "%s: block id", where);
        cr_assert(wb->spc == b->node.spc && wb->db == b->node.db && wb->rel == b->node.rel,
                  "%s: block %d relation", where, id);
        cr_assert_str_eq(wb->fork, fork_name(b->fork), "%s: block %d fork", where, id);
        cr_assert_eq(wb->blk, b->blkno, "%s: block %d number", where, id);
        cr_assert_eq(wb->image, b->has_image, "%s: block %d image", where, id);
        if (!b->has_image)
            continue;
        cr_assert_eq(wb->apply, b->apply_image, "%s: block %d apply", where, id);
        cr_assert(wb->hole_off == b->hole_offset && wb->hole_len == b->hole_length,
                  "%s: block %d hole", where, id);
        unsigned method = b->bimg_info & (PGWAL_BKPIMAGE_COMPRESS_PGLZ |
                                          PGWAL_BKPIMAGE_COMPRESS_LZ4);
        cr_assert_eq(wb->compressed, method != 0, "%s: block %d compression", where, id);
        if (wb->compressed) {
            cr_assert_str_eq(wb->method, method == PGWAL_BKPIMAGE_COMPRESS_PGLZ ? "pglz" : "lz4");
            cr_assert_eq(wb->saved, PAGE - b->hole_length - b->bimg_len);
        }
        uint8_t page[PAGE];
        cr_assert_eq(pgwal_block_image(b, page, err, sizeof err), 0, "%s: block %d: %s", where,
                     id, err);
        seen->images[method == 0 ? 0 : method == PGWAL_BKPIMAGE_COMPRESS_PGLZ ? 1 : 2]++;
        uint16_t lower = pgwal_u16_at(page, 6), upper = pgwal_u16_at(page, 7);
        if (b->hole_length > 0)
            cr_assert(lower == b->hole_offset && upper == b->hole_offset + b->hole_length,
                      "%s: block %d: hole [%u, +%u) but the page's free space is [%u, %u)", where,
                      id, b->hole_offset, b->hole_length, lower, upper);
        if (b->node.db == t->db && b->node.rel == t->rel && b->fork == PGWAL_FORK_MAIN) {
            uint16_t special = pgwal_u16_at(page, 8), version = pgwal_u16_at(page, 9);
            cr_assert(version == (PAGE | 4) && lower >= 24 && lower <= upper &&
                          upper <= special && special == PAGE,
                      "%s: block %d: not a heap page (lower %u upper %u special %u version "
                      "0x%04X)", where, id, lower, upper, special, version);
            seen->table_images++;
        }
    }
    cr_assert_eq(k, w->nblocks, "%s: pg_waldump has %d blocks, the record %d", where, w->nblocks,
                 k);

    /* A logged tuple equals the one its page image holds. */
    if (rec->rmid == PGWAL_RM_HEAP && rec->blocks[0].in_use && rec->blocks[0].has_image) {
        struct pgwal_heap h;
        cr_assert_eq(pgwal_heap_parse(rec, &h, err, sizeof err), 0, "%s", err);
        uint16_t off = h.op == PGWAL_HEAP_INSERT ? h.offnum
                       : h.op == PGWAL_HEAP_UPDATE || h.op == PGWAL_HEAP_HOT_UPDATE ? h.new_offnum
                                                                                    : 0;
        if (off != 0 && h.tuple.present && h.prefix_len == 0 && h.suffix_len == 0) {
            uint8_t page[PAGE];
            const uint8_t *tup;
            uint16_t len;
            cr_assert_eq(pgwal_block_image(&rec->blocks[0], page, err, sizeof err), 0);
            cr_assert_eq(pgwal_page_tuple(page, off, &tup, &len, err, sizeof err), 0,
                         "%s: %s", where, err);
            cr_assert_eq(len, PGWAL_TUPLE_HEADER + h.tuple.len, "%s: tuple length", where);
            cr_assert(pgwal_u16_at(tup, 9) == h.tuple.infomask2 &&
                          pgwal_u16_at(tup, 10) == h.tuple.infomask && tup[22] == h.tuple.hoff,
                      "%s: tuple header", where);
            cr_assert(memcmp(tup + PGWAL_TUPLE_HEADER, h.tuple.data, h.tuple.len) == 0,
                      "%s: tuple bytes differ from the page image's", where);
            seen->tuples_from_images++;
        }
    }
}

/* Tallies what the workload must have produced. */
static void tally(const struct pgwal_record *rec, const struct table_ids *t, struct seen *seen)
{
    char err[512];
    if (rec->rmid == PGWAL_RM_HEAP) {
        seen->heap_ops[(rec->info & PGWAL_HEAP_OPMASK) >> 4]++;
        if ((rec->info & PGWAL_HEAP_OPMASK) == PGWAL_HEAP_TRUNCATE) {
            struct pgwal_heap h;
            cr_assert_eq(pgwal_heap_parse(rec, &h, err, sizeof err), 0);
            if (h.db_id == t->db)
                seen->truncate_xid = rec->xid;
        }
    } else if (rec->rmid == PGWAL_RM_HEAP2) {
        seen->heap2_ops[(rec->info & PGWAL_HEAP_OPMASK) >> 4]++;
        struct pgwal_heap2 h;
        cr_assert_eq(pgwal_heap2_parse(rec, &h, err, sizeof err), 0, "%s", err);
        if (h.op == PGWAL_HEAP2_MULTI_INSERT && rec->blocks[0].node.rel == t->rel &&
            rec->blocks[0].node.db == t->db) {
            uint32_t cursor = 0;
            uint16_t off, prev = 0;
            struct pgwal_tuple tup;
            for (uint16_t i = 0; i < h.ntuples; i++) {
                if (!h.tuples_present)
                    break;
                cr_assert(pgwal_multi_insert_tuple(&h, i, &cursor, &off, &tup));
                cr_assert_gt(off, prev);
                prev = off;
            }
            cr_assert(!h.tuples_present || cursor == h.tuple_data_len);
            seen->multi_insert_tuples += h.ntuples;
        }
    } else if (rec->rmid == PGWAL_RM_STANDBY &&
               (rec->info & 0xF0) == PGWAL_STANDBY_RUNNING_XACTS) {
        struct pgwal_standby sb;
        cr_assert_eq(pgwal_standby_parse(rec, &sb, err, sizeof err), 0, "%s", err);
        seen->running_subxacts += sb.subxcnt > 0;
        seen->running_overflowed += sb.subxid_overflow;
    } else if (rec->rmid == PGWAL_RM_XACT) {
        struct pgwal_xact a;
        cr_assert_eq(pgwal_xact_parse(rec, &a, err, sizeof err), 0, "%s", err);
        seen->xact_ops[a.op >> 4]++;
        if (a.op == PGWAL_XACT_COMMIT && seen->truncate_xid != 0 && a.xid == seen->truncate_xid)
            for (uint32_t i = 0; i < a.nrels; i++) {
                struct pgwal_relfilenode n = pgwal_relfilenode_at(a.rels, i);
                if (n.db == t->db && n.rel == t->rel)
                    seen->truncate_commit_drops_old = true;
            }
    } else if (rec->rmid == PGWAL_RM_XLOG) {
        struct pgwal_xlog xl;
        cr_assert_eq(pgwal_xlog_parse(rec, &xl, err, sizeof err), 0, "%s", err);
        if (xl.op == PGWAL_XLOG_CHECKPOINT_ONLINE && !seen->checkpoint_seen) {
            seen->checkpoint_seen = true;
            seen->checkpoint_fpw = xl.checkpoint.full_page_writes;
        }
    }
    seen->switch_last = rec->rmid == PGWAL_RM_XLOG && (rec->info & 0xF0) == PGWAL_XLOG_SWITCH;
    if (seen->n == seen->cap) {
        seen->cap = seen->cap ? 2 * seen->cap : 4096;
        seen->lsns = realloc(seen->lsns, seen->cap * sizeof *seen->lsns);
        seen->crcs = realloc(seen->crcs, seen->cap * sizeof *seen->crcs);
        cr_assert(seen->lsns && seen->crcs);
    }
    seen->lsns[seen->n] = rec->lsn;
    seen->crcs[seen->n++] = rec->crc;
}

/* VACUUM t until every page of it is all-visible (pg_class.relallvisible
 * as many as relpages): the workload's changes cleared the bits of the
 * pages they touched, and marking one again writes a VISIBLE record. A
 * count above zero would not do: pages the workload left alone keep their
 * bits from the VACUUM before the checkpoint. In the cluster the tests share,
 * another test's open snapshot (an initial load's, a long COPY) can hold
 * the xmin horizon behind the workload's rows for a while (seen once in
 * the test command: the VACUUMs wrote no VISIBLE record, where the same
 * seed alone does), and a VACUUM then removes dead rows but marks
 * nothing; the next one, once the horizon has passed, does. Index cleanup
 * is forced: PostgreSQL may otherwise skip it when few items are dead,
 * leaving them on pages it cannot then mark. Bounded: two minutes. */
static void vacuum_until_visible(PGconn *c)
{
    char text[64];
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        sql_ok(c, "VACUUM (INDEX_CLEANUP ON) t"); /* never the bypass that leaves LP_DEAD items */
        q1(c, text, sizeof text,
           "SELECT relpages > 0 AND relallvisible >= relpages FROM pg_class "
           "WHERE oid = 't'::regclass");
        if (strcmp(text, "t") == 0)
            return;
        clock_gettime(CLOCK_MONOTONIC, &t);
        cr_assert_lt(t.tv_sec - t0.tv_sec, 120,
                     "VACUUM t left pages not all-visible for 120 s: a transaction elsewhere in "
                     "the cluster holds the xmin horizon");
        usleep(100000); /* the horizon moves when that transaction ends: poll it */
    }
}

/* The workload: every kind of heap change a follower meets. */
static void workload(PGconn *c, bool twophase)
{
    /* First touches of the first load's pages since the checkpoint (their
     * free space is the rows deleted before it): page images, logged with
     * the tuple, uncompressed, pglz- and lz4-compressed. */
    for (int i = 0; i < 20; i++) {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "INSERT INTO t VALUES (%d, %d, %d, %d.5, 'single %d', now(), NULL)", 5000 + i,
                 i, i * 3, i, i);
        sql_ok(c, sql);
    }
    /* Each compressed update is its page's first touch since a checkpoint
     * of its own: the inserts above may have landed on page 3 or 4 (the
     * free space map picks), and so its image would be the insert's. */
    sql_ok(c, "SET wal_compression = pglz");
    sql_ok(c, "CHECKPOINT");
    sql_ok(c, "UPDATE t SET note = 'hot' WHERE ctid >= '(3,0)' AND ctid < '(4,0)'"); /* HOT */
    sql_ok(c, "SET wal_compression = lz4");
    sql_ok(c, "CHECKPOINT");
    sql_ok(c, "UPDATE t SET k = k + 1000 WHERE ctid >= '(4,0)' AND ctid < '(5,0)'"); /* not */
    sql_ok(c, "SET wal_compression = off");

    /* COPY: multi-inserts, onto pages with room, then new ones */
    PGresult *r = PQexec(c, "COPY t (id, k, b, n, s, ts, note) FROM STDIN");
    cr_assert_eq(PQresultStatus(r), PGRES_COPY_IN, "%s", PQerrorMessage(c));
    PQclear(r);
    char line[256];
    for (int i = 1000; i < 4000; i++) {
        int n = snprintf(line, sizeof line,
                         "%d\t%d\t%lld\t%d.%02d\ttext %d\t2024-03-%02d 10:%02d:00+00\t\\N\n", i,
                         i % 97, (long long)i * 1000003, i / 7, i % 100, i, 1 + i % 28, i % 60);
        cr_assert_eq(PQputCopyData(c, line, n), 1);
    }
    cr_assert_eq(PQputCopyEnd(c, NULL), 1);
    r = PQgetResult(c);
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s", PQerrorMessage(c));
    PQclear(r);
    PQclear(PQgetResult(c));

    sql_ok(c, "UPDATE t SET note = 'hot again' WHERE id BETWEEN 3990 AND 3999");
    sql_ok(c, "SET wal_compression = off");
    sql_ok(c, "UPDATE t SET id = id + 100000 WHERE id BETWEEN 1000 AND 1010"); /* the key */
    sql_ok(c, "DELETE FROM t WHERE id % 7 = 0");
    sql_ok(c, "BEGIN");
    sql_ok(c, "INSERT INTO t VALUES (9000, 1, 1, 1, 'rolled back', now(), NULL)");
    sql_ok(c, "UPDATE t SET note = 'rolled back' WHERE id = 3001");
    sql_ok(c, "ROLLBACK");
    sql_ok(c, "BEGIN");
    sql_ok(c, "INSERT INTO t VALUES (9001, 1, 1, 1, 'kept', now(), NULL)");
    sql_ok(c, "SAVEPOINT a");
    sql_ok(c, "INSERT INTO t VALUES (9002, 1, 1, 1, 'undone', now(), NULL)");
    sql_ok(c, "ROLLBACK TO SAVEPOINT a");
    sql_ok(c, "INSERT INTO t VALUES (9003, 1, 1, 1, 'kept', now(), NULL)");
    sql_ok(c, "COMMIT");
    /* 70 subtransactions with xids: an ASSIGNMENT record, and a commit
     * listing them */
    sql_ok(c, "DO $$ BEGIN FOR i IN 1..70 LOOP BEGIN "
         "INSERT INTO t VALUES (20000 + i, i, i, i, 'sub', now(), NULL); "
         "EXCEPTION WHEN others THEN NULL; END; END LOOP; END $$");
    sql_ok(c, "BEGIN");
    sql_ok(c, "SELECT * FROM t WHERE id = 3002 FOR UPDATE");
    sql_ok(c, "SELECT * FROM t WHERE id = 3003 FOR KEY SHARE");
    sql_ok(c, "COMMIT");
    sql_ok(c, "INSERT INTO t VALUES (9004, 1, 1, 1, 'upsert', now(), NULL) ON CONFLICT (id) DO NOTHING");
    sql_ok(c, "INSERT INTO t VALUES (9004, 1, 1, 1, 'upsert', now(), NULL) "
         "ON CONFLICT (id) DO UPDATE SET note = 'upserted'");
    if (twophase) {
        oracle.prepared = true;
        sql_ok(c, "BEGIN");
        sql_ok(c, "INSERT INTO t VALUES (9100, 1, 1, 1, 'prepared', now(), NULL)");
        sql_ok(c, "PREPARE TRANSACTION 'pgwal_commit'");
        sql_ok(c, "COMMIT PREPARED 'pgwal_commit'");
        sql_ok(c, "BEGIN");
        sql_ok(c, "DELETE FROM t WHERE id = 9100");
        sql_ok(c, "PREPARE TRANSACTION 'pgwal_rollback'");
        sql_ok(c, "ROLLBACK PREPARED 'pgwal_rollback'");
        oracle.prepared = false;
    }
    vacuum_until_visible(c);
    sql_ok(c, "VACUUM (FREEZE) t");
    sql_ok(c, "TRUNCATE t");
    sql_ok(c, "INSERT INTO t VALUES (1, 1, 1, 1, 'after truncate', now(), NULL)");
    sql_ok(c, "SELECT pg_logical_emit_message(true, 'pgwal', repeat('x', 30000))");
}

/* pg_waldump of the server's major version. */
static void waldump_path(PGconn *c, char *out, size_t cap)
{
    const char *env = getenv("STRAUM_PG_BINDIR");
    char v[32];
    q1(c, v, sizeof v, "SHOW server_version_num");
    if (env != NULL && *env != '\0') {
        snprintf(out, cap, "%s/pg_waldump", env);
    } else {
        snprintf(out, cap, "/usr/lib/postgresql/%d/bin/pg_waldump", atoi(v) / 10000);
        if (access(out, X_OK) != 0) {
            FILE *f = popen("pg_config --bindir 2>/dev/null", "re");
            char dir[900] = "";
            if (f != NULL) {
                if (fgets(dir, sizeof dir, f) == NULL)
                    dir[0] = '\0';
                pclose(f);
            }
            dir[strcspn(dir, "\n")] = '\0';
            snprintf(out, cap, "%s/pg_waldump", dir);
        }
    }
    cr_assert(access(out, X_OK) == 0, "no pg_waldump at %s (set STRAUM_PG_BINDIR)", out);
}

/* Non-transactional logical messages of the sizes that make the last
 * record end exactly at a WAL page's end, so that the insert position
 * lies past the next page's header: source_wal_end must then give the
 * page's start, where a stream's position arrives (a follower run with
 * --exit-when-caught-up waited there for more WAL). Other sessions of the
 * shared cluster write WAL too (a parallel test's COPY, for seconds): tried
 * until this session's message is the last record, for up to 60 s. */
Test(pgwal_oracle, wal_end_at_a_page_end, .timeout = 180)
{
    PGconn *c = pgtest_connect(NULL);
    cr_assert_not_null(c);
    const char *emit = "SELECT pg_logical_emit_message(false, 'straum', repeat('x', %u))";
    const char *insert = "SELECT pg_current_wal_insert_lsn()";
    bool made = false;
    uint64_t next = 0;
    time_t until = time(NULL) + 60;
    int attempts = 0;
    for (; !made && time(NULL) < until; attempts++) {
        /* A message of 300 bytes, to learn what a message adds to them
         * (rounded up to 8); a page with too little room is filled first. */
        uint64_t before = q_lsn(c, insert);
        uint32_t room = PAGE - (uint32_t)(before % PAGE);
        PQclear(q(c, emit, room < 1000 ? room : 300u));
        uint64_t after = q_lsn(c, insert);
        if (room < 1000 || after / PAGE != before / PAGE)
            continue;
        uint32_t overhead = (uint32_t)(after - before) - 300;
        room = PAGE - (uint32_t)(after % PAGE);
        if (room < overhead + 300)
            continue;
        PQclear(q(c, emit, room - overhead));
        next = q_lsn(c, insert);
        if (next != (after / PAGE + 1) * PAGE + 24)
            continue;
        uint64_t end = source_wal_end(c);
        made = q_lsn(c, insert) == next; /* no other record came meanwhile */
        if (made)
            cr_assert_eq(end, next - 24, "the WAL ends at %llX, a page's start; source_wal_end "
                         "gave %llX", (unsigned long long)(next - 24), (unsigned long long)end);
    }
    cr_assert(made, "no message of %d in 60 s ended at a page's end: other sessions wrote "
                    "between", attempts);
    PQfinish(c);
}

Test(pgwal_oracle, waldump, .fini = oracle_cleanup, .timeout = 600)
{
    uint64_t seed = seed_once();
    char err[512], conninfo[1024], text[256];
    PGconn *a = pgtest_connect(NULL);
    cr_assert_not_null(a);
    oracle.admin = a;
    q1(a, text, sizeof text, "SHOW server_version_num");
    if (atoi(text) / 10000 != 15) {
        cr_skip_test("the decoder reads PostgreSQL 15's WAL; the server is %s", text);
    }
    char waldump[1024];
    waldump_path(a, waldump, sizeof waldump);

    cr_assert_eq(pgtest_new_db(conninfo, sizeof conninfo), 0);
    const char *dbname = strstr(conninfo, "dbname=");
    cr_assert_not_null(dbname);
    snprintf(oracle.db, sizeof oracle.db, "%s", dbname + 7);
    PGconn *c = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));

    /* WAL kept from here on, for as long as this session lives */
    char slot[64];
    snprintf(slot, sizeof slot, "pgwal_%ld", (long)getpid());
    PQclear(q(a, "SELECT pg_create_physical_replication_slot('%s', true, true)", slot));
    q1(a, text, sizeof text, "SHOW full_page_writes");
    if (strcmp(text, "on") != 0) {
        /* put back by oracle_cleanup */
        sql_ok(a, "ALTER SYSTEM SET full_page_writes = on");
        oracle.fpw_set = true;
        sql_ok(a, "SELECT pg_reload_conf()");
    }
    q1(a, text, sizeof text, "SHOW max_prepared_transactions");
    bool twophase = atoi(text) > 0;
    if (!twophase)
        fprintf(stderr, "test_pgwal: max_prepared_transactions is 0: no two-phase records\n");

    /* No autovacuum: in the shared cluster it may visit t between the
     * checkpoint and the workload and take the page images the workload's
     * changes are meant to log (the VACUUMs below are explicit). */
    sql_ok(c, "CREATE TABLE t (id int PRIMARY KEY, k int, b bigint, n numeric, s text, "
         "ts timestamptz, note text) WITH (autovacuum_enabled = off)");
    sql_ok(c, "CREATE INDEX ON t (k)");
    sql_ok(c, "INSERT INTO t SELECT i, i % 97, i * 1000003, i / 7.0, 'first ' || i, "
         "timestamptz '2024-01-01' + i * interval '1 minute', NULL "
         "FROM generate_series(1, 500) i");
    /* room on those pages, known to the free space map */
    sql_ok(c, "DELETE FROM t WHERE id % 3 = 0");
    sql_ok(c, "VACUUM t");
    struct table_ids tid;
    q1(c, text, sizeof text, "SELECT oid FROM pg_database WHERE datname = current_database()");
    tid.db = (uint32_t)strtoul(text, NULL, 10);
    q1(c, text, sizeof text, "SELECT pg_relation_filenode('t')");
    tid.rel = (uint32_t)strtoul(text, NULL, 10);

    /* A checkpoint taken with full_page_writes on: the server applies the
     * reload asynchronously, so until the checkpoint says so, take another. */
    uint64_t redo = 0;
    for (int i = 0;; i++) {
        cr_assert_lt(i, 200, "full_page_writes never reached the checkpointer");
        sql_ok(a, "CHECKPOINT");
        PGresult *r = q(a, "SELECT full_page_writes, redo_lsn FROM pg_control_checkpoint()");
        bool on = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
        unsigned hi, lo;
        cr_assert_eq(sscanf(PQgetvalue(r, 0, 1), "%X/%X", &hi, &lo), 2);
        PQclear(r);
        if (on) {
            redo = (uint64_t)hi << 32 | lo;
            break;
        }
    }
    /* Checkpoints log the running transactions; one is held open across
     * two of them: first with a few subtransactions (listed in the record),
     * then with more than PGPROC_MAX_CACHED_SUBXIDS (64; the record says
     * the list overflowed). */
    PGconn *h = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(h), CONNECTION_OK, "%s", PQerrorMessage(h));
    sql_ok(h, "CREATE TABLE held (a int) WITH (autovacuum_enabled = off)");
    sql_ok(h, "BEGIN");
    for (int i = 0; i < 70; i++) {
        if (i == 3)
            sql_ok(a, "CHECKPOINT");
        sql_ok(h, "SAVEPOINT s");
        sql_ok(h, "INSERT INTO held VALUES (1)");
    }
    sql_ok(a, "CHECKPOINT");
    sql_ok(h, "COMMIT");
    PQfinish(h);
    workload(c, twophase);
    uint64_t end = q_lsn(a, "SELECT pg_switch_wal()");
    PQfinish(c);

    char datadir[1024], waldir[1100];
    q1(a, datadir, sizeof datadir, "SHOW data_directory");
    snprintf(waldir, sizeof waldir, "%s/pg_wal", datadir);
    q1(a, text, sizeof text, "SELECT setting FROM pg_settings WHERE name = 'wal_segment_size'");
    uint32_t seg = (uint32_t)strtoul(text, NULL, 10);
    char walfile[64];
    {
        PGresult *r = q(a, "SELECT pg_walfile_name('%X/%X')", (unsigned)(redo >> 32),
                        (unsigned)redo);
        snprintf(walfile, sizeof walfile, "%s", PQgetvalue(r, 0, 0));
        PQclear(r);
    }
    char tlitext[9];
    memcpy(tlitext, walfile, 8);
    tlitext[8] = '\0';
    uint32_t tli = (uint32_t)strtoul(tlitext, NULL, 16);

    /* pg_waldump over [redo, end) */
    char errfile[] = "/tmp/pgwal_waldump_XXXXXX";
    int efd = mkstemp(errfile);
    cr_assert_geq(efd, 0);
    close(efd);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "TZ=UTC '%s' --bkp-details --path '%s' --start %X/%X --end %X/%X 2>%s",
             waldump, waldir, (unsigned)(redo >> 32), (unsigned)redo, (unsigned)(end >> 32),
             (unsigned)end, errfile);
    FILE *wd = popen(cmd, "re");
    cr_assert_not_null(wd);

    struct feed f = {.mode = 5};
    cr_assert_eq(pgwal_reader_init(&f.r, seg, redo, 0, err, sizeof err), 0, "%s", err);
    walfiles_open_dir(&f.src, waldir, seg, tli, redo, end);
    struct seen seen = {0};
    struct str desc = {0};
    struct wd_rec w = {0};
    bool have = false;
    char *line = NULL;
    size_t linecap = 0;
    ssize_t len;
    for (;;) {
        len = getline(&line, &linecap, wd);
        bool main_line = len > 0 && strncmp(line, "rmgr: ", 6) == 0;
        if (len < 0 || main_line) {
            if (have) {
                struct pgwal_record rec;
                cr_assert_eq(feed_next(&f, &rec), 1, "pg_waldump has a record at %llX, the "
                             "reader none (seed %llu)", (unsigned long long)w.lsn,
                             (unsigned long long)seed);
                compare(&w, &rec, &desc, &tid, &seen);
                tally(&rec, &tid, &seen);
                seen.records++;
                free(w.desc);
                have = false;
            }
            if (len < 0)
                break;
        }
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (main_line) {
            memset(&w, 0, sizeof w);
            unsigned lh, ll, ph, pl;
            int n = 0;
            cr_assert(sscanf(line, "rmgr: %31s len (rec/tot): %u/ %u, tx: %u, lsn: %X/%X, prev "
                                   "%X/%X, desc: %n",
                             w.rmgr, &w.rec_len, &w.tot_len, &w.xid, &lh, &ll, &ph, &pl,
                             &n) == 8 &&
                          n > 0,
                      "pg_waldump line: %s", line);
            w.lsn = (uint64_t)lh << 32 | ll;
            w.prev = (uint64_t)ph << 32 | pl;
            w.desc = strdup(line + n);
            have = true;
        } else if (len > 0 && strncmp(line, "\tblkref #", 9) == 0) {
            cr_assert(have && w.nblocks < PGWAL_MAX_BLOCKS);
            parse_block_line(line, &w.blocks[w.nblocks++]);
        } else if (len > 0) {
            cr_assert_fail("unexpected pg_waldump line: %s", line);
        }
    }
    free(line);
    int wd_rc = pclose(wd);
    {
        FILE *ef = fopen(errfile, "r");
        char msg[1024] = "";
        if (ef != NULL) {
            size_t n = fread(msg, 1, sizeof msg - 1, ef);
            msg[n] = '\0';
            fclose(ef);
        }
        unlink(errfile);
        cr_assert_eq(wd_rc, 0, "pg_waldump failed: %s", msg);
    }
    struct pgwal_record rec;
    cr_assert_eq(feed_next(&f, &rec), 0, "the reader has a record at %llX past pg_waldump's",
                 (unsigned long long)rec.lsn);
    cr_assert_eq(pgwal_reader_want(&f.r), end);
    pgwal_reader_free(&f.r);
    walfiles_close(&f.src);
    free(desc.p);

    fprintf(stderr,
            "test_pgwal: %d records from %X/%08X to %X/%08X, %d descriptions equal; images: %d "
            "plain, %d pglz, %d lz4, %d of the table, %d tuples equal to their image's\n",
            seen.records, (unsigned)(redo >> 32), (unsigned)redo, (unsigned)(end >> 32),
            (unsigned)end, seen.described, seen.images[0], seen.images[1], seen.images[2],
            seen.table_images, seen.tuples_from_images);

    /* What the workload must have written, found and parsed. */
    cr_assert(seen.checkpoint_seen && seen.checkpoint_fpw, "an online checkpoint with fpw on");
    cr_assert(seen.switch_last, "the last record is the switch");
    cr_assert_gt(seen.running_subxacts, 0, "running transactions with subtransactions");
    cr_assert_gt(seen.running_overflowed, 0, "running transactions whose subxids overflowed");
    cr_assert_gt(seen.heap_ops[PGWAL_HEAP_INSERT >> 4], 0);
    cr_assert_gt(seen.heap_ops[PGWAL_HEAP_UPDATE >> 4], 0);
    cr_assert_gt(seen.heap_ops[PGWAL_HEAP_HOT_UPDATE >> 4], 0);
    cr_assert_gt(seen.heap_ops[PGWAL_HEAP_DELETE >> 4], 0);
    cr_assert_gt(seen.heap_ops[PGWAL_HEAP_TRUNCATE >> 4], 0);
    cr_assert_gt(seen.heap_ops[PGWAL_HEAP_LOCK >> 4], 0);
    cr_assert_gt(seen.heap_ops[PGWAL_HEAP_CONFIRM >> 4], 0);
    cr_assert_gt(seen.heap2_ops[PGWAL_HEAP2_PRUNE >> 4], 0);
    cr_assert_gt(seen.heap2_ops[PGWAL_HEAP2_VACUUM >> 4], 0);
    cr_assert_gt(seen.heap2_ops[PGWAL_HEAP2_VISIBLE >> 4], 0);
    cr_assert_gt(seen.heap2_ops[PGWAL_HEAP2_FREEZE_PAGE >> 4], 0);
    cr_assert_eq(seen.multi_insert_tuples, 3000, "COPY's 3000 rows in multi-inserts");
    cr_assert_gt(seen.xact_ops[PGWAL_XACT_COMMIT >> 4], 0);
    cr_assert_gt(seen.xact_ops[PGWAL_XACT_ABORT >> 4], 0);
    cr_assert_gt(seen.xact_ops[PGWAL_XACT_ASSIGNMENT >> 4], 0);
    if (twophase) {
        cr_assert_gt(seen.xact_ops[PGWAL_XACT_PREPARE >> 4], 1);
        cr_assert_gt(seen.xact_ops[PGWAL_XACT_COMMIT_PREPARED >> 4], 0);
        cr_assert_gt(seen.xact_ops[PGWAL_XACT_ABORT_PREPARED >> 4], 0);
    }
    cr_assert(seen.truncate_commit_drops_old, "TRUNCATE's commit drops the old relfilenode");
    cr_assert_gt(seen.images[0], 0);
    cr_assert_gt(seen.images[1], 0, "pglz images");
    cr_assert_gt(seen.images[2], 0, "lz4 images");
    cr_assert_gt(seen.table_images, 0);
    cr_assert_gt(seen.tuples_from_images, 0);

    /* Again from the segment's start, and from the first page in the range
     * that continues a record: the same records from the redo pointer on. */
    uint64_t starts[2] = {redo - redo % seg, 0};
    {
        struct walfiles s;
        walfiles_open_dir(&s, waldir, seg, tli, redo - redo % PAGE + PAGE, end);
        uint64_t lsn;
        for (size_t n; starts[1] == 0 && (n = walfiles_read(&s, PAGE, &lsn)) > 0;)
            if (n >= 24 && lsn % PAGE == 0 && (s.buf[2] & 1))
                starts[1] = lsn;
        walfiles_close(&s);
    }
    for (int k = 0; k < 2; k++) {
        if (starts[k] == 0)
            continue;
        struct feed g = {.mode = k == 0 ? 3 : 5};
        cr_assert_eq(pgwal_reader_init(&g.r, seg, starts[k], 0, err, sizeof err), 0, "%s", err);
        walfiles_open_dir(&g.src, waldir, seg, tli, starts[k], end);
        size_t i = 0;
        while (i < seen.n && seen.lsns[i] < starts[k])
            i++;
        size_t first = i;
        while (feed_next(&g, &rec) == 1) {
            if (rec.lsn < redo)
                continue;
            cr_assert_lt(i, seen.n, "start %llX: more records", (unsigned long long)starts[k]);
            cr_assert(rec.lsn == seen.lsns[i] && rec.crc == seen.crcs[i],
                      "start %llX: record %zu at %llX, expected %llX", (unsigned long long)starts[k],
                      i, (unsigned long long)rec.lsn, (unsigned long long)seen.lsns[i]);
            i++;
        }
        cr_assert_eq(i, seen.n, "start %llX: %zu records of %zu", (unsigned long long)starts[k],
                     i - first, seen.n - first);
        pgwal_reader_free(&g.r);
        walfiles_close(&g.src);
    }
    cr_assert_neq(starts[1], 0, "a page continuing a record (the 30 kB message)");

    /* Seeds for fuzz_pgwal: the first pages of the range, the pages of a
     * continued record, and the records of the kinds the workload made. */
    if (getenv("STRAUM_PGWAL_CORPUS") != NULL) {
        struct walfiles s;
        uint64_t lsn;
        uint64_t from[3] = {redo - redo % PAGE, starts[1] - PAGE, redo - redo % seg};
        const char *names[3] = {"wal_redo_pages", "wal_continued_pages", "wal_segment_start"};
        const size_t pages[3] = {2, 5, 2};
        for (int k = 0; k < 3; k++) {
            walfiles_open_dir(&s, waldir, seg, tli, from[k], end);
            size_t n = walfiles_read(&s, pages[k] * PAGE, &lsn);
            corpus_write(names[k], 0x08, lsn, s.buf, n);
            walfiles_close(&s);
        }
        struct feed g = {.mode = 4};
        cr_assert_eq(pgwal_reader_init(&g.r, seg, redo, 0, err, sizeof err), 0);
        walfiles_open_dir(&g.src, waldir, seg, tli, redo, end);
        bool done[64] = {false};
        while (feed_next(&g, &rec) == 1) {
            int kind = rec.rmid == PGWAL_RM_HEAP ? (rec.info >> 4) & 7
                       : rec.rmid == PGWAL_RM_HEAP2 ? 8 + ((rec.info >> 4) & 7)
                       : rec.rmid == PGWAL_RM_XACT ? 16 + ((rec.info >> 4) & 7)
                       : rec.rmid < 8 ? 24 + rec.rmid
                                      : -1;
            bool image = false;
            for (int id = 0; id <= rec.max_block_id; id++)
                image |= rec.blocks[id].has_image;
            if (kind >= 0 && image)
                kind += 32;
            if (kind < 0 || done[kind] || rec.tot_len > 20000)
                continue;
            done[kind] = true;
            char name[64];
            snprintf(name, sizeof name, "wal_record_%s_%s%s", pgwal_rmgr_name(rec.rmid),
                     pgwal_record_name(rec.rmid, rec.info) ? pgwal_record_name(rec.rmid, rec.info)
                                                           : "other",
                     image ? "_image" : "");
            for (char *p = name; *p; p++)
                if (*p == '+')
                    *p = '_';
            corpus_write(name, 0x01, rec.lsn, rec.raw, rec.tot_len);
        }
        pgwal_reader_free(&g.r);
        walfiles_close(&g.src);
    }
    free(seen.lsns);
    free(seen.crcs);
}
