/* test_ingest_pgoutput.c -- unit tests for ingest/pgoutput.c: the
 * streaming-replication framing ('w', 'k', 'r') and every pgoutput message
 * kind, protocol versions 1-4. Round trips through pgo_encode/pgo_decode,
 * hand-written byte vectors as PostgreSQL sends them, and hostile input:
 * every strict prefix, trailing bytes, huge counts, exact error texts. */
#include "ingest/pgoutput.h"

#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- Helpers ------------------------------------------------------------- */

static bool is_zeroed(const struct pgo_message *m)
{
    static const struct pgo_message zero;
    return memcmp(m, &zero, sizeof zero) == 0;
}

static void decode_ok(const uint8_t *bytes, size_t len, int version, bool in_stream,
                      struct pgo_message *m)
{
    char err[256];
    int rc = pgo_decode(bytes, len, version, in_stream, m, err, sizeof err);
    cr_assert_eq(rc, 0, "decode failed: %s", err);
}

static void expect_error(const uint8_t *bytes, size_t len, int version, bool in_stream,
                         const char *want)
{
    struct pgo_message m;
    char err[256];
    memset(&m, 0x5a, sizeof m);
    /* An exact-size heap copy, so ASan sees any over-read. */
    uint8_t *copy = malloc(len > 0 ? len : 1);
    cr_assert_not_null(copy);
    if (len > 0)
        memcpy(copy, bytes, len);
    int rc = pgo_decode(len > 0 ? copy : NULL, len, version, in_stream, &m, err, sizeof err);
    free(copy); /* on failure m points into nothing */
    cr_assert_eq(rc, -1, "decode of %zu bytes succeeded, expected \"%s\"",
                 len, want ? want : "an error");
    cr_assert(is_zeroed(&m), "out not zeroed after failure");
    if (want != NULL)
        cr_assert_str_eq(err, want);
    else
        cr_assert(err[0] != '\0', "failure without a message");
    pgo_message_free(&m);
}

/* Every strict prefix fails cleanly (with a message, out zeroed) and one
 * byte more is refused as trailing garbage. */
static void expect_prefixes_fail(const uint8_t *bytes, size_t len, int version, bool in_stream)
{
    for (size_t k = 0; k < len; k++)
        expect_error(bytes, k, version, in_stream, NULL);

    uint8_t *longer = malloc(len + 1);
    cr_assert_not_null(longer);
    memcpy(longer, bytes, len);
    longer[len] = 0;
    struct pgo_message m;
    char err[256];
    cr_assert_eq(pgo_decode(longer, len + 1, version, in_stream, &m, err, sizeof err), -1);
    cr_assert(strstr(err, ": 1 trailing byte") != NULL, "got \"%s\"", err);
    cr_assert(is_zeroed(&m));
    free(longer);
}

static uint64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

/* ---- Sample messages for the round trips ----------------------------------- */

static struct pgo_column sample_columns[] = {
    {.flags = 1, .name = "id", .type_oid = 20, .typmod = -1},
    {.flags = 0, .name = "fare", .type_oid = 1700, .typmod = (10 << 16 | 2) + 4},
    {.flags = 0, .name = "", .type_oid = 0xFFFFFFFFu, .typmod = INT32_MIN},
};

static const uint8_t bin8[] = {0x80, 0, 0, 0, 0, 0, 0, 0x01};
static const uint8_t nul_bytes[] = {0, 1, 0, 0xff};

static struct pgo_value sample_new[] = {
    {.kind = 'n'},
    {.kind = 'u'},
    {.kind = 't', .data = (const uint8_t *)"hello", .len = 5},
    {.kind = 'b', .data = bin8, .len = 8},
    {.kind = 't', .data = (const uint8_t *)"", .len = 0},
    {.kind = 'b', .data = nul_bytes, .len = 4},
};

static struct pgo_value sample_old[] = {
    {.kind = 't', .data = (const uint8_t *)"42", .len = 2},
    {.kind = 'n'},
};

static uint32_t sample_relids[] = {16385, 16390, 0xFFFFFFFFu};

static const uint8_t content[] = {'h', 'i', 0, 0xfe};

#define T_LSN 0x00000000016B3748ull
#define T_END 0x00000000016B3790ull
#define T_TS INT64_C(0x00028A4F3B2C1D0E)

