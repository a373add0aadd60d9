/* pg_frame.c -- PostgreSQL protocol 3.0 framing: the startup packet and
 * regular frontend messages parsed from bytes, backend messages written.
 *
 * Written against PostgreSQL 15's "Message Formats" (protocol-message-
 * formats.html): every integer is big-endian, every string NUL-terminated.
 * The parsers read only from the body they are given (its length already
 * bounded by the caller: pg.h invariant 2) and never allocate, so a hostile
 * body can make them fail, never overrun: tests/fuzz/fuzz_pg_message.c
 * drives them with arbitrary bytes. */
#include "serve/pg.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- Reading ----------------------------------------------------------------- */

const unsigned char *pg_get_bytes(struct pg_reader *r, size_t n)
{
    if (r->bad || r->n < n) {
        r->bad = true;
        return NULL;
    }
    const unsigned char *p = r->p;
    r->p += n;
    r->n -= n;
    return p;
}

int16_t pg_get_int16(struct pg_reader *r)
{
    const unsigned char *p = pg_get_bytes(r, 2);
    return p ? (int16_t)((uint16_t)p[0] << 8 | p[1]) : 0;
}

int32_t pg_get_int32(struct pg_reader *r)
{
    const unsigned char *p = pg_get_bytes(r, 4);
    return p ? (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3])
             : 0;
}

const char *pg_get_cstr(struct pg_reader *r)
{
    const unsigned char *nul = r->bad ? NULL : memchr(r->p, 0, r->n);
    if (!nul) {
        r->bad = true;
        return "";
    }
    const char *s = (const char *)r->p;
    size_t n = (size_t)(nul - r->p) + 1;
    r->p += n;
    r->n -= n;
    return s;
}

int pg_parse_startup(const unsigned char *body, size_t len, struct pg_startup *out, char *why,
                     size_t whylen)
{
    struct pg_reader r = {body, len, false};
    memset(out, 0, sizeof *out);
    out->code = pg_get_int32(&r);
    if (r.bad) {
        snprintf(why, whylen, "the startup packet is shorter than its protocol version");
        return -1;
    }
    if (out->code == PG_SSL_REQUEST || out->code == PG_GSSENC_REQUEST)
        return r.n == 0 ? 0 : (snprintf(why, whylen, "an SSL or GSSENC request has no body"), -1);
    if (out->code == PG_CANCEL_REQUEST) {
        out->cancel_pid = pg_get_int32(&r);
        out->cancel_key = pg_get_int32(&r);
        if (r.bad || r.n) {
            snprintf(why, whylen, "a cancel request is 16 bytes");
            return -1;
        }
        return 0;
    }
    if (out->code >> 16 != 3) {
        snprintf(why, whylen, "unsupported frontend protocol %d.%d: this server speaks 3.0",
                 out->code >> 16, out->code & 0xffff);
        return -1;
    }
    /* Name/value pairs up to an empty name (a minor version above 0 is
     * served as 3.0: PostgreSQL answers NegotiateProtocolVersion, libpq 15
     * never asks for more). */
    for (;;) {
        const char *name = pg_get_cstr(&r);
        if (r.bad) {
            snprintf(why, whylen, "the startup packet's parameters are not terminated");
            return -1;
        }
        if (!*name)
            break;
        const char *value = pg_get_cstr(&r);
        if (r.bad) {
            snprintf(why, whylen, "startup parameter \"%.64s\" has no value", name);
            return -1;
        }
        if (out->nparams == PG_MAX_STARTUP_PARAMS) {
            snprintf(why, whylen, "more than %d startup parameters", PG_MAX_STARTUP_PARAMS);
            return -1;
        }
        out->names[out->nparams] = name;
        out->values[out->nparams++] = value;
    }
    if (r.n) {
        snprintf(why, whylen, "bytes after the startup packet's terminator");
        return -1;
    }
    return 0;
}

const char *pg_startup_param(const struct pg_startup *s, const char *name)
{
    for (int i = 0; i < s->nparams; i++)
        if (!strcmp(s->names[i], name))
            return s->values[i];
    return NULL;
}

