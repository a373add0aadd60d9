/* pgoutput.c -- decoding and encoding the streaming-replication framing
 * ('w', 'k', 'r') and pgoutput's logical replication messages, protocol
 * versions 1 to 4 (see pgoutput.h for the contract and PostgreSQL's
 * src/backend/replication/logical/proto.c for the writer we mirror).
 *
 * Decoding walks a bounds-checked cursor (wire.h); every failure names the
 * message and the field it was reading. Arrays are allocated only after
 * their counts pass the limits. */
#include "base/error.h"
#include "base/bytes.h"
#include "ingest/pgoutput.h"

#include "ingest/wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PGO_ATTR_PRINTF(f, a) __attribute__((format(printf, f, a)))

static const char PG_CATALOG[] = "pg_catalog";

/* ---- Message kinds ------------------------------------------------------- */

const char *pgo_kind_name(int kind)
{
    switch (kind) {
    case PGO_BEGIN: return "Begin";
    case PGO_COMMIT: return "Commit";
    case PGO_ORIGIN: return "Origin";
    case PGO_RELATION: return "Relation";
    case PGO_TYPE: return "Type";
    case PGO_INSERT: return "Insert";
    case PGO_UPDATE: return "Update";
    case PGO_DELETE: return "Delete";
    case PGO_TRUNCATE: return "Truncate";
    case PGO_MESSAGE: return "Message";
    case PGO_STREAM_START: return "Stream Start";
    case PGO_STREAM_STOP: return "Stream Stop";
    case PGO_STREAM_COMMIT: return "Stream Commit";
    case PGO_STREAM_ABORT: return "Stream Abort";
    case PGO_BEGIN_PREPARE: return "Begin Prepare";
    case PGO_PREPARE: return "Prepare";
    case PGO_COMMIT_PREPARED: return "Commit Prepared";
    case PGO_ROLLBACK_PREPARED: return "Rollback Prepared";
    case PGO_STREAM_PREPARE: return "Stream Prepare";
    default: return NULL;
    }
}