static size_t samples(struct pgo_message *out)
{
    size_t n = 0;
    out[n++] = (struct pgo_message){.kind = PGO_BEGIN, .lsn = T_LSN, .timestamp = T_TS, .xid = 528};
    out[n++] = (struct pgo_message){
        .kind = PGO_BEGIN, .lsn = UINT64_MAX, .timestamp = INT64_MIN, .xid = UINT32_MAX};
    out[n++] = (struct pgo_message){
        .kind = PGO_COMMIT, .flags = 0, .lsn = T_LSN, .end_lsn = T_END, .timestamp = T_TS};
    out[n++] = (struct pgo_message){
        .kind = PGO_COMMIT, .flags = 7, .lsn = 1, .end_lsn = 2, .timestamp = -1};
    out[n++] = (struct pgo_message){.kind = PGO_ORIGIN, .lsn = T_LSN, .origin_name = "node_a"};
    out[n++] = (struct pgo_message){.kind = PGO_RELATION, .xid = 777, .relid = 16385,
                                    .nspname = "public", .relname = "yellow_trips",
                                    .replident = 'd', .ncols = (int)LEN(sample_columns),
                                    .columns = sample_columns};
    out[n++] = (struct pgo_message){.kind = PGO_RELATION, .xid = 777, .relid = 1259,
                                    .nspname = "pg_catalog", .relname = "pg_class",
                                    .replident = 'f'};
    out[n++] = (struct pgo_message){
        .kind = PGO_TYPE, .xid = 777, .relid = 16400, .nspname = "public", .relname = "mood"};
    out[n++] = (struct pgo_message){
        .kind = PGO_TYPE, .xid = 777, .relid = 23, .nspname = "pg_catalog", .relname = "int4"};
    out[n++] = (struct pgo_message){
        .kind = PGO_INSERT, .xid = 777, .relid = 16385,
        .new_tuple = {.ncols = (int)LEN(sample_new), .values = sample_new}};
    out[n++] = (struct pgo_message){.kind = PGO_INSERT, .xid = 777, .relid = 16385};
    out[n++] = (struct pgo_message){
        .kind = PGO_UPDATE, .xid = 777, .relid = 16385,
        .new_tuple = {.ncols = (int)LEN(sample_new), .values = sample_new}};
    out[n++] = (struct pgo_message){
        .kind = PGO_UPDATE, .xid = 777, .relid = 16385, .old_kind = 'K',
        .old_tuple = {.ncols = (int)LEN(sample_old), .values = sample_old},
        .new_tuple = {.ncols = (int)LEN(sample_new), .values = sample_new}};
    out[n++] = (struct pgo_message){
        .kind = PGO_UPDATE, .xid = 777, .relid = 16385, .old_kind = 'O',
        .old_tuple = {.ncols = (int)LEN(sample_new), .values = sample_new},
        .new_tuple = {.ncols = (int)LEN(sample_old), .values = sample_old}};
    out[n++] = (struct pgo_message){
        .kind = PGO_DELETE, .xid = 777, .relid = 16385, .old_kind = 'K',
        .old_tuple = {.ncols = (int)LEN(sample_old), .values = sample_old}};
    out[n++] = (struct pgo_message){
        .kind = PGO_DELETE, .xid = 777, .relid = 16385, .old_kind = 'O',
        .old_tuple = {.ncols = (int)LEN(sample_new), .values = sample_new}};
    out[n++] = (struct pgo_message){.kind = PGO_TRUNCATE, .xid = 777, .truncate_options = 3,
                                    .nrelids = (int)LEN(sample_relids),
                                    .relids = sample_relids};
    out[n++] = (struct pgo_message){.kind = PGO_TRUNCATE, .xid = 777};
    out[n++] = (struct pgo_message){.kind = PGO_MESSAGE, .xid = 777, .flags = 1, .lsn = T_LSN,
                                    .prefix = "straum", .content = content,
                                    .content_len = LEN(content)};
    out[n++] = (struct pgo_message){.kind = PGO_MESSAGE, .xid = 777, .lsn = 5, .prefix = ""};
    out[n++] = (struct pgo_message){.kind = PGO_STREAM_START, .xid = 777, .first_segment = true};
    out[n++] = (struct pgo_message){.kind = PGO_STREAM_START, .xid = 778};
    out[n++] = (struct pgo_message){.kind = PGO_STREAM_STOP};
    out[n++] = (struct pgo_message){.kind = PGO_STREAM_COMMIT, .xid = 777, .flags = 0,
                                    .lsn = T_LSN, .end_lsn = T_END, .timestamp = T_TS};
    out[n++] = (struct pgo_message){.kind = PGO_STREAM_ABORT, .xid = 777, .subxid = 780};
    out[n++] = (struct pgo_message){.kind = PGO_STREAM_ABORT, .xid = 777, .subxid = 777,
                                    .lsn = T_LSN, .timestamp = T_TS};
    out[n++] = (struct pgo_message){.kind = PGO_BEGIN_PREPARE, .lsn = T_LSN, .end_lsn = T_END,
                                    .timestamp = T_TS, .xid = 900, .gid = "gid-1"};
    out[n++] = (struct pgo_message){.kind = PGO_PREPARE, .flags = 0, .lsn = T_LSN,
                                    .end_lsn = T_END, .timestamp = T_TS, .xid = 900,
                                    .gid = "gid-1"};
    out[n++] = (struct pgo_message){.kind = PGO_COMMIT_PREPARED, .lsn = T_LSN + 8,
                                    .end_lsn = T_END + 8, .timestamp = T_TS + 1, .xid = 900,
                                    .gid = "gid-1"};
    out[n++] = (struct pgo_message){.kind = PGO_ROLLBACK_PREPARED, .lsn = T_END,
                                    .end_lsn = T_END + 64, .prepare_time = T_TS,
                                    .timestamp = T_TS + 99, .xid = 901, .gid = ""};
    out[n++] = (struct pgo_message){.kind = PGO_STREAM_PREPARE, .flags = 0, .lsn = T_LSN,
                                    .end_lsn = T_END, .timestamp = T_TS, .xid = 902,
                                    .gid = "stream-gid"};
    return n;
}

static bool data_kind(enum pgo_kind k)
{
    return k == PGO_RELATION || k == PGO_TYPE || k == PGO_INSERT || k == PGO_UPDATE ||
           k == PGO_DELETE || k == PGO_TRUNCATE || k == PGO_MESSAGE;
}

static int min_version(enum pgo_kind k)
{
    switch (k) {
    case PGO_STREAM_START:
    case PGO_STREAM_STOP:
    case PGO_STREAM_COMMIT:
    case PGO_STREAM_ABORT:
        return 2;
    case PGO_BEGIN_PREPARE:
    case PGO_PREPARE:
    case PGO_COMMIT_PREPARED:
    case PGO_ROLLBACK_PREPARED:
    case PGO_STREAM_PREPARE:
        return 3;
    default:
        return 1;
    }
}

/* What decoding the encoding of m must give. */
static struct pgo_message expected(const struct pgo_message *m, int version, bool in_stream)
{
    struct pgo_message want = *m;
    if (data_kind(m->kind) && !in_stream)
        want.xid = 0;
    if (m->kind == PGO_STREAM_ABORT && version < 4)
        want.lsn = 0, want.timestamp = 0;
    return want;
}

/* ---- Round trips ------------------------------------------------------------ */

Test(pgoutput_roundtrip, every_kind_every_version)
{
    struct pgo_message ms[64];
    size_t n = samples(ms);
    int kinds_seen[256] = {0};
    int checked = 0;

    for (size_t i = 0; i < n; i++) {
        const struct pgo_message *m = &ms[i];
        kinds_seen[m->kind] = 1;
        for (int version = 1; version <= 4; version++) {
            for (int s = 0; s <= 1; s++) {
                bool in_stream = s == 1;
                bool valid = version >= min_version(m->kind) && (!in_stream || version >= 2);
                size_t need = pgo_encode(m, version, in_stream, NULL, 0);
                if (!valid) {
                    cr_assert_eq(need, 0, "%s encoded at v%d stream=%d",
                                 pgo_kind_name(m->kind), version, s);
                    continue;
                }
                cr_assert_gt(need, 0, "%s v%d stream=%d", pgo_kind_name(m->kind), version, s);
                uint8_t *buf = malloc(need);
                cr_assert_eq(pgo_encode(m, version, in_stream, buf, need), need);
                cr_assert_eq(buf[0], (uint8_t)m->kind);

                struct pgo_message d;
                char err[256];
                int rc = pgo_decode(buf, need, version, in_stream, &d, err, sizeof err);
                cr_assert_eq(rc, 0, "%s v%d stream=%d: %s", pgo_kind_name(m->kind), version, s,
                             err);
                struct pgo_message want = expected(m, version, in_stream);
                cr_assert(pgo_message_equal(&d, &want), "%s v%d stream=%d: fields differ",
                          pgo_kind_name(m->kind), version, s);

                /* Encoding the decoded message gives the same bytes. */
                uint8_t *again = malloc(need);
                cr_assert_eq(pgo_encode(&d, version, in_stream, again, need), need);
                cr_assert_eq(memcmp(buf, again, need), 0);

                /* A lower protocol version refuses kinds it does not have. */
                if (version > 1 && min_version(m->kind) == version && !in_stream) {
                    struct pgo_message e;
                    cr_assert_eq(pgo_decode(buf, need, version - 1, false, &e, err, sizeof err),
                                 -1);
                    cr_assert(strstr(err, "needs protocol version") != NULL, "%s", err);
                }
                pgo_message_free(&d);
                free(again);
                free(buf);
                checked++;
            }
        }
    }
    const char all[] = "BCORYIUDTMSEcAbPKrp";
    for (const char *k = all; *k; k++)
        cr_assert(kinds_seen[(unsigned char)*k], "no sample of kind '%c'", *k);
    cr_assert_gt(checked, 150);
}

