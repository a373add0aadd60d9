/* fuzz_copy.c -- libFuzzer target for the binary COPY parser and the value
 * decoders.
 *
 * Input: byte 0 says how many chunk sizes follow (0 to 7), each one byte
 * (size = byte + 1); the rest is the COPY stream, fed in those chunk sizes
 * (cycled). Checks:
 *   - the parser never crashes or reads outside its buffer (ASan), and
 *     feeding the stream in chunks gives the same tuples and the same
 *     outcome (error message included) as feeding it whole;
 *   - every non-NULL field decodes, in binary and as text, as every
 *     supported type, and as a filter constant (store_code_of_value), or
 *     fails with a message;
 *   - decoded codes are never STORE_NULL, a numeric, date or float that
 *     decodes renders (store_code_format) to text that decodes back to the
 *     same code, and pgvalue_from_code gives back the value decoded;
 *   - the whole input, as the initial load's row record of a table with a
 *     column of every kind, is refused with a message or read as a row
 *     whose record reads back the same. */
#include "ingest/copy_binary.h"
#include "ingest/pgvalue.h"
#include "ingest/row_record.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    uint32_t oid;
    struct store_column_type t;
} kinds[] = {
    {PG_INT8, {STORE_TYPE_INT, 0, PG_INT8}},
    {PG_INT4, {STORE_TYPE_INT, 0, PG_INT4}},
    {PG_INT2, {STORE_TYPE_INT, 0, PG_INT2}},
    {PG_NUMERIC, {STORE_TYPE_NUMERIC, 2, PG_NUMERIC}},
    {PG_NUMERIC, {STORE_TYPE_NUMERIC, 6, PG_NUMERIC}},
    {PG_NUMERIC, {STORE_TYPE_INT, 0, PG_NUMERIC}},
    {PG_INT4, {STORE_TYPE_NUMERIC, 2, PG_INT4}},
    {PG_FLOAT8, {STORE_TYPE_FLOAT, 0, PG_FLOAT8}},
    {PG_FLOAT4, {STORE_TYPE_FLOAT, 0, PG_FLOAT4}},
    {PG_DATE, {STORE_TYPE_DATE, 0, PG_DATE}},
    {PG_DATE, {STORE_TYPE_TIMESTAMP, 0, PG_DATE}},
    {PG_TIMESTAMP, {STORE_TYPE_TIMESTAMP, 0, PG_TIMESTAMP}},
    {PG_TIMESTAMPTZ, {STORE_TYPE_TIMESTAMP, 0, PG_TIMESTAMPTZ}},
    {PG_BOOL, {STORE_TYPE_BOOL, 0, PG_BOOL}},
    {PG_TEXT, {STORE_TYPE_TEXT, 0, PG_TEXT}},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

static void check_failure(int rc, const char *err)
{
    if (rc != -1 || err[0] == '\0')
        abort();
}

/* A decoded value must be sane, and numbers, dates and floats must come
 * back from their rendering. */
static void check_value(uint32_t oid, const struct store_column_type *t, const struct pgvalue *v,
                        const uint8_t *data, size_t len)
{
    if (t->type == STORE_TYPE_TEXT) {
        if (v->len != len || (len && v->text != (const char *)data))
            abort();
        return;
    }
    if (v->code == STORE_NULL)
        abort();
    if (t->type != STORE_TYPE_FLOAT && v->exact != v->code)
        abort();
    struct pgvalue from_code;
    pgvalue_from_code(t, v->code, &from_code);
    if (from_code.code != v->code || from_code.exact != v->exact ||
        (memcmp(&from_code.real, &v->real, sizeof v->real) != 0 &&
         !(isnan(from_code.real) && isnan(v->real))))
        abort();
    char text[128], err[256];
    size_t n = store_code_format(t, v->code, text, sizeof text);
    if (n >= sizeof text)
        abort();
    struct pgvalue back;
    uint32_t text_oid = 0;
    switch (t->type) {
    case STORE_TYPE_NUMERIC: text_oid = PG_NUMERIC; break;
    case STORE_TYPE_INT: text_oid = PG_INT8; break;
    case STORE_TYPE_FLOAT: text_oid = t->pg_oid == PG_FLOAT4 ? PG_FLOAT4 : PG_FLOAT8; break;
    case STORE_TYPE_DATE: text_oid = PG_DATE; break;
    case STORE_TYPE_TIMESTAMP:
        text_oid = t->pg_oid == PG_TIMESTAMP ? PG_TIMESTAMP : PG_TIMESTAMPTZ;
        break;
    default: break;
    }
    (void)oid;
    if (text_oid == 0)
        return;
    if (pgvalue_decode_text(text_oid, t, text, n, &back, err, sizeof err) != 0)
        abort();
    if (back.code != v->code)
        abort();
    if (t->type != STORE_TYPE_FLOAT && back.real != v->real)
        abort();
}

static void decode_field(const uint8_t *data, size_t len)
{
    char err[256];
    struct pgvalue v;
    for (size_t k = 0; k < NKINDS; k++) {
        const struct store_column_type *t = &kinds[k].t;
        err[0] = '\0';
        int rc = pgvalue_decode_binary(kinds[k].oid, t, data, len, &v, err, sizeof err);
        if (rc == 0)
            check_value(kinds[k].oid, t, &v, data, len);
        else
            check_failure(rc, err);
        err[0] = '\0';
        rc = pgvalue_decode_text(kinds[k].oid, t, (const char *)data, len, &v, err, sizeof err);
        if (rc == 0)
            check_value(kinds[k].oid, t, &v, data, len);
        else
            check_failure(rc, err);
        err[0] = '\0';
        struct store_value sv = {STORE_VALUE_TEXT, false, (const char *)data, len};
        struct store_coded coded;
        rc = store_code_of_value(t, &sv, &coded, err, sizeof err);
        if (rc == STORE_CODE_OK) {
            if (t->type != STORE_TYPE_TEXT && coded.code == STORE_NULL)
                abort();
        } else if (rc != STORE_CODE_NONE && rc != STORE_CODE_REFUSED) {
            abort();
        } else if (err[0] == '\0') {
            abort();
        }
    }
}

/* A table with a column of every kind, for row records. */
static struct source_column record_cols[NKINDS];
static struct source_table record_table = {.qualified = "fuzz", .cols = record_cols,
                                           .ncols = (int)NKINDS};

static bool same_value(const struct store_column_type *t, const struct decoded_value *a,
                       const struct decoded_value *b)
{
    if (a->is_null || b->is_null)
        return a->is_null == b->is_null;
    if (t->type == STORE_TYPE_TEXT)
        return a->v.len == b->v.len && memcmp(a->v.text, b->v.text, a->v.len) == 0;
    return a->v.code == b->v.code && a->v.exact == b->v.exact;
}

static void check_record(const uint8_t *data, size_t len)
{
    for (size_t k = 0; k < NKINDS; k++)
        record_cols[k] = (struct source_column){.name = "c", .type = kinds[k].t};
    struct decoded_value row[NKINDS], back[NKINDS];
    char err[256] = "";
    if (row_record_decode(&record_table, data, len, row, err, sizeof err) != 0) {
        check_failure(-1, err);
        return;
    }
    struct row_record_buf buf = {0};
    size_t n = row_record_encode(&record_table, row, &buf);
    if (n == 0 || n > len || row_record_decode(&record_table, buf.bytes, n, back, err, sizeof err))
        abort();
    for (size_t k = 0; k < NKINDS; k++)
        if (!same_value(&kinds[k].t, &row[k], &back[k]))
            abort();
    row_record_buf_free(&buf);
}

/* FNV-1a over everything a tuple says. */
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t hash_tuple(uint64_t h, const struct copy_tuple *t)
{
    h = mix(h, &t->nfields, sizeof t->nfields);
    for (int i = 0; i < t->nfields; i++) {
        const struct copy_field *f = &t->fields[i];
        h = mix(h, &f->is_null, sizeof f->is_null);
        if (!f->is_null) {
            h = mix(h, &f->len, sizeof f->len);
            h = mix(h, f->data, f->len);
        }
    }
    return h;
}

struct outcome {
    uint64_t hash;
    int tuples;
    int rc; /* -1 error, 0 clean end, 1 ended without error but unfinished */
    char error[200];
};

static struct copy_tuple tuple;

static void run(const uint8_t *stream, size_t len, const uint8_t *sizes, size_t nsizes,
                bool decode, struct outcome *o)
{
    struct copy_parser p;
    copy_parser_init(&p);
    memset(o, 0, sizeof *o);
    o->hash = 0xcbf29ce484222325ULL;
    size_t at = 0, k = 0;
    int rc = 0;
    while (at < len && rc >= 0) {
        size_t n = nsizes ? (size_t)sizes[k++ % nsizes] + 1 : len;
        if (n > len - at)
            n = len - at;
        /* A chunk of its own, freed once drained as libpq's are: ASan sees
         * a parser that reads a lent chunk after next kept what it needs.
         * Odd chunk sizes are lent, even ones fed (copied). */
        uint8_t *chunk = malloc(n);
        if (!chunk)
            abort();
        memcpy(chunk, stream + at, n);
        if ((n % 2 ? copy_parser_lend(&p, chunk, n) : copy_parser_feed(&p, chunk, n)) != 0)
            abort();
        at += n;
        while ((rc = copy_parser_next(&p, &tuple)) == 1) {
            if (tuple.nfields < 0 || tuple.nfields > COPY_MAX_FIELDS)
                abort();
            o->tuples++;
            o->hash = hash_tuple(o->hash, &tuple);
            if (decode)
                for (int i = 0; i < tuple.nfields; i++)
                    if (!tuple.fields[i].is_null)
                        decode_field(tuple.fields[i].data, tuple.fields[i].len);
        }
        free(chunk);
    }
    if (rc >= 0)
        rc = copy_parser_finish(&p);
    o->rc = rc;
    if (rc < 0) {
        if (p.error[0] == '\0')
            abort();
        memcpy(o->error, p.error, sizeof o->error);
    }
    /* Bounded memory: at most the stream plus one chunk's doubling. */
    if (p.cap > 2 * (len + 1024))
        abort();
    copy_parser_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t nsizes = data[0] % 8;
    if (size < 1 + nsizes)
        return 0;
    const uint8_t *sizes = data + 1, *stream = data + 1 + nsizes;
    size_t len = size - 1 - nsizes;

    struct outcome chunked, whole;
    run(stream, len, sizes, nsizes, true, &chunked);
    run(stream, len, NULL, 0, false, &whole);
    /* An error found early stops a chunked run before later tuples the whole
     * run would also stop before: the outcomes must match exactly. */
    if (chunked.rc != whole.rc || chunked.tuples != whole.tuples ||
        chunked.hash != whole.hash || strcmp(chunked.error, whole.error) != 0)
        abort();

    /* The raw input as one value of every type, and as one row record. */
    decode_field(data, size);
    check_record(data, size);
    return 0;
}