static int violation(const char **sqlstate, const char *state, char *why, size_t whylen,
                     const char *what)
{
    *sqlstate = state;
    snprintf(why, whylen, "%s", what);
    return -1;
}

int pg_parse_message(char t, const unsigned char *body, size_t len, struct pg_message *m,
                     const char **sqlstate, char *why, size_t whylen)
{
    struct pg_reader r = {body, len, false};
    m->type = t;
    switch (t) {
    case 'Q':
        m->u.query.text = pg_get_cstr(&r);
        break;
    case 'P': {
        m->u.parse.name = pg_get_cstr(&r);
        m->u.parse.text = pg_get_cstr(&r);
        int n = pg_get_int16(&r);
        if (n < 0 || n > PG_MAX_PARAMS)
            return violation(sqlstate, n < 0 ? "08P01" : "54000", why, whylen,
                             n < 0 ? "Parse with a negative parameter count"
                                   : "Parse declares more than 256 parameters");
        m->u.parse.nparams = n;
        for (int i = 0; i < n; i++)
            m->u.parse.oids[i] = (uint32_t)pg_get_int32(&r);
        break;
    }
    case 'B': {
        m->u.bind.portal = pg_get_cstr(&r);
        m->u.bind.statement = pg_get_cstr(&r);
        int nf = pg_get_int16(&r);
        if (nf < 0 || nf > PG_MAX_PARAMS)
            return violation(sqlstate, nf < 0 ? "08P01" : "54000", why, whylen,
                             "Bind's parameter format count is out of range");
        m->u.bind.nformats = nf;
        for (int i = 0; i < nf; i++)
            m->u.bind.formats[i] = pg_get_int16(&r);
        int np = pg_get_int16(&r);
        if (np < 0 || np > PG_MAX_PARAMS)
            return violation(sqlstate, np < 0 ? "08P01" : "54000", why, whylen,
                             "Bind's parameter count is out of range (at most 256)");
        m->u.bind.nparams = np;
        for (int i = 0; i < np; i++) {
            int32_t n = pg_get_int32(&r);
            if (n < -1)
                return violation(sqlstate, "08P01", why, whylen,
                                 "a Bind parameter has a negative length");
            m->u.bind.params[i].len = n;
            m->u.bind.params[i].data = n < 0 ? NULL : pg_get_bytes(&r, (size_t)n);
        }
        int nr = pg_get_int16(&r);
        if (nr < 0 || nr > PG_MAX_PARAMS)
            return violation(sqlstate, nr < 0 ? "08P01" : "54000", why, whylen,
                             "Bind's result format count is out of range");
        m->u.bind.nresults = nr;
        for (int i = 0; i < nr; i++)
            m->u.bind.results[i] = pg_get_int16(&r);
        for (int i = 0; !r.bad && i < nf; i++)
            if (m->u.bind.formats[i] != 0 && m->u.bind.formats[i] != 1)
                return violation(sqlstate, "08P01", why, whylen, "a parameter format is not 0 or 1");
        for (int i = 0; !r.bad && i < nr; i++)
            if (m->u.bind.results[i] != 0 && m->u.bind.results[i] != 1)
                return violation(sqlstate, "08P01", why, whylen, "a result format is not 0 or 1");
        break;
    }
    case 'D':
    case 'C': {
        const unsigned char *k = pg_get_bytes(&r, 1);
        m->u.target.kind = k ? (char)k[0] : 0;
        m->u.target.name = pg_get_cstr(&r);
        if (!r.bad && m->u.target.kind != 'S' && m->u.target.kind != 'P')
            return violation(sqlstate, "08P01", why, whylen,
                             "Describe and Close name 'S' (statement) or 'P' (portal)");
        break;
    }
    case 'E':
        m->u.execute.portal = pg_get_cstr(&r);
        m->u.execute.max_rows = pg_get_int32(&r);
        break;
    case 'S':
    case 'H':
    case 'X':
        break;
    case 'p':
        m->u.raw.data = body;
        m->u.raw.len = len;
        return 0;
    default: {
        *sqlstate = "08P01";
        snprintf(why, whylen, "invalid frontend message type %d", (unsigned char)t);
        return -1;
    }
    }
    if (r.bad)
        return violation(sqlstate, "08P01", why, whylen, "a message is shorter than its fields");
    if (r.n)
        return violation(sqlstate, "08P01", why, whylen, "a message has bytes after its fields");
    return 0;
}