Test(pgoutput_roundtrip, encode_reports_size_and_respects_cap)
{
    struct pgo_message ms[64];
    size_t n = samples(ms);
    for (size_t i = 0; i < n; i++) {
        int version = 4;
        size_t need = pgo_encode(&ms[i], version, false, NULL, 0);
        cr_assert_gt(need, 0);
        uint8_t *buf = malloc(need + 8);
        for (size_t cap = 0; cap < need; cap++) {
            memset(buf, 0xcc, need + 8);
            cr_assert_eq(pgo_encode(&ms[i], version, false, buf, cap), need);
            for (size_t j = cap; j < need + 8; j++)
                cr_assert_eq(buf[j], 0xcc, "wrote byte %zu past cap %zu", j, cap);
        }
        free(buf);
    }
}

Test(pgoutput_roundtrip, encode_refuses_what_decode_would_refuse)
{
    uint8_t buf[64];
    struct pgo_value bad_kind[] = {{.kind = 'x'}};
    struct pgo_message m = {.kind = PGO_INSERT, .new_tuple = {.ncols = 1, .values = bad_kind}};
    cr_assert_eq(pgo_encode(&m, 1, false, buf, sizeof buf), 0);

    m = (struct pgo_message){.kind = PGO_INSERT, .new_tuple = {.ncols = 1601, .values = sample_new}};
    cr_assert_eq(pgo_encode(&m, 1, false, buf, sizeof buf), 0);

    m = (struct pgo_message){.kind = PGO_DELETE, .old_kind = 0};
    cr_assert_eq(pgo_encode(&m, 1, false, buf, sizeof buf), 0);

    m = (struct pgo_message){.kind = PGO_UPDATE, .old_kind = 'N'};
    cr_assert_eq(pgo_encode(&m, 1, false, buf, sizeof buf), 0);

    m = (struct pgo_message){.kind = (enum pgo_kind)'Z'};
    cr_assert_eq(pgo_encode(&m, 1, false, buf, sizeof buf), 0);

    m = (struct pgo_message){.kind = PGO_STREAM_START, .xid = 1};
    cr_assert_eq(pgo_encode(&m, 1, false, buf, sizeof buf), 0);
    cr_assert_gt(pgo_encode(&m, 2, false, buf, sizeof buf), 0);

    m = (struct pgo_message){.kind = PGO_BEGIN};
    cr_assert_eq(pgo_encode(&m, 1, true, buf, sizeof buf), 0);
    cr_assert_eq(pgo_encode(&m, 0, false, buf, sizeof buf), 0);
    cr_assert_eq(pgo_encode(&m, 5, false, buf, sizeof buf), 0);

    m = (struct pgo_message){.kind = PGO_RELATION, .ncols = 1601, .columns = sample_columns};
    cr_assert_eq(pgo_encode(&m, 1, false, buf, sizeof buf), 0);

    m = (struct pgo_message){.kind = PGO_TRUNCATE, .nrelids = (1 << 20) + 1,
                             .relids = sample_relids};
    cr_assert_eq(pgo_encode(&m, 1, false, buf, sizeof buf), 0);
}

Test(pgoutput_roundtrip, equal_notices_differences)
{
    struct pgo_message ms[64];
    samples(ms);
    struct pgo_message a = ms[9]; /* Insert with six values */
    cr_assert_eq(a.kind, PGO_INSERT);
    struct pgo_value vals[LEN(sample_new)];
    memcpy(vals, sample_new, sizeof vals);
    struct pgo_message b = a;
    b.new_tuple.values = vals;
    cr_assert(pgo_message_equal(&a, &b));
    uint8_t other[8] = {0x80, 0, 0, 0, 0, 0, 0, 0x02};
    vals[3].data = other;
    cr_assert_not(pgo_message_equal(&a, &b));
    vals[3].data = bin8;
    vals[0].kind = 'u';
    cr_assert_not(pgo_message_equal(&a, &b));
    vals[0].kind = 'n';
    b.relid++;
    cr_assert_not(pgo_message_equal(&a, &b));
}

/* ---- Hand-written vectors ---------------------------------------------------- */

#define LSN_BYTES 0x00, 0x00, 0x00, 0x00, 0x01, 0x6B, 0x37, 0x48 /* 0/16B3748 */
#define END_BYTES 0x00, 0x00, 0x00, 0x00, 0x01, 0x6B, 0x37, 0x90 /* 0/16B3790 */
#define TS_BYTES 0x00, 0x02, 0x8A, 0x4F, 0x3B, 0x2C, 0x1D, 0x0E
#define RELID_BYTES 0x00, 0x00, 0x40, 0x01 /* 16385 */