/* The first protocol version that has the message kind. */
static int min_version(int kind)
{
    switch (kind) {
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

/* Data messages carry the xid of their (sub)transaction inside a stream. */
static bool has_stream_xid(int kind)
{
    switch (kind) {
    case PGO_RELATION:
    case PGO_TYPE:
    case PGO_INSERT:
    case PGO_UPDATE:
    case PGO_DELETE:
    case PGO_TRUNCATE:
    case PGO_MESSAGE:
        return true;
    default:
        return false;
    }
}

/* "'Z' (0x5A)" for a printable byte, "0x05" otherwise. */
static const char *byte_text(uint8_t b, char buf[16])
{
    if (b >= 0x20 && b < 0x7f)
        snprintf(buf, 16, "'%c' (0x%02X)", (char)b, (unsigned)b);
    else
        snprintf(buf, 16, "0x%02X", (unsigned)b);
    return buf;
}

/* ---- Decoding ------------------------------------------------------------ */

struct dec {
    struct wire_reader r;
    const char *what; /* "Relation message" */
    char *err;
    size_t errlen;
};

static int vfail(struct dec *d, const char *prefix, const char *fmt, va_list ap)
{
    if (d->err == NULL || d->errlen == 0)
        return -1;
    int n = snprintf(d->err, d->errlen, "%s: %s", d->what, prefix);
    if (n >= 0 && (size_t)n < d->errlen)
        error_vfmt(d->err + n, d->errlen - (size_t)n, fmt, ap);
    return -1;
}

PGO_ATTR_PRINTF(2, 3)
static int fail(struct dec *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(d, "", fmt, ap);
    va_end(ap);
    return -1;
}

/* Reports that the buffer ended while reading the named field. */
PGO_ATTR_PRINTF(2, 3)
static int truncated(struct dec *d, const char *field, ...)
{
    va_list ap;
    va_start(ap, field);
    vfail(d, "truncated at ", field, ap);
    va_end(ap);
    return -1;
}

/* Readers for fixed fields: the field name is only formatted on failure. */
#define RD(fn, d, ptr, ...) \
    do { \
        if (!fn(&(d)->r, (ptr))) \
            return truncated((d), __VA_ARGS__); \
    } while (0)

static int rd_string(struct dec *d, const char **s, const char *field, int index)
{
    if (!wire_read_cstring(&d->r, s, NULL)) {
        if (index > 0)
            return truncated(d, "column %d %s", index, field);
        return truncated(d, "%s", field);
    }
    return 0;
}

static int rd_namespace(struct dec *d, const char **s)
{
    if (rd_string(d, s, "namespace", 0) != 0)
        return -1;
    if (**s == '\0')
        *s = PG_CATALOG;
    return 0;
}

static int rd_tuple(struct dec *d, struct pgo_tuple *t, const char *which)
{
    uint16_t n;
    RD(wire_read_u16, d, &n, "%s column count", which);
    if (n > PGO_MAX_COLUMNS)
        return fail(d, "%s has %u columns, more than %d", which, (unsigned)n, PGO_MAX_COLUMNS);
    if (n > 0) {
        t->values = calloc(n, sizeof *t->values);
        if (t->values == NULL)
            return fail(d, "out of memory for %s", which);
    }
    t->ncols = n;
    for (int i = 0; i < n; i++) {
        struct pgo_value *v = &t->values[i];
        uint8_t kind;
        char b[16];
        RD(wire_read_u8, d, &kind, "%s column %d kind", which, i + 1);
        v->kind = (char)kind;
        switch (kind) {
        case 'n':
        case 'u':
            break;
        case 't':
        case 'b': {
            uint32_t len;
            RD(wire_read_u32, d, &len, "%s column %d length", which, i + 1);
            if (len > wire_left(&d->r))
                return fail(d, "%s column %d length %u exceeds the %zu bytes left", which,
                            i + 1, (unsigned)len, wire_left(&d->r));
            v->data = d->r.buf + d->r.pos;
            v->len = len;
            d->r.pos += len;
            break;
        }
        default:
            return fail(d, "%s column %d has unknown kind %s", which, i + 1,
                        byte_text(kind, b));
        }
    }
    return 0;
}

static int dec_relation(struct dec *d, struct pgo_message *m)
{
    uint16_t n;
    uint8_t replident;
    RD(wire_read_u32, d, &m->relid, "relation OID");
    if (rd_namespace(d, &m->nspname) != 0 || rd_string(d, &m->relname, "name", 0) != 0)
        return -1;
    RD(wire_read_u8, d, &replident, "replica identity");
    m->replident = (char)replident;
    RD(wire_read_u16, d, &n, "column count");
    if (n > PGO_MAX_COLUMNS)
        return fail(d, "%u columns, more than %d", (unsigned)n, PGO_MAX_COLUMNS);
    if (n > 0) {
        m->columns = calloc(n, sizeof *m->columns);
        if (m->columns == NULL)
            return fail(d, "out of memory for %u columns", (unsigned)n);
    }
    m->ncols = n;
    for (int i = 0; i < n; i++) {
        struct pgo_column *c = &m->columns[i];
        RD(wire_read_u8, d, &c->flags, "column %d flags", i + 1);
        if (rd_string(d, &c->name, "name", i + 1) != 0)
            return -1;
        RD(wire_read_u32, d, &c->type_oid, "column %d type OID", i + 1);
        RD(wire_read_i32, d, &c->typmod, "column %d typmod", i + 1);
    }
    return 0;
}

static int dec_type(struct dec *d, struct pgo_message *m)
{
    RD(wire_read_u32, d, &m->relid, "type OID");
    if (rd_namespace(d, &m->nspname) != 0)
        return -1;
    return rd_string(d, &m->relname, "name", 0);
}

static int dec_change(struct dec *d, struct pgo_message *m)
{
    uint8_t marker;
    char b[16];
    RD(wire_read_u32, d, &m->relid, "relation OID");
    RD(wire_read_u8, d, &marker, "tuple marker");
    if (m->kind == PGO_INSERT) {
        if (marker != 'N')
            return fail(d, "expected 'N' (new tuple), got %s", byte_text(marker, b));
        return rd_tuple(d, &m->new_tuple, "new tuple");
    }
    if (m->kind == PGO_DELETE) {
        if (marker != 'K' && marker != 'O')
            return fail(d, "expected 'K' (key) or 'O' (old tuple), got %s",
                        byte_text(marker, b));
        m->old_kind = (char)marker;
        return rd_tuple(d, &m->old_tuple, marker == 'K' ? "old key" : "old tuple");
    }
    /* Update */
    if (marker == 'K' || marker == 'O') {
        m->old_kind = (char)marker;
        if (rd_tuple(d, &m->old_tuple, marker == 'K' ? "old key" : "old tuple") != 0)
            return -1;
        RD(wire_read_u8, d, &marker, "new tuple marker");
        if (marker != 'N')
            return fail(d, "expected 'N' (new tuple), got %s", byte_text(marker, b));
    } else if (marker != 'N') {
        return fail(d, "expected 'K', 'O' or 'N', got %s", byte_text(marker, b));
    }
    return rd_tuple(d, &m->new_tuple, "new tuple");
}

static int dec_truncate(struct dec *d, struct pgo_message *m)
{
    uint32_t n;
    RD(wire_read_u32, d, &n, "relation count");
    RD(wire_read_u8, d, &m->truncate_options, "options");
    if (n > PGO_MAX_RELIDS)
        return fail(d, "%u relations, more than %d", (unsigned)n, PGO_MAX_RELIDS);
    if (n > wire_left(&d->r) / 4)
        return fail(d, "%u relations need %zu bytes, only %zu left", (unsigned)n,
                    (size_t)n * 4, wire_left(&d->r));
    if (n > 0) {
        m->relids = calloc(n, sizeof *m->relids);
        if (m->relids == NULL)
            return fail(d, "out of memory for %u relations", (unsigned)n);
    }
    m->nrelids = (int)n;
    for (uint32_t i = 0; i < n; i++)
        RD(wire_read_u32, d, &m->relids[i], "relation %u OID", (unsigned)i + 1);
    return 0;
}

static int dec_message(struct dec *d, struct pgo_message *m)
{
    const uint8_t *content;
    RD(wire_read_u8, d, &m->flags, "flags");
    RD(wire_read_u64, d, &m->lsn, "LSN");
    if (rd_string(d, &m->prefix, "prefix", 0) != 0)
        return -1;
    RD(wire_read_u32, d, &m->content_len, "content length");
    if (m->content_len > wire_left(&d->r))
        return fail(d, "content length %u exceeds the %zu bytes left",
                    (unsigned)m->content_len, wire_left(&d->r));
    content = d->r.buf + d->r.pos;
    d->r.pos += m->content_len;
    m->content = content;
    return 0;
}

/* Prepare, Stream Prepare, Commit Prepared: flags, two LSNs, a time, xid, gid. */
static int dec_prepared(struct dec *d, struct pgo_message *m, bool has_flags,
                        const char *lsn_name, const char *time_name)
{
    if (has_flags)
        RD(wire_read_u8, d, &m->flags, "flags");
    RD(wire_read_u64, d, &m->lsn, "%s", lsn_name);
    RD(wire_read_u64, d, &m->end_lsn, "end LSN");
    RD(wire_read_i64, d, &m->timestamp, "%s", time_name);
    RD(wire_read_u32, d, &m->xid, "xid");
    return rd_string(d, &m->gid, "gid", 0);
}

static int dec_body(struct dec *d, struct pgo_message *m, int version)
{
    uint8_t byte;
    switch (m->kind) {
    case PGO_BEGIN:
        RD(wire_read_u64, d, &m->lsn, "final LSN");
        RD(wire_read_i64, d, &m->timestamp, "commit timestamp");
        RD(wire_read_u32, d, &m->xid, "xid");
        return 0;
    case PGO_COMMIT:
        RD(wire_read_u8, d, &m->flags, "flags");
        RD(wire_read_u64, d, &m->lsn, "commit LSN");
        RD(wire_read_u64, d, &m->end_lsn, "end LSN");
        RD(wire_read_i64, d, &m->timestamp, "commit timestamp");
        return 0;
    case PGO_ORIGIN:
        RD(wire_read_u64, d, &m->lsn, "origin LSN");
        return rd_string(d, &m->origin_name, "origin name", 0);
    case PGO_RELATION:
        return dec_relation(d, m);
    case PGO_TYPE:
        return dec_type(d, m);
    case PGO_INSERT:
    case PGO_UPDATE:
    case PGO_DELETE:
        return dec_change(d, m);
    case PGO_TRUNCATE:
        return dec_truncate(d, m);
    case PGO_MESSAGE:
        return dec_message(d, m);
    case PGO_STREAM_START:
        RD(wire_read_u32, d, &m->xid, "xid");
        RD(wire_read_u8, d, &byte, "first segment flag");
        m->first_segment = byte != 0;
        return 0;
    case PGO_STREAM_STOP:
        return 0;
    case PGO_STREAM_COMMIT:
        RD(wire_read_u32, d, &m->xid, "xid");
        RD(wire_read_u8, d, &m->flags, "flags");
        RD(wire_read_u64, d, &m->lsn, "commit LSN");
        RD(wire_read_u64, d, &m->end_lsn, "end LSN");
        RD(wire_read_i64, d, &m->timestamp, "commit timestamp");
        return 0;
    case PGO_STREAM_ABORT:
        RD(wire_read_u32, d, &m->xid, "xid");
        RD(wire_read_u32, d, &m->subxid, "subtransaction xid");
        /* Protocol 4 sends the abort LSN and time only with streaming =
         * parallel; the message length tells which form this is. */
        if (version >= 4 && wire_left(&d->r) > 0) {
            RD(wire_read_u64, d, &m->lsn, "abort LSN");
            RD(wire_read_i64, d, &m->timestamp, "abort timestamp");
        }
        return 0;
    case PGO_BEGIN_PREPARE:
        return dec_prepared(d, m, false, "prepare LSN", "prepare timestamp");
    case PGO_PREPARE:
    case PGO_STREAM_PREPARE:
        return dec_prepared(d, m, true, "prepare LSN", "prepare timestamp");
    case PGO_COMMIT_PREPARED:
        return dec_prepared(d, m, true, "commit LSN", "commit timestamp");
    case PGO_ROLLBACK_PREPARED:
        RD(wire_read_u8, d, &m->flags, "flags");
        RD(wire_read_u64, d, &m->lsn, "prepare end LSN");
        RD(wire_read_u64, d, &m->end_lsn, "rollback end LSN");
        RD(wire_read_i64, d, &m->prepare_time, "prepare timestamp");
        RD(wire_read_i64, d, &m->timestamp, "rollback timestamp");
        RD(wire_read_u32, d, &m->xid, "xid");
        return rd_string(d, &m->gid, "gid", 0);
    }
    return fail(d, "unhandled message kind"); /* unreachable: kinds checked first */
}

int pgo_decode(const uint8_t *buf, size_t len, int protocol_version, bool in_stream,
               struct pgo_message *out, char *err, size_t errlen)
{
    struct dec d = {.what = "pgoutput", .err = err, .errlen = errlen};
    char b[16];
    int rc;

    memset(out, 0, sizeof *out);
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    wire_reader_init(&d.r, buf, len);

    if (protocol_version < 1 || protocol_version > 4)
        return fail(&d, "unsupported protocol version %d", protocol_version);
    if (in_stream && protocol_version < 2)
        return fail(&d, "in_stream needs protocol version 2 or later, got %d",
                    protocol_version);
    if (len == 0 || buf == NULL)
        return fail(&d, "empty message");

    uint8_t kind = buf[0];
    const char *name = pgo_kind_name(kind);
    if (name == NULL) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "unknown pgoutput message %s", byte_text(kind, b));
        return -1;
    }
    /* "Relation message: ..."; 'M' is itself called Message. */
    char what[40];
    if (kind == PGO_MESSAGE)
        snprintf(what, sizeof what, "Logical decoding message");
    else
        snprintf(what, sizeof what, "%s message", name);
    d.what = what;
    d.r.pos = 1;
    if (protocol_version < min_version(kind))
        return fail(&d, "needs protocol version %d or later, got %d", min_version(kind),
                    protocol_version);
    out->kind = (enum pgo_kind)kind;

    rc = 0;
    if (in_stream && has_stream_xid(kind)) {
        if (!wire_read_u32(&d.r, &out->xid))
            rc = truncated(&d, "xid");
    }
    if (rc == 0)
        rc = dec_body(&d, out, protocol_version);
    if (rc == 0 && wire_left(&d.r) > 0)
        rc = fail(&d, "%zu trailing byte%s", wire_left(&d.r), wire_left(&d.r) == 1 ? "" : "s");
    if (rc != 0)
        pgo_message_free(out);
    return rc;
}