/* ---- Writing -------------------------------------------------------------------- */

void pg_put_int16(struct buf *b, int16_t v)
{
    unsigned char x[2] = {(unsigned char)((uint16_t)v >> 8), (unsigned char)v};
    buf_put(b, x, 2);
}

void pg_put_int32(struct buf *b, int32_t v)
{
    uint32_t u = (uint32_t)v;
    unsigned char x[4] = {(unsigned char)(u >> 24), (unsigned char)(u >> 16),
                          (unsigned char)(u >> 8), (unsigned char)u};
    buf_put(b, x, 4);
}

void pg_put_cstr(struct buf *b, const char *s) { buf_put(b, s, strlen(s) + 1); }

size_t pg_msg_begin(struct buf *b, char t)
{
    buf_put(b, &t, 1);
    size_t at = b->len;
    pg_put_int32(b, 0);
    return at;
}

void pg_msg_end(struct buf *b, size_t start)
{
    if (b->failed || b->len < start + 4)
        return;
    uint32_t n = (uint32_t)(b->len - start);
    unsigned char *p = (unsigned char *)b->data + start;
    p[0] = (unsigned char)(n >> 24);
    p[1] = (unsigned char)(n >> 16);
    p[2] = (unsigned char)(n >> 8);
    p[3] = (unsigned char)n;
}

void pg_put_error(struct buf *b, const char *severity, const char *sqlstate, const char *message,
                  const char *hint, int position)
{
    size_t at = pg_msg_begin(b, strcmp(severity, "NOTICE") ? 'E' : 'N');
    buf_put(b, "S", 1);
    pg_put_cstr(b, severity);
    buf_put(b, "V", 1);
    pg_put_cstr(b, severity);
    buf_put(b, "C", 1);
    pg_put_cstr(b, sqlstate);
    buf_put(b, "M", 1);
    pg_put_cstr(b, message);
    if (hint) {
        buf_put(b, "H", 1);
        pg_put_cstr(b, hint);
    }
    if (position > 0) {
        char p[16];
        snprintf(p, sizeof p, "%d", position);
        buf_put(b, "P", 1);
        pg_put_cstr(b, p);
    }
    buf_put(b, "", 1);
    pg_msg_end(b, at);
}

void pg_put_verrorf(struct buf *b, const char *sqlstate, const char *hint, int position,
                    const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    pg_put_error(b, "ERROR", sqlstate, msg, hint, position);
}

void pg_put_errorf(struct buf *b, const char *sqlstate, const char *hint, int position,
                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pg_put_verrorf(b, sqlstate, hint, position, fmt, ap);
    va_end(ap);
}

size_t pg_skip_blank(const char *s, size_t i, size_t len)
{
    while (i < len) {
        if (isspace((unsigned char)s[i])) {
            i++;
        } else if (s[i] == '-' && i + 1 < len && s[i + 1] == '-') {
            while (i < len && s[i] != '\n')
                i++;
        } else if (s[i] == '/' && i + 1 < len && s[i + 1] == '*') {
            for (i += 2; i + 1 < len && !(s[i] == '*' && s[i + 1] == '/'); i++)
                ;
            i = i + 2 < len ? i + 2 : len;
        } else {
            break;
        }
    }
    return i;
}

int pg_chars(const char *s, size_t n)
{
    int k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

void pg_put_parameter_status(struct buf *b, const char *name, const char *value)
{
    size_t at = pg_msg_begin(b, 'S');
    pg_put_cstr(b, name);
    pg_put_cstr(b, value);
    pg_msg_end(b, at);
}

void pg_put_ready(struct buf *b, char status)
{
    size_t at = pg_msg_begin(b, 'Z');
    buf_put(b, &status, 1);
    pg_msg_end(b, at);
}

void pg_put_command_complete(struct buf *b, const char *tag)
{
    size_t at = pg_msg_begin(b, 'C');
    pg_put_cstr(b, tag);
    pg_msg_end(b, at);
}
