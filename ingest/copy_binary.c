/* copy_binary.c -- streaming parser of PostgreSQL's binary COPY format.
 *
 * The initial snapshot of a table arrives as COPY ... TO STDOUT (FORMAT
 * binary) in chunks of whatever size libpq hands out: one message per row.
 * A chunk fed is copied into the parser's own buffer. A chunk lent that
 * arrives with nothing pending is read where it lies; only its unread
 * tail, the start of a tuple cut short, is copied, when next runs out of
 * whole tuples. A copy of every row cost the load 13% of its CPU (perf: the
 * copy missed the cache on each row's first bytes). The own buffer holds at
 * most the unread part of one tuple plus one chunk: memory is bounded by the
 * largest tuple, not by the stream. A tuple is only returned once all of its
 * bytes are present; until then nothing is consumed and the next call
 * starts over from the tuple's first byte.
 *
 * Every count and length is checked before it is used, and malformed input
 * stops the parser for good with a message naming what was wrong. */
#include "base/error.h"
#include "base/bytes.h"
#include "ingest/copy_binary.h"


#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t signature[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xFF, '\r', '\n', 0};
#define HEADER_FIXED 19 /* signature, flags, extension length */
#define FLAG_OIDS (1u << 16)

static int fail(struct copy_parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct copy_parser *p, const char *fmt, ...)
{
    int n = snprintf(p->error, sizeof p->error, "binary COPY: ");
    va_list ap;
    va_start(ap, fmt);
    error_vfmt(p->error + n, sizeof p->error - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

void copy_parser_init(struct copy_parser *p)
{
    memset(p, 0, sizeof *p);
}

void copy_parser_free(struct copy_parser *p)
{
    free(p->own);
    memset(p, 0, sizeof *p);
}

static int reserve(struct copy_parser *p, size_t need)
{
    if (need <= p->cap)
        return 0;
    size_t cap = p->cap ? p->cap : 1024;
    while (cap < need)
        cap *= 2;
    uint8_t *own = realloc(p->own, cap);
    if (!own)
        return -1;
    p->own = own;
    p->cap = cap;
    return 0;
}

/* Tuples handed out so far die here: the unread bytes move to the front of
 * the parser's own buffer (out of a lent chunk, which the caller may free
 * next). */
static int keep_unread(struct copy_parser *p)
{
    size_t unread = p->len - p->pos;
    if (p->buf != p->own) {
        if (reserve(p, unread))
            return -1;
        if (unread)
            memcpy(p->own, p->buf + p->pos, unread);
    } else if (p->pos > 0) {
        memmove(p->own, p->own + p->pos, unread);
    }
    p->buf = p->own;
    p->len = unread;
    p->pos = 0;
    return 0;
}

static int add_chunk(struct copy_parser *p, const void *data, size_t len, bool lent)
{
    if (keep_unread(p))
        return -1;
    if (len == 0)
        return 0;
    if (lent && p->len == 0) { /* nothing pending: read the chunk where it lies */
        p->buf = data;
        p->len = len;
        return 0;
    }
    if (len > SIZE_MAX / 2 - p->len || reserve(p, p->len + len))
        return -1;
    p->buf = p->own; /* (reserve may have moved it) */
    memcpy(p->own + p->len, data, len);
    p->len += len;
    return 0;
}

int copy_parser_feed(struct copy_parser *p, const void *data, size_t len)
{
    return add_chunk(p, data, len, false);
}

int copy_parser_lend(struct copy_parser *p, const void *data, size_t len)
{
    return add_chunk(p, data, len, true);
}

/* Parses the header if all of it is there: 1 done, 0 need more, -1 error. */
static int parse_header(struct copy_parser *p)
{
    size_t avail = p->len - p->pos;
    if (avail == 0)
        return 0; /* (buf may still be NULL) */
    const uint8_t *b = p->buf + p->pos;
    /* Check the signature as far as it has arrived, so a stream that is not
     * binary COPY at all fails on its first bytes. */
    size_t n = avail < sizeof signature ? avail : sizeof signature;
    if (memcmp(b, signature, n) != 0)
        return fail(p, "bad signature");
    if (avail < HEADER_FIXED)
        return 0;
    uint32_t flags = be_load_u32(b + 11);
    if (flags & FLAG_OIDS)
        return fail(p, "the stream includes OIDs (header flag bit 16), which Straum does not "
                       "read");
    if (flags >> 16)
        return fail(p, "header has unknown critical flags 0x%08x", (unsigned)flags);
    int32_t ext = be_load_i32(b + 15);
    if (ext < 0)
        return fail(p, "header extension length is %d", (int)ext);
    if ((uint32_t)ext > COPY_MAX_FIELD_BYTES)
        return fail(p, "header extension of %d bytes is more than %u", (int)ext,
                    COPY_MAX_FIELD_BYTES);
    if (avail - HEADER_FIXED < (size_t)ext)
        return 0;
    p->pos += HEADER_FIXED + (size_t)ext;
    p->header_done = true;
    return 1;
}

/* Scans the tuple at p->pos: 1 complete (fields in t when t is not NULL,
 * p->pos moved past it), 0 need more bytes or trailer reached, -1 error. */
static int scan_tuple(struct copy_parser *p, struct copy_tuple *t)
{
    size_t avail = p->len - p->pos;
    if (avail < 2)
        return 0;
    const uint8_t *b = p->buf + p->pos;
    int nfields = be_load_i16(b);
    if (nfields == -1) {
        p->pos += 2;
        p->trailer_seen = true;
        if (p->pos < p->len)
            return fail(p, "bytes after the trailer");
        return 0;
    }
    if (nfields < 0)
        return fail(p, "tuple has field count %d", nfields);
    if (nfields > COPY_MAX_FIELDS)
        return fail(p, "tuple has %d fields, more than %d", nfields, COPY_MAX_FIELDS);
    size_t at = 2;
    for (int i = 0; i < nfields; i++) {
        if (avail - at < 4)
            return 0;
        int32_t flen = be_load_i32(b + at);
        at += 4;
        if (flen == -1) {
            if (t)
                t->fields[i] = (struct copy_field){.is_null = true, .data = NULL, .len = 0};
            continue;
        }
        if (flen < 0)
            return fail(p, "field %d of a tuple has length %d", i + 1, (int)flen);
        if ((uint32_t)flen > COPY_MAX_FIELD_BYTES)
            return fail(p, "field %d of a tuple has length %d, more than %u", i + 1, (int)flen,
                        COPY_MAX_FIELD_BYTES);
        if (avail - at < (size_t)flen)
            return 0;
        if (t)
            t->fields[i] = (struct copy_field){.is_null = false, .data = b + at,
                                               .len = (uint32_t)flen};
        at += (size_t)flen;
    }
    if (t)
        t->nfields = nfields;
    p->pos += at;
    return 1;
}

static int next_tuple(struct copy_parser *p, struct copy_tuple *t)
{
    if (p->error[0])
        return -1;
    if (!p->header_done) {
        int rc = parse_header(p);
        if (rc <= 0)
            return rc;
    }
    if (p->trailer_seen) {
        if (p->pos < p->len)
            return fail(p, "bytes after the trailer");
        return 0;
    }
    return scan_tuple(p, t);
}

int copy_parser_next(struct copy_parser *p, struct copy_tuple *t)
{
    int rc = next_tuple(p, t);
    if (rc == 0 && p->buf != p->own && keep_unread(p))
        return fail(p, "out of memory keeping %zu bytes of a tuple", p->len - p->pos);
    return rc;
}

int copy_parser_finish(struct copy_parser *p)
{
    if (p->error[0])
        return -1;
    size_t left = p->len - p->pos;
    if (!p->header_done) {
        if (parse_header(p) < 0)
            return -1;
        if (!p->header_done) {
            if (left == 0)
                return fail(p, "stream is empty: no header");
            return fail(p, "stream ended inside the header (%zu byte%s)", left,
                        left == 1 ? "" : "s");
        }
        left = p->len - p->pos;
    }
    if (!p->trailer_seen) {
        /* Look for the trailer without handing out tuples: a whole tuple still
         * unread is the caller's mistake, and said so. */
        int rc = scan_tuple(p, NULL);
        if (rc < 0)
            return -1;
        if (rc > 0)
            return fail(p, "finished with tuples not yet taken");
        if (!p->trailer_seen) {
            if (left == 0)
                return fail(p, "stream ended without the trailer");
            return fail(p, "stream ended inside a tuple (%zu byte%s left over)", left,
                        left == 1 ? "" : "s");
        }
    }
    if (p->pos < p->len)
        return fail(p, "bytes after the trailer");
    return 0;
}