void pgo_message_free(struct pgo_message *m)
{
    if (m == NULL)
        return;
    free(m->columns);
    free(m->old_tuple.values);
    free(m->new_tuple.values);
    free(m->relids);
    memset(m, 0, sizeof *m);
}

/* ---- Comparing ----------------------------------------------------------- */

static bool str_eq(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool bytes_eq(const uint8_t *a, const uint8_t *b, size_t len)
{
    return len == 0 || (a != NULL && b != NULL && memcmp(a, b, len) == 0);
}

static bool tuple_eq(const struct pgo_tuple *a, const struct pgo_tuple *b)
{
    if (a->ncols != b->ncols)
        return false;
    for (int i = 0; i < a->ncols; i++) {
        const struct pgo_value *x = &a->values[i], *y = &b->values[i];
        if (x->kind != y->kind || x->len != y->len || !bytes_eq(x->data, y->data, x->len))
            return false;
    }
    return true;
}

bool pgo_message_equal(const struct pgo_message *a, const struct pgo_message *b)
{
    if (a->kind != b->kind || a->xid != b->xid || a->lsn != b->lsn ||
        a->end_lsn != b->end_lsn || a->timestamp != b->timestamp || a->flags != b->flags ||
        a->subxid != b->subxid || !str_eq(a->origin_name, b->origin_name) ||
        a->first_segment != b->first_segment || !str_eq(a->gid, b->gid) ||
        a->prepare_time != b->prepare_time || a->relid != b->relid ||
        !str_eq(a->nspname, b->nspname) || !str_eq(a->relname, b->relname) ||
        a->replident != b->replident || a->ncols != b->ncols || a->old_kind != b->old_kind ||
        a->truncate_options != b->truncate_options || a->nrelids != b->nrelids ||
        !str_eq(a->prefix, b->prefix) || a->content_len != b->content_len ||
        !bytes_eq(a->content, b->content, a->content_len))
        return false;
    for (int i = 0; i < a->ncols; i++) {
        const struct pgo_column *x = &a->columns[i], *y = &b->columns[i];
        if (x->flags != y->flags || !str_eq(x->name, y->name) || x->type_oid != y->type_oid ||
            x->typmod != y->typmod)
            return false;
    }
    for (int i = 0; i < a->nrelids; i++)
        if (a->relids[i] != b->relids[i])
            return false;
    return tuple_eq(&a->old_tuple, &b->old_tuple) && tuple_eq(&a->new_tuple, &b->new_tuple);
}

/* ---- Encoding ------------------------------------------------------------ */

static bool tuple_ok(const struct pgo_tuple *t)
{
    if (t->ncols < 0 || t->ncols > PGO_MAX_COLUMNS || (t->ncols > 0 && t->values == NULL))
        return false;
    for (int i = 0; i < t->ncols; i++) {
        const struct pgo_value *v = &t->values[i];
        switch (v->kind) {
        case 'n':
        case 'u':
            break;
        case 't':
        case 'b':
            if (v->len > 0 && v->data == NULL)
                return false;
            break;
        default:
            return false;
        }
    }
    return true;
}

static void put_tuple(struct wire_writer *w, const struct pgo_tuple *t)
{
    wire_put_u16(w, (uint16_t)t->ncols);
    for (int i = 0; i < t->ncols; i++) {
        const struct pgo_value *v = &t->values[i];
        wire_put_u8(w, (uint8_t)v->kind);
        if (v->kind == 't' || v->kind == 'b') {
            wire_put_u32(w, v->len);
            wire_put_bytes(w, v->data, v->len);
        }
    }
}

static void put_namespace(struct wire_writer *w, const char *nspname)
{
    if (nspname != NULL && strcmp(nspname, PG_CATALOG) == 0)
        nspname = "";
    wire_put_cstring(w, nspname);
}

/* Whether pgo_decode could read back what we would write. */
static bool encodable(const struct pgo_message *m, int version, bool in_stream)
{
    if (version < 1 || version > 4 || (in_stream && version < 2))
        return false;
    if (pgo_kind_name((int)m->kind) == NULL || version < min_version((int)m->kind))
        return false;
    switch (m->kind) {
    case PGO_RELATION:
        if (m->ncols < 0 || m->ncols > PGO_MAX_COLUMNS || (m->ncols > 0 && m->columns == NULL))
            return false;
        return true;
    case PGO_INSERT:
        return tuple_ok(&m->new_tuple);
    case PGO_UPDATE:
        if (m->old_kind != 0 && m->old_kind != 'K' && m->old_kind != 'O')
            return false;
        return (m->old_kind == 0 || tuple_ok(&m->old_tuple)) && tuple_ok(&m->new_tuple);
    case PGO_DELETE:
        return (m->old_kind == 'K' || m->old_kind == 'O') && tuple_ok(&m->old_tuple);
    case PGO_TRUNCATE:
        return m->nrelids >= 0 && m->nrelids <= PGO_MAX_RELIDS &&
               (m->nrelids == 0 || m->relids != NULL);
    case PGO_MESSAGE:
        return m->content_len == 0 || m->content != NULL;
    default:
        return true;
    }
}

size_t pgo_encode(const struct pgo_message *m, int protocol_version, bool in_stream,
                  uint8_t *out, size_t cap)
{
    struct wire_writer w;

    if (m == NULL || !encodable(m, protocol_version, in_stream))
        return 0;
    wire_writer_init(&w, out, cap);
    wire_put_u8(&w, (uint8_t)m->kind);
    if (in_stream && has_stream_xid((int)m->kind))
        wire_put_u32(&w, m->xid);

    switch (m->kind) {
    case PGO_BEGIN:
        wire_put_u64(&w, m->lsn);
        wire_put_i64(&w, m->timestamp);
        wire_put_u32(&w, m->xid);
        break;
    case PGO_COMMIT:
        wire_put_u8(&w, m->flags);
        wire_put_u64(&w, m->lsn);
        wire_put_u64(&w, m->end_lsn);
        wire_put_i64(&w, m->timestamp);
        break;
    case PGO_ORIGIN:
        wire_put_u64(&w, m->lsn);
        wire_put_cstring(&w, m->origin_name);
        break;
    case PGO_RELATION:
        wire_put_u32(&w, m->relid);
        put_namespace(&w, m->nspname);
        wire_put_cstring(&w, m->relname);
        wire_put_u8(&w, (uint8_t)m->replident);
        wire_put_u16(&w, (uint16_t)m->ncols);
        for (int i = 0; i < m->ncols; i++) {
            const struct pgo_column *c = &m->columns[i];
            wire_put_u8(&w, c->flags);
            wire_put_cstring(&w, c->name);
            wire_put_u32(&w, c->type_oid);
            wire_put_i32(&w, c->typmod);
        }
        break;
    case PGO_TYPE:
        wire_put_u32(&w, m->relid);
        put_namespace(&w, m->nspname);
        wire_put_cstring(&w, m->relname);
        break;
    case PGO_INSERT:
        wire_put_u32(&w, m->relid);
        wire_put_u8(&w, 'N');
        put_tuple(&w, &m->new_tuple);
        break;
    case PGO_UPDATE:
        wire_put_u32(&w, m->relid);
        if (m->old_kind != 0) {
            wire_put_u8(&w, (uint8_t)m->old_kind);
            put_tuple(&w, &m->old_tuple);
        }
        wire_put_u8(&w, 'N');
        put_tuple(&w, &m->new_tuple);
        break;
    case PGO_DELETE:
        wire_put_u32(&w, m->relid);
        wire_put_u8(&w, (uint8_t)m->old_kind);
        put_tuple(&w, &m->old_tuple);
        break;
    case PGO_TRUNCATE:
        wire_put_u32(&w, (uint32_t)m->nrelids);
        wire_put_u8(&w, m->truncate_options);
        for (int i = 0; i < m->nrelids; i++)
            wire_put_u32(&w, m->relids[i]);
        break;
    case PGO_MESSAGE:
        wire_put_u8(&w, m->flags);
        wire_put_u64(&w, m->lsn);
        wire_put_cstring(&w, m->prefix);
        wire_put_u32(&w, m->content_len);
        wire_put_bytes(&w, m->content, m->content_len);
        break;
    case PGO_STREAM_START:
        wire_put_u32(&w, m->xid);
        wire_put_u8(&w, m->first_segment ? 1 : 0);
        break;
    case PGO_STREAM_STOP:
        break;
    case PGO_STREAM_COMMIT:
        wire_put_u32(&w, m->xid);
        wire_put_u8(&w, m->flags);
        wire_put_u64(&w, m->lsn);
        wire_put_u64(&w, m->end_lsn);
        wire_put_i64(&w, m->timestamp);
        break;
    case PGO_STREAM_ABORT:
        wire_put_u32(&w, m->xid);
        wire_put_u32(&w, m->subxid);
        if (protocol_version >= 4 && (m->lsn != 0 || m->timestamp != 0)) {
            wire_put_u64(&w, m->lsn);
            wire_put_i64(&w, m->timestamp);
        }
        break;
    case PGO_BEGIN_PREPARE:
    case PGO_PREPARE:
    case PGO_STREAM_PREPARE:
    case PGO_COMMIT_PREPARED:
        if (m->kind != PGO_BEGIN_PREPARE)
            wire_put_u8(&w, m->flags);
        wire_put_u64(&w, m->lsn);
        wire_put_u64(&w, m->end_lsn);
        wire_put_i64(&w, m->timestamp);
        wire_put_u32(&w, m->xid);
        wire_put_cstring(&w, m->gid);
        break;
    case PGO_ROLLBACK_PREPARED:
        wire_put_u8(&w, m->flags);
        wire_put_u64(&w, m->lsn);
        wire_put_u64(&w, m->end_lsn);
        wire_put_i64(&w, m->prepare_time);
        wire_put_i64(&w, m->timestamp);
        wire_put_u32(&w, m->xid);
        wire_put_cstring(&w, m->gid);
        break;
    }
    return w.len == SIZE_MAX ? 0 : w.len;
}

/* ---- Streaming replication framing --------------------------------------- */

static int frame_body(struct dec *d, struct wal_frame *out)
{
    uint8_t reply;
    if (out->kind == 'w') {
        RD(wire_read_u64, d, &out->wal_start, "WAL start");
        RD(wire_read_u64, d, &out->wal_end, "WAL end");
        RD(wire_read_i64, d, &out->send_time, "send time");
        out->payload = d->r.buf + d->r.pos;
        out->payload_len = wire_left(&d->r);
        d->r.pos = d->r.len;
        return 0;
    }
    RD(wire_read_u64, d, &out->wal_end, "WAL end");
    RD(wire_read_i64, d, &out->send_time, "send time");
    RD(wire_read_u8, d, &reply, "reply flag");
    out->reply_requested = reply != 0;
    if (wire_left(&d->r) > 0)
        return fail(d, "%zu trailing byte%s", wire_left(&d->r), wire_left(&d->r) == 1 ? "" : "s");
    return 0;
}

int wal_frame_decode(const uint8_t *buf, size_t len, struct wal_frame *out, char *err,
                     size_t errlen)
{
    struct dec d = {.what = "replication message", .err = err, .errlen = errlen};
    char b[16];

    memset(out, 0, sizeof *out);
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    wire_reader_init(&d.r, buf, len);
    if (len == 0 || buf == NULL)
        return fail(&d, "empty message");
    if (buf[0] != 'w' && buf[0] != 'k') {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "unknown replication message %s", byte_text(buf[0], b));
        return -1;
    }
    d.what = buf[0] == 'w' ? "XLogData message" : "keepalive message";
    d.r.pos = 1;
    out->kind = (char)buf[0];
    if (frame_body(&d, out) != 0) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    return 0;
}