static const uint8_t v_begin[] = {'B', LSN_BYTES, TS_BYTES, 0x00, 0x00, 0x02, 0x10};
static const uint8_t v_commit[] = {'C', 0x00, LSN_BYTES, END_BYTES, TS_BYTES};
static const uint8_t v_origin[] = {'O', LSN_BYTES, 'n', 'o', 'd', 'e', '1', 0};
static const uint8_t v_relation[] = {
    'R', RELID_BYTES, 'p', 'u', 'b', 'l', 'i', 'c', 0, 't', 'r', 'i', 'p', 's', 0, 'd',
    0x00, 0x03, /* three columns */
    0x01, 'i', 'd', 0, 0x00, 0x00, 0x00, 0x14, 0xFF, 0xFF, 0xFF, 0xFF,      /* int8, -1 */
    0x00, 'f', 'a', 'r', 'e', 0, 0x00, 0x00, 0x06, 0xA4, 0x00, 0x0A, 0x00, 0x06, /* numeric(10,2) */
    0x00, 'n', 'o', 't', 'e', 0, 0x00, 0x00, 0x00, 0x19, 0xFF, 0xFF, 0xFF, 0xFF, /* text */
};
static const uint8_t v_type[] = {'Y', 0x00, 0x00, 0x40, 0x10, 0, 'm', 'o', 'o', 'd', 0};
static const uint8_t v_insert[] = {
    'I', RELID_BYTES, 'N', 0x00, 0x04,
    'n',
    'u',
    't', 0x00, 0x00, 0x00, 0x03, '4', '2', '7',
    'b', 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xAB,
};
static const uint8_t v_insert_stream[] = {
    'I', 0x00, 0x00, 0x03, 0x09, RELID_BYTES, 'N', 0x00, 0x01, 't', 0x00, 0x00, 0x00, 0x00,
};
static const uint8_t v_update_old[] = {
    'U', RELID_BYTES,
    'O', 0x00, 0x02, 't', 0x00, 0x00, 0x00, 0x01, '1', 't', 0x00, 0x00, 0x00, 0x02, 'a', 'b',
    'N', 0x00, 0x02, 't', 0x00, 0x00, 0x00, 0x01, '1', 'u',
};
static const uint8_t v_update_new_only[] = {
    'U', RELID_BYTES, 'N', 0x00, 0x01, 'n',
};
static const uint8_t v_delete_key[] = {
    'D', RELID_BYTES, 'K', 0x00, 0x01, 't', 0x00, 0x00, 0x00, 0x01, '7',
};
static const uint8_t v_truncate[] = {
    'T', 0x00, 0x00, 0x00, 0x02, 0x03, 0x00, 0x00, 0x40, 0x01, 0x00, 0x00, 0x40, 0x02,
};
static const uint8_t v_message[] = {
    'M', 0x01, LSN_BYTES, 'p', 'f', 'x', 0, 0x00, 0x00, 0x00, 0x02, 'h', 'i',
};
static const uint8_t v_stream_start[] = {'S', 0x00, 0x00, 0x03, 0x09, 0x01};
static const uint8_t v_stream_stop[] = {'E'};
static const uint8_t v_stream_commit[] = {
    'c', 0x00, 0x00, 0x03, 0x09, 0x00, LSN_BYTES, END_BYTES, TS_BYTES,
};
static const uint8_t v_stream_abort_v2[] = {'A', 0x00, 0x00, 0x03, 0x09, 0x00, 0x00, 0x03, 0x0A};
static const uint8_t v_stream_abort_v4[] = {
    'A', 0x00, 0x00, 0x03, 0x09, 0x00, 0x00, 0x03, 0x09, LSN_BYTES, TS_BYTES,
};
static const uint8_t v_rollback_prepared[] = {
    'r', 0x00, LSN_BYTES, END_BYTES,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, /* prepare time 1 */
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* rollback time -1 */
    0x00, 0x00, 0x03, 0x84, 'g', '1', 0,
};
static const uint8_t v_begin_prepare[] = {
    'b', LSN_BYTES, END_BYTES, TS_BYTES, 0x00, 0x00, 0x03, 0x84, 'g', '1', 0,
};

Test(pgoutput_vectors, begin)
{
    struct pgo_message m;
    decode_ok(v_begin, sizeof v_begin, 1, false, &m);
    cr_assert_eq(m.kind, PGO_BEGIN);
    cr_assert_eq(m.lsn, T_LSN);
    cr_assert_eq(m.timestamp, T_TS);
    cr_assert_eq(m.xid, 528);
    pgo_message_free(&m);
}

Test(pgoutput_vectors, commit)
{
    struct pgo_message m;
    decode_ok(v_commit, sizeof v_commit, 1, false, &m);
    cr_assert_eq(m.kind, PGO_COMMIT);
    cr_assert_eq(m.flags, 0);
    cr_assert_eq(m.lsn, T_LSN);
    cr_assert_eq(m.end_lsn, T_END);
    cr_assert_eq(m.timestamp, T_TS);
    pgo_message_free(&m);
}

Test(pgoutput_vectors, origin)
{
    struct pgo_message m;
    decode_ok(v_origin, sizeof v_origin, 1, false, &m);
    cr_assert_eq(m.kind, PGO_ORIGIN);
    cr_assert_eq(m.lsn, T_LSN);
    cr_assert_str_eq(m.origin_name, "node1");
    cr_assert_eq((const void *)m.origin_name, (const void *)(v_origin + 9));
    pgo_message_free(&m);
}

Test(pgoutput_vectors, relation)
{
    struct pgo_message m;
    decode_ok(v_relation, sizeof v_relation, 1, false, &m);
    cr_assert_eq(m.kind, PGO_RELATION);
    cr_assert_eq(m.xid, 0);
    cr_assert_eq(m.relid, 16385);
    cr_assert_str_eq(m.nspname, "public");
    cr_assert_str_eq(m.relname, "trips");
    cr_assert_eq(m.replident, 'd');
    cr_assert_eq(m.ncols, 3);
    cr_assert_eq(m.columns[0].flags, 1);
    cr_assert_str_eq(m.columns[0].name, "id");
    cr_assert_eq(m.columns[0].type_oid, 20);
    cr_assert_eq(m.columns[0].typmod, -1);
    cr_assert_eq(m.columns[1].flags, 0);
    cr_assert_str_eq(m.columns[1].name, "fare");
    cr_assert_eq(m.columns[1].type_oid, 1700);
    cr_assert_eq(m.columns[1].typmod, (10 << 16 | 2) + 4);
    cr_assert_str_eq(m.columns[2].name, "note");
    cr_assert_eq(m.columns[2].type_oid, 25);

    /* Re-encoding gives PostgreSQL's bytes back. */
    uint8_t buf[sizeof v_relation];
    cr_assert_eq(pgo_encode(&m, 1, false, buf, sizeof buf), sizeof v_relation);
    cr_assert_eq(memcmp(buf, v_relation, sizeof buf), 0);
    pgo_message_free(&m);
}

Test(pgoutput_vectors, type_with_pg_catalog_namespace)
{
    struct pgo_message m;
    decode_ok(v_type, sizeof v_type, 1, false, &m);
    cr_assert_eq(m.kind, PGO_TYPE);
    cr_assert_eq(m.relid, 16400);
    cr_assert_str_eq(m.nspname, "pg_catalog"); /* "" on the wire */
    cr_assert_str_eq(m.relname, "mood");
    uint8_t buf[sizeof v_type];
    cr_assert_eq(pgo_encode(&m, 1, false, buf, sizeof buf), sizeof v_type);
    cr_assert_eq(memcmp(buf, v_type, sizeof buf), 0);
    pgo_message_free(&m);
}

Test(pgoutput_vectors, insert_with_every_value_kind)
{
    struct pgo_message m;
    decode_ok(v_insert, sizeof v_insert, 1, false, &m);
    cr_assert_eq(m.kind, PGO_INSERT);
    cr_assert_eq(m.relid, 16385);
    cr_assert_eq(m.old_kind, 0);
    cr_assert_eq(m.old_tuple.ncols, 0);
    cr_assert_eq(m.new_tuple.ncols, 4);
    const struct pgo_value *v = m.new_tuple.values;
    cr_assert_eq(v[0].kind, 'n');
    cr_assert_eq(v[0].len, 0);
    cr_assert_eq(v[1].kind, 'u');
    cr_assert_eq(v[1].len, 0);
    cr_assert_eq(v[2].kind, 't');
    cr_assert_eq(v[2].len, 3);
    cr_assert_eq(memcmp(v[2].data, "427", 3), 0);
    cr_assert_eq(v[3].kind, 'b');
    cr_assert_eq(v[3].len, 8);
    cr_assert_eq(be64(v[3].data), 0x1AB);
    cr_assert_eq((const void *)v[3].data, (const void *)(v_insert + sizeof v_insert - 8));
    pgo_message_free(&m);
    cr_assert(is_zeroed(&m));
}

Test(pgoutput_vectors, insert_in_stream_has_xid)
{
    struct pgo_message m;
    decode_ok(v_insert_stream, sizeof v_insert_stream, 2, true, &m);
    cr_assert_eq(m.kind, PGO_INSERT);
    cr_assert_eq(m.xid, 0x309);
    cr_assert_eq(m.relid, 16385);
    cr_assert_eq(m.new_tuple.ncols, 1);
    cr_assert_eq(m.new_tuple.values[0].kind, 't');
    cr_assert_eq(m.new_tuple.values[0].len, 0);
    cr_assert_not_null(m.new_tuple.values[0].data);
    pgo_message_free(&m);

    /* Outside a stream the same bytes are misread and must not decode. */
    expect_error(v_insert_stream, sizeof v_insert_stream, 2, false, NULL);
}

Test(pgoutput_vectors, update_with_old_tuple)
{
    struct pgo_message m;
    decode_ok(v_update_old, sizeof v_update_old, 1, false, &m);
    cr_assert_eq(m.kind, PGO_UPDATE);
    cr_assert_eq(m.relid, 16385);
    cr_assert_eq(m.old_kind, 'O');
    cr_assert_eq(m.old_tuple.ncols, 2);
    cr_assert_eq(m.old_tuple.values[1].kind, 't');
    cr_assert_eq(m.old_tuple.values[1].len, 2);
    cr_assert_eq(memcmp(m.old_tuple.values[1].data, "ab", 2), 0);
    cr_assert_eq(m.new_tuple.ncols, 2);
    cr_assert_eq(m.new_tuple.values[0].kind, 't');
    cr_assert_eq(m.new_tuple.values[0].data[0], '1');
    cr_assert_eq(m.new_tuple.values[1].kind, 'u');
    pgo_message_free(&m);

    decode_ok(v_update_new_only, sizeof v_update_new_only, 1, false, &m);
    cr_assert_eq(m.old_kind, 0);
    cr_assert_eq(m.old_tuple.ncols, 0);
    cr_assert_null(m.old_tuple.values);
    cr_assert_eq(m.new_tuple.ncols, 1);
    cr_assert_eq(m.new_tuple.values[0].kind, 'n');
    pgo_message_free(&m);
}

Test(pgoutput_vectors, delete_with_key)
{
    struct pgo_message m;
    decode_ok(v_delete_key, sizeof v_delete_key, 1, false, &m);
    cr_assert_eq(m.kind, PGO_DELETE);
    cr_assert_eq(m.relid, 16385);
    cr_assert_eq(m.old_kind, 'K');
    cr_assert_eq(m.old_tuple.ncols, 1);
    cr_assert_eq(m.old_tuple.values[0].kind, 't');
    cr_assert_eq(m.old_tuple.values[0].data[0], '7');
    cr_assert_eq(m.new_tuple.ncols, 0);
    pgo_message_free(&m);
}

Test(pgoutput_vectors, truncate)
{
    struct pgo_message m;
    decode_ok(v_truncate, sizeof v_truncate, 1, false, &m);
    cr_assert_eq(m.kind, PGO_TRUNCATE);
    cr_assert_eq(m.truncate_options, 3);
    cr_assert_eq(m.nrelids, 2);
    cr_assert_eq(m.relids[0], 16385);
    cr_assert_eq(m.relids[1], 16386);
    pgo_message_free(&m);
}

Test(pgoutput_vectors, logical_decoding_message)
{
    struct pgo_message m;
    decode_ok(v_message, sizeof v_message, 1, false, &m);
    cr_assert_eq(m.kind, PGO_MESSAGE);
    cr_assert_eq(m.flags, 1);
    cr_assert_eq(m.lsn, T_LSN);
    cr_assert_str_eq(m.prefix, "pfx");
    cr_assert_eq(m.content_len, 2);
    cr_assert_eq(memcmp(m.content, "hi", 2), 0);
    pgo_message_free(&m);
}

Test(pgoutput_vectors, stream_start_stop_commit)
{
    struct pgo_message m;
    decode_ok(v_stream_start, sizeof v_stream_start, 2, false, &m);
    cr_assert_eq(m.kind, PGO_STREAM_START);
    cr_assert_eq(m.xid, 0x309);
    cr_assert(m.first_segment);
    pgo_message_free(&m);

    decode_ok(v_stream_stop, sizeof v_stream_stop, 2, true, &m);
    cr_assert_eq(m.kind, PGO_STREAM_STOP);
    pgo_message_free(&m);

    decode_ok(v_stream_commit, sizeof v_stream_commit, 2, false, &m);
    cr_assert_eq(m.kind, PGO_STREAM_COMMIT);
    cr_assert_eq(m.xid, 0x309);
    cr_assert_eq(m.flags, 0);
    cr_assert_eq(m.lsn, T_LSN);
    cr_assert_eq(m.end_lsn, T_END);
    cr_assert_eq(m.timestamp, T_TS);
    pgo_message_free(&m);
}