size_t wal_frame_encode(const struct wal_frame *f, uint8_t *out, size_t cap)
{
    struct wire_writer w;
    wire_writer_init(&w, out, cap);
    if (f->kind == 'w') {
        wire_put_u8(&w, 'w');
        wire_put_u64(&w, f->wal_start);
        wire_put_u64(&w, f->wal_end);
        wire_put_i64(&w, f->send_time);
        if (f->payload_len > 0 && f->payload == NULL)
            return 0;
        wire_put_bytes(&w, f->payload, f->payload_len);
    } else if (f->kind == 'k') {
        wire_put_u8(&w, 'k');
        wire_put_u64(&w, f->wal_end);
        wire_put_i64(&w, f->send_time);
        wire_put_u8(&w, f->reply_requested ? 1 : 0);
    } else {
        return 0;
    }
    return w.len == SIZE_MAX ? 0 : w.len;
}

void wal_status_encode(uint8_t out[WAL_STATUS_BYTES], uint64_t written, uint64_t flushed,
                       uint64_t applied, int64_t now, bool reply_requested)
{
    out[0] = 'r';
    be_store_u64(out + 1, written);
    be_store_u64(out + 9, flushed);
    be_store_u64(out + 17, applied);
    be_store_u64(out + 25, (uint64_t)now);
    out[33] = reply_requested ? 1 : 0;
}