Test(pgoutput_vectors, stream_abort_v2_and_v4)
{
    struct pgo_message m;
    for (int version = 2; version <= 4; version++) {
        decode_ok(v_stream_abort_v2, sizeof v_stream_abort_v2, version, false, &m);
        cr_assert_eq(m.kind, PGO_STREAM_ABORT);
        cr_assert_eq(m.xid, 0x309);
        cr_assert_eq(m.subxid, 0x30A);
        cr_assert_eq(m.lsn, 0);
        cr_assert_eq(m.timestamp, 0);
        uint8_t buf[32];
        cr_assert_eq(pgo_encode(&m, version, false, buf, sizeof buf), sizeof v_stream_abort_v2);
        cr_assert_eq(memcmp(buf, v_stream_abort_v2, sizeof v_stream_abort_v2), 0);
        pgo_message_free(&m);
    }

    decode_ok(v_stream_abort_v4, sizeof v_stream_abort_v4, 4, false, &m);
    cr_assert_eq(m.xid, 0x309);
    cr_assert_eq(m.subxid, 0x309);
    cr_assert_eq(m.lsn, T_LSN);
    cr_assert_eq(m.timestamp, T_TS);
    uint8_t buf[32];
    cr_assert_eq(pgo_encode(&m, 4, false, buf, sizeof buf), sizeof v_stream_abort_v4);
    cr_assert_eq(memcmp(buf, v_stream_abort_v4, sizeof v_stream_abort_v4), 0);
    pgo_message_free(&m);

    /* Before protocol 4 the abort LSN and time are trailing garbage. */
    expect_error(v_stream_abort_v4, sizeof v_stream_abort_v4, 3, false,
                 "Stream Abort message: 16 trailing bytes");
    /* A v4 abort with half the abort info is truncated. */
    expect_error(v_stream_abort_v4, 13, 4, false, "Stream Abort message: truncated at abort LSN");
    expect_error(v_stream_abort_v4, 20, 4, false,
                 "Stream Abort message: truncated at abort timestamp");
}

Test(pgoutput_vectors, two_phase)
{
    struct pgo_message m;
    decode_ok(v_rollback_prepared, sizeof v_rollback_prepared, 3, false, &m);
    cr_assert_eq(m.kind, PGO_ROLLBACK_PREPARED);
    cr_assert_eq(m.lsn, T_LSN);
    cr_assert_eq(m.end_lsn, T_END);
    cr_assert_eq(m.prepare_time, 1);
    cr_assert_eq(m.timestamp, -1);
    cr_assert_eq(m.xid, 900);
    cr_assert_str_eq(m.gid, "g1");
    pgo_message_free(&m);

    decode_ok(v_begin_prepare, sizeof v_begin_prepare, 4, false, &m);
    cr_assert_eq(m.kind, PGO_BEGIN_PREPARE);
    cr_assert_eq(m.lsn, T_LSN);
    cr_assert_eq(m.end_lsn, T_END);
    cr_assert_eq(m.timestamp, T_TS);
    cr_assert_eq(m.xid, 900);
    cr_assert_str_eq(m.gid, "g1");
    pgo_message_free(&m);

    expect_error(v_begin_prepare, sizeof v_begin_prepare, 2, false,
                 "Begin Prepare message: needs protocol version 3 or later, got 2");
}

/* ---- Framing ---------------------------------------------------------------- */

static const uint8_t v_keepalive[] = {'k', LSN_BYTES, TS_BYTES, 0x01};
static const uint8_t v_xlogdata[] = {'w', LSN_BYTES, END_BYTES, TS_BYTES, 'E'};

Test(pgoutput_frames, keepalive)
{
    struct wal_frame f;
    char err[128];
    cr_assert_eq(wal_frame_decode(v_keepalive, sizeof v_keepalive, &f, err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(f.kind, 'k');
    cr_assert_eq(f.wal_end, T_LSN);
    cr_assert_eq(f.send_time, T_TS);
    cr_assert(f.reply_requested);
    cr_assert_null(f.payload);

    uint8_t buf[32];
    cr_assert_eq(wal_frame_encode(&f, buf, sizeof buf), sizeof v_keepalive);
    cr_assert_eq(memcmp(buf, v_keepalive, sizeof v_keepalive), 0);

    uint8_t no_reply[sizeof v_keepalive];
    memcpy(no_reply, v_keepalive, sizeof no_reply);
    no_reply[17] = 0;
    cr_assert_eq(wal_frame_decode(no_reply, sizeof no_reply, &f, err, sizeof err), 0);
    cr_assert_not(f.reply_requested);

    for (size_t k = 0; k < sizeof v_keepalive; k++) {
        uint8_t *copy = malloc(k + 1);
        memcpy(copy, v_keepalive, k);
        cr_assert_eq(wal_frame_decode(copy, k, &f, err, sizeof err), -1, "prefix %zu", k);
        cr_assert(err[0] != '\0');
        cr_assert_eq(f.kind, 0);
        free(copy);
    }
    uint8_t longer[sizeof v_keepalive + 2] = {0};
    memcpy(longer, v_keepalive, sizeof v_keepalive);
    cr_assert_eq(wal_frame_decode(longer, sizeof longer, &f, err, sizeof err), -1);
    cr_assert_str_eq(err, "keepalive message: 2 trailing bytes");
    cr_assert_eq(wal_frame_decode(v_keepalive, 9, &f, err, sizeof err), -1);
    cr_assert_str_eq(err, "keepalive message: truncated at send time");
}

Test(pgoutput_frames, xlogdata)
{
    struct wal_frame f;
    char err[128];
    cr_assert_eq(wal_frame_decode(v_xlogdata, sizeof v_xlogdata, &f, err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(f.kind, 'w');
    cr_assert_eq(f.wal_start, T_LSN);
    cr_assert_eq(f.wal_end, T_END);
    cr_assert_eq(f.send_time, T_TS);
    cr_assert_not(f.reply_requested);
    cr_assert_eq(f.payload_len, 1);
    cr_assert_eq((const void *)f.payload, (const void *)(v_xlogdata + 25));

    struct pgo_message m;
    decode_ok(f.payload, f.payload_len, 2, true, &m);
    cr_assert_eq(m.kind, PGO_STREAM_STOP);
    pgo_message_free(&m);

    uint8_t buf[32];
    cr_assert_eq(wal_frame_encode(&f, buf, sizeof buf), sizeof v_xlogdata);
    cr_assert_eq(memcmp(buf, v_xlogdata, sizeof v_xlogdata), 0);

    /* An empty payload is a valid frame (and an invalid pgoutput message). */
    cr_assert_eq(wal_frame_decode(v_xlogdata, 25, &f, err, sizeof err), 0);
    cr_assert_eq(f.payload_len, 0);

    for (size_t k = 0; k < 25; k++) {
        uint8_t *copy = malloc(k + 1);
        memcpy(copy, v_xlogdata, k);
        cr_assert_eq(wal_frame_decode(copy, k, &f, err, sizeof err), -1, "prefix %zu", k);
        cr_assert(err[0] != '\0');
        free(copy);
    }
    cr_assert_eq(wal_frame_decode(v_xlogdata, 5, &f, err, sizeof err), -1);
    cr_assert_str_eq(err, "XLogData message: truncated at WAL start");
    cr_assert_eq(wal_frame_decode(v_xlogdata, 20, &f, err, sizeof err), -1);
    cr_assert_str_eq(err, "XLogData message: truncated at send time");
}

Test(pgoutput_frames, unknown_and_empty)
{
    struct wal_frame f;
    char err[128];
    const uint8_t r[] = {'r', 0};
    cr_assert_eq(wal_frame_decode(r, sizeof r, &f, err, sizeof err), -1);
    cr_assert_str_eq(err, "unknown replication message 'r' (0x72)");
    cr_assert_eq(wal_frame_decode(NULL, 0, &f, err, sizeof err), -1);
    cr_assert_str_eq(err, "replication message: empty message");
    /* err may be NULL. */
    cr_assert_eq(wal_frame_decode(r, sizeof r, &f, NULL, 0), -1);
}

Test(pgoutput_frames, status_update_bytes)
{
    uint8_t out[WAL_STATUS_BYTES];
    memset(out, 0xcc, sizeof out);
    wal_status_encode(out, 0x16B3748, 0x16B3700, 0x16B3600, T_TS, true);
    static const uint8_t want[WAL_STATUS_BYTES] = {
        'r',
        0x00, 0x00, 0x00, 0x00, 0x01, 0x6B, 0x37, 0x48, /* written */
        0x00, 0x00, 0x00, 0x00, 0x01, 0x6B, 0x37, 0x00, /* flushed */
        0x00, 0x00, 0x00, 0x00, 0x01, 0x6B, 0x36, 0x00, /* applied */
        TS_BYTES,                                       /* client time */
        0x01,                                           /* reply requested */
    };
    cr_assert_eq(memcmp(out, want, sizeof want), 0);

    wal_status_encode(out, 0, 0, 0, -2, false);
    cr_assert_eq(out[0], 'r');
    cr_assert_eq(be64(out + 25), UINT64_MAX - 1);
    cr_assert_eq(out[33], 0);
}

/* ---- Hostile input ------------------------------------------------------------ */

Test(pgoutput_hostile, every_strict_prefix_fails)
{
    struct {
        const uint8_t *bytes;
        size_t len;
        int version;
        bool in_stream;
    } vs[] = {
        {v_begin, sizeof v_begin, 1, false},
        {v_commit, sizeof v_commit, 1, false},
        {v_origin, sizeof v_origin, 1, false},
        {v_relation, sizeof v_relation, 1, false},
        {v_type, sizeof v_type, 1, false},
        {v_insert, sizeof v_insert, 1, false},
        {v_insert_stream, sizeof v_insert_stream, 2, true},
        {v_update_old, sizeof v_update_old, 1, false},
        {v_update_new_only, sizeof v_update_new_only, 1, false},
        {v_delete_key, sizeof v_delete_key, 1, false},
        {v_truncate, sizeof v_truncate, 1, false},
        {v_message, sizeof v_message, 1, false},
        {v_stream_start, sizeof v_stream_start, 2, false},
        {v_stream_stop, sizeof v_stream_stop, 2, true},
        {v_stream_commit, sizeof v_stream_commit, 2, false},
        {v_stream_abort_v2, sizeof v_stream_abort_v2, 2, false},
        {v_rollback_prepared, sizeof v_rollback_prepared, 3, false},
        {v_begin_prepare, sizeof v_begin_prepare, 3, false},
    };
    for (size_t i = 0; i < LEN(vs); i++) {
        struct pgo_message m;
        decode_ok(vs[i].bytes, vs[i].len, vs[i].version, vs[i].in_stream, &m);
        pgo_message_free(&m);
        expect_prefixes_fail(vs[i].bytes, vs[i].len, vs[i].version, vs[i].in_stream);
    }

    /* The same for every round-trip sample at protocol 4, in and out of a
     * stream. The v4 Stream Abort's 9-byte prefix is the short form, so
     * only its prefixes shorter than that must fail. */
    struct pgo_message ms[64];
    size_t n = samples(ms);
    for (size_t i = 0; i < n; i++) {
        for (int s = 0; s <= 1; s++) {
            size_t need = pgo_encode(&ms[i], 4, s, NULL, 0);
            uint8_t *buf = malloc(need);
            pgo_encode(&ms[i], 4, s, buf, need);
            if (ms[i].kind == PGO_STREAM_ABORT) {
                /* One byte more than the short form reads as a truncated
                 * long form, not as trailing garbage. */
                for (size_t k = 0; k < need; k++)
                    if (k != 9)
                        expect_error(buf, k, 4, s, NULL);
            } else {
                expect_prefixes_fail(buf, need, 4, s);
            }
            free(buf);
        }
    }
}

Test(pgoutput_hostile, exact_errors)
{
    const uint8_t z[] = {'Z', 1, 2};
    expect_error(z, sizeof z, 1, false, "unknown pgoutput message 'Z' (0x5A)");
    const uint8_t nul[] = {0x00};
    expect_error(nul, sizeof nul, 1, false, "unknown pgoutput message 0x00");
    const uint8_t high[] = {0xC3, 0xA9};
    expect_error(high, sizeof high, 4, true, "unknown pgoutput message 0xC3");
    expect_error(NULL, 0, 1, false, "pgoutput: empty message");
    expect_error(v_begin, sizeof v_begin, 0, false, "pgoutput: unsupported protocol version 0");
    expect_error(v_begin, sizeof v_begin, 5, false, "pgoutput: unsupported protocol version 5");
    expect_error(v_begin, sizeof v_begin, 1, true,
                 "pgoutput: in_stream needs protocol version 2 or later, got 1");
    expect_error(v_stream_start, sizeof v_stream_start, 1, false,
                 "Stream Start message: needs protocol version 2 or later, got 1");

    /* Cut inside the third column's name ("no" of "note"). */
    size_t cut = 1 + 4 + 7 + 6 + 1 + 2 + 12 + 14 + 1 + 2;
    expect_error(v_relation, cut, 1, false, "Relation message: truncated at column 3 name");
    expect_error(v_relation, 1 + 4 + 3, 1, false, "Relation message: truncated at namespace");
    expect_error(v_relation, 1 + 4 + 7 + 6 + 1, 1, false,
                 "Relation message: truncated at column count");
    expect_error(v_relation, 1 + 4 + 7 + 6 + 1 + 2 + 12 + 8, 1, false,
                 "Relation message: truncated at column 2 type OID");
    expect_error(v_insert_stream, 3, 2, true, "Insert message: truncated at xid");
    expect_error(v_begin, 12, 1, false, "Begin message: truncated at commit timestamp");
    expect_error(v_commit, 1, 1, false, "Commit message: truncated at flags");
    expect_error(v_message, 13, 1, false, "Logical decoding message: truncated at prefix");

    uint8_t longer[sizeof v_begin + 1];
    memcpy(longer, v_begin, sizeof v_begin);
    longer[sizeof v_begin] = 0xff;
    expect_error(longer, sizeof longer, 1, false, "Begin message: 1 trailing byte");

    uint8_t bad_kind[sizeof v_insert];
    memcpy(bad_kind, v_insert, sizeof bad_kind);
    bad_kind[9] = 'x'; /* second value's kind, was 'u' */
    expect_error(bad_kind, sizeof bad_kind, 1, false,
                 "Insert message: new tuple column 2 has unknown kind 'x' (0x78)");

    const uint8_t insert_no_n[] = {'I', RELID_BYTES, 'K', 0x00, 0x00};
    expect_error(insert_no_n, sizeof insert_no_n, 1, false,
                 "Insert message: expected 'N' (new tuple), got 'K' (0x4B)");
    const uint8_t update_bad[] = {'U', RELID_BYTES, 'X', 0x00, 0x00};
    expect_error(update_bad, sizeof update_bad, 1, false,
                 "Update message: expected 'K', 'O' or 'N', got 'X' (0x58)");
    const uint8_t update_no_n[] = {'U', RELID_BYTES, 'K', 0x00, 0x00, 'K', 0x00, 0x00};
    expect_error(update_no_n, sizeof update_no_n, 1, false,
                 "Update message: expected 'N' (new tuple), got 'K' (0x4B)");
    const uint8_t delete_n[] = {'D', RELID_BYTES, 'N', 0x00, 0x00};
    expect_error(delete_n, sizeof delete_n, 1, false,
                 "Delete message: expected 'K' (key) or 'O' (old tuple), got 'N' (0x4E)");
    expect_error(v_update_old, 14, 1, false,
                 "Update message: truncated at old tuple column 2 kind");
    expect_error(v_delete_key, 10, 1, false,
                 "Delete message: truncated at old key column 1 length");
}

Test(pgoutput_hostile, huge_counts_fail_before_allocating)
{
    const uint8_t trunc_huge[] = {'T', 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x40, 0x01};
    expect_error(trunc_huge, sizeof trunc_huge, 1, false,
                 "Truncate message: 4294967295 relations, more than 1048576");
    const uint8_t trunc_short[] = {'T', 0x00, 0x00, 0x03, 0xE8, 0x00, 0x00, 0x00, 0x40, 0x01,
                                   0x00, 0x00, 0x40, 0x02};
    expect_error(trunc_short, sizeof trunc_short, 1, false,
                 "Truncate message: 1000 relations need 4000 bytes, only 8 left");
    const uint8_t trunc_limit[] = {'T', 0x00, 0x10, 0x00, 0x01, 0x00};
    expect_error(trunc_limit, sizeof trunc_limit, 1, false,
                 "Truncate message: 1048577 relations, more than 1048576");

    const uint8_t rel_huge[] = {'R', RELID_BYTES, 0, 't', 0, 'd', 0xFF, 0xFF};
    expect_error(rel_huge, sizeof rel_huge, 1, false,
                 "Relation message: 65535 columns, more than 1600");
    const uint8_t rel_1601[] = {'R', RELID_BYTES, 0, 't', 0, 'd', 0x06, 0x41};
    expect_error(rel_1601, sizeof rel_1601, 1, false,
                 "Relation message: 1601 columns, more than 1600");
    /* 1600 columns announced, none sent: a small allocation, then truncated. */
    const uint8_t rel_1600[] = {'R', RELID_BYTES, 0, 't', 0, 'd', 0x06, 0x40};
    expect_error(rel_1600, sizeof rel_1600, 1, false,
                 "Relation message: truncated at column 1 flags");

    const uint8_t tup_huge[] = {'I', RELID_BYTES, 'N', 0xFF, 0xFF, 'n'};
    expect_error(tup_huge, sizeof tup_huge, 1, false,
                 "Insert message: new tuple has 65535 columns, more than 1600");
    const uint8_t len_huge[] = {'I', RELID_BYTES, 'N', 0x00, 0x01, 't', 0xFF, 0xFF, 0xFF, 0xFF,
                                'a'};
    expect_error(len_huge, sizeof len_huge, 1, false,
                 "Insert message: new tuple column 1 length 4294967295 exceeds the 1 bytes left");
    const uint8_t len_big[] = {'I', RELID_BYTES, 'N', 0x00, 0x01, 'b', 0x7F, 0xFF, 0xFF, 0xFF};
    expect_error(len_big, sizeof len_big, 1, false,
                 "Insert message: new tuple column 1 length 2147483647 exceeds the 0 bytes left");
    const uint8_t msg_huge[] = {'M', 0x00, LSN_BYTES, 0, 0xFF, 0xFF, 0xFF, 0xFF, 'x'};
    expect_error(msg_huge, sizeof msg_huge, 1, false,
                 "Logical decoding message: content length 4294967295 exceeds the 1 bytes left");
}

Test(pgoutput_hostile, strings_need_their_nul)
{
    const uint8_t origin[] = {'O', LSN_BYTES, 'a', 'b', 'c'};
    expect_error(origin, sizeof origin, 1, false, "Origin message: truncated at origin name");
    const uint8_t gid[] = {'K', 0x00, LSN_BYTES, END_BYTES, TS_BYTES, 0, 0, 0, 1, 'g'};
    expect_error(gid, sizeof gid, 3, false, "Commit Prepared message: truncated at gid");
}

Test(pgoutput_hostile, free_is_safe)
{
    struct pgo_message m;
    memset(&m, 0, sizeof m);
    pgo_message_free(&m);
    pgo_message_free(&m);
    pgo_message_free(NULL);

    /* A failure after allocating (old tuple decoded, new tuple truncated)
     * leaves nothing to free; freeing anyway is harmless. */
    char err[128];
    cr_assert_eq(pgo_decode(v_update_old, sizeof v_update_old - 1, 1, false, &m, err, sizeof err),
                 -1);
    cr_assert_str_eq(err, "Update message: truncated at new tuple column 2 kind");
    cr_assert(is_zeroed(&m));
    pgo_message_free(&m);

    /* err may be NULL or tiny. */
    cr_assert_eq(pgo_decode(v_begin, 3, 1, false, &m, NULL, 0), -1);
    char tiny[8];
    cr_assert_eq(pgo_decode(v_begin, 3, 1, false, &m, tiny, sizeof tiny), -1);
    cr_assert_str_eq(tiny, "Begin m");
}

Test(pgoutput_names, kind_names)
{
    cr_assert_str_eq(pgo_kind_name(PGO_STREAM_COMMIT), "Stream Commit");
    cr_assert_str_eq(pgo_kind_name('r'), "Rollback Prepared");
    cr_assert_null(pgo_kind_name('Z'));
    cr_assert_null(pgo_kind_name(-1));
}
