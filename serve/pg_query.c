/* pg_query.c -- simple and extended query over the engine.
 *
 * Simple query ('Q'): the text is cut into statements at semicolons outside
 * quotes and comments; each runs in turn, an error ends the message; asks
 * stream their rows (RowDescription, DataRow in text, CommandComplete
 * "SELECT n") straight to the socket as the engine hands them over.
 *
 * Extended query: Parse compiles an ask (engine_describe: its columns and
 * the types its parameters are bound as; a client-declared type must be
 * compatible, else 42804); Bind reads parameters in text or binary into the
 * text the engine binds; Execute runs the ask once: asked for every row
 * (max_rows 0), straight to the socket as a simple query's rows go; else
 * into the portal (its rows as DataRow messages) and hands out
 * max_rows at a time (PortalSuspended until the last, then
 * CommandComplete); Describe, Close, Flush and Sync as PostgreSQL 15's
 * "Extended Query" describes. After an error messages are dropped up to
 * Sync (pg.h invariant 3). Portals live until Sync outside a transaction
 * block and until its end inside one, as in PostgreSQL. */
#include "serve/pg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAILED_TXN                                                                           \
    "current transaction is aborted, commands ignored until end of transaction block"

/* Bytes of answer that a simple query buffers before writing them out. */
#define STREAM_FLUSH_BYTES (256u << 10)

/* ---- Statements and portals ------------------------------------------------------ */

static void statement_release(struct pg_statement *s)
{
    if (!s || --s->refs > 0)
        return;
    free(s->name);
    free(s->text);
    free(s->param_oids);
    free(s->cols);
    free(s);
}

static void portal_free(struct pg_portal *p)
{
    for (int i = 0; i < p->nparams; i++)
        free(p->param_texts[i]);
    free(p->param_texts);
    free(p->param_lens);
    free(p->results);
    buf_free(&p->rows);
    free(p->row_at);
    statement_release(p->stmt);
    free(p->name);
    free(p);
}

static struct pg_statement *find_statement(struct pg_conn *c, const char *name)
{
    for (struct pg_statement *s = c->statements; s; s = s->next)
        if (!strcmp(s->name, name))
            return s;
    return NULL;
}

static struct pg_portal *find_portal(struct pg_conn *c, const char *name)
{
    for (struct pg_portal *p = c->portals; p; p = p->next)
        if (!strcmp(p->name, name))
            return p;
    return NULL;
}

static void close_statement(struct pg_conn *c, struct pg_statement *s)
{
    for (struct pg_statement **at = &c->statements; *at; at = &(*at)->next)
        if (*at == s) {
            *at = s->next;
            c->nstatements--;
            statement_release(s);
            return;
        }
}

static void close_portal(struct pg_conn *c, struct pg_portal *p)
{
    for (struct pg_portal **at = &c->portals; *at; at = &(*at)->next)
        if (*at == p) {
            *at = p->next;
            c->nportals--;
            portal_free(p);
            return;
        }
}

static void close_all_portals(struct pg_conn *c)
{
    while (c->portals)
        close_portal(c, c->portals);
}

void pg_conn_reset(struct pg_conn *c)
{
    close_all_portals(c);
    while (c->statements)
        close_statement(c, c->statements);
    engine_snapshot_end(c->snapshot);
    c->snapshot = NULL;
}

/* What DEALLOCATE and DISCARD ALL asked for, once the message that asked
 * is done with its statement and portal. */
static void after_message(struct pg_conn *c)
{
    if (c->discard_pending) {
        c->discard_pending = false;
        close_all_portals(c);
        while (c->statements)
            close_statement(c, c->statements);
        return;
    }
    for (struct pg_statement *s = c->statements, *next; s; s = next) {
        next = s->next;
        if (s->doomed)
            close_statement(c, s);
    }
}

/* ---- Errors ------------------------------------------------------------------------- */

/* An error in the extended protocol: written, the transaction failed,
 * messages dropped to Sync. */
static int ext_error(struct pg_conn *c, const char *sqlstate, const char *hint, int position,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int ext_error(struct pg_conn *c, const char *sqlstate, const char *hint, int position,
                     const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pg_put_verrorf(&c->out, sqlstate, hint, position, fmt, ap);
    va_end(ap);
    c->skip_to_sync = true;
    if (c->txn == 'T')
        c->txn = 'E';
    return 0;
}

static void put_ask_error(struct pg_conn *c, const char *text, const struct ask_error *err,
                          int base)
{
    const char *hint;
    const char *state = pg_sqlstate(err, &hint);
    pg_put_error(&c->out, "ERROR", state, err->message, hint, pg_error_position(text, err, base));
    if (c->txn == 'T')
        c->txn = 'E';
}

/* ---- Rows ------------------------------------------------------------------------------ */

static int16_t format_of(int nresults, const int16_t *results, int col)
{
    return nresults == 0 ? 0 : nresults == 1 ? results[0] : results[col];
}

static void put_row_description(struct buf *b, const struct answer_column *cols, int ncols,
                                int nresults, const int16_t *results)
{
    size_t at = pg_msg_begin(b, 'T');
    pg_put_int16(b, (int16_t)ncols);
    for (int i = 0; i < ncols; i++) {
        pg_put_cstr(b, cols[i].name);
        pg_put_int32(b, 0); /* no table */
        pg_put_int16(b, 0);
        pg_put_int32(b, (int32_t)cols[i].type_oid);
        pg_put_int16(b, pg_type_len(cols[i].type_oid));
        pg_put_int32(b, -1);
        pg_put_int16(b, format_of(nresults, results, i));
    }
    pg_msg_end(b, at);
}

/* Where the engine's rows go: DataRow messages into out. */
struct row_sink {
    struct pg_conn *c;
    struct buf *out;
    bool describe;              /* simple query: RowDescription first */
    bool stream;                /* flush out as it grows (simple query) */
    int nresults;
    const int16_t *results;
    const struct answer_column *cols;
    int ncols;
    int64_t rows;
    size_t **row_at;            /* portal: each row's offset */
    size_t row_at_cap;
};

static int sink_columns(void *ctx, const struct answer_column *cols, int ncols,
                        struct ask_error *err)
{
    struct row_sink *s = ctx;
    (void)err;
    s->cols = cols;
    s->ncols = ncols;
    if (s->describe)
        put_row_description(s->out, cols, ncols, s->nresults, s->results);
    return 0;
}

static int sink_row(void *ctx, const struct answer_value *vals, int ncols, struct ask_error *err)
{
    struct row_sink *s = ctx;
    if (atomic_load_explicit(&s->c->cancel, memory_order_relaxed)) {
        snprintf(err->code, sizeof err->code, "cancelled");
        snprintf(err->message, sizeof err->message, "canceling statement due to user request");
        err->status = 503;
        err->line = err->column = 0;
        return -1;
    }
    if (s->row_at) {
        if ((size_t)s->rows == s->row_at_cap) {
            size_t cap = s->row_at_cap ? 2 * s->row_at_cap : 64;
            size_t *p = realloc(*s->row_at, cap * sizeof *p);
            if (!p)
                goto oom;
            *s->row_at = p;
            s->row_at_cap = cap;
        }
        (*s->row_at)[s->rows] = s->out->len;
    }
    size_t at = pg_msg_begin(s->out, 'D');
    pg_put_int16(s->out, (int16_t)ncols);
    for (int i = 0; i < ncols; i++)
        pg_put_value(s->out, &vals[i], s->cols[i].type_oid,
                     format_of(s->nresults, s->results, i) == 1);
    pg_msg_end(s->out, at);
    if (s->out->failed)
        goto oom;
    s->rows++;
    if (s->stream && s->out->len >= STREAM_FLUSH_BYTES && s->c->flush(s->c)) {
        snprintf(err->code, sizeof err->code, "client_gone");
        snprintf(err->message, sizeof err->message, "the client stopped reading");
        return -1;
    }
    return 0;
oom:
    snprintf(err->code, sizeof err->code, "internal");
    snprintf(err->message, sizeof err->message, "out of memory writing the answer");
    return -1;
}

/* Runs an ask: rows into sink; 0, or -1 with err. */
static int run_ask(struct pg_conn *c, const char *text, const struct ask_value *params,
                   int nparams, struct row_sink *sink, struct ask_error *err)
{
    if (c->txn == 'E') {
        snprintf(err->code, sizeof err->code, "in_failed_transaction");
        snprintf(err->message, sizeof err->message, FAILED_TXN);
        err->line = err->column = 0;
        return -1;
    }
    if (atomic_exchange(&c->cancel, false)) {
        /* A cancel that came between asks is for no ask: PostgreSQL too
         * drops one that arrives while idle. */
    }
    struct ask_request req = {.ask = text, .params = params, .nparams = nparams,
                              .time_zone = c->time_zone, .cancel = &c->cancel};
    struct answer_sink as = {sink_columns, sink_row, sink};
    return engine_ask_rows(c->engine, &req, c->snapshot, &as, err);
}

/* ---- Simple query -------------------------------------------------------------------------- */

/* The end of the statement that starts at s: the ';' outside quotes and
 * comments, or the end. */
static size_t statement_end(const char *s, size_t i, size_t n)
{
    while (i < n) {
        char ch = s[i];
        if (ch == ';')
            return i;
        if (ch == '\'' || ch == '"') {
            for (i++; i < n && s[i] != ch; i++)
                ;
            i++;
        } else if (ch == '-' && i + 1 < n && s[i + 1] == '-') {
            while (i < n && s[i] != '\n')
                i++;
        } else if (ch == '/' && i + 1 < n && s[i + 1] == '*') {
            for (i += 2; i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'); i++)
                ;
            i += 2;
        } else {
            i++;
        }
    }
    return n;
}

static int simple_query(struct pg_conn *c, const char *q)
{
    size_t n = strlen(q), i = 0;
    bool any = false;
    while (i <= n) {
        size_t end = statement_end(q, i, n);
        const char *st = q + i;
        size_t len = end - i;
        enum pg_stmt_kind kind = pg_statement_kind(st, len);
        if (kind == PG_STMT_SESSION) {
            any = true;
            c->binary_results = false;
            if (pg_session_run(c, st, len, false, true)) {
                if (c->txn == 'T')
                    c->txn = 'E';
                break;
            }
        } else if (kind == PG_STMT_CATALOG) {
            any = true;
            int rc;
            if (c->txn == 'E')
                rc = -1, pg_put_error(&c->out, "ERROR", "25P02", FAILED_TXN, NULL, 0);
            else
                rc = pg_catalog_run(c, st, len, pg_chars(q, i), PG_CATALOG_SIMPLE, 0, NULL,
                                    NULL, NULL);
            if (rc) {
                if (c->txn == 'T')
                    c->txn = 'E';
                break;
            }
        } else if (kind == PG_STMT_ASK) {
            any = true;
            char *text = strndup(st, len);
            if (!text) {
                pg_put_error(&c->out, "FATAL", "53200", "out of memory", NULL, 0);
                return -1;
            }
            struct row_sink sink = {.c = c, .out = &c->out, .describe = true, .stream = true};
            struct ask_error err = {0};
            int rc = run_ask(c, text, NULL, 0, &sink, &err);
            if (rc == 0) {
                char tag[40];
                snprintf(tag, sizeof tag, "SELECT %lld", (long long)sink.rows);
                pg_put_command_complete(&c->out, tag);
            } else if (!strcmp(err.code, "client_gone")) {
                free(text);
                return -1;
            } else if (!strcmp(err.code, "in_failed_transaction")) {
                pg_put_error(&c->out, "ERROR", "25P02", err.message, NULL, 0);
            } else {
                put_ask_error(c, text, &err, pg_chars(q, i));
            }
            free(text);
            if (rc)
                break;
        }
        after_message(c);
        if (end >= n)
            break;
        i = end + 1;
    }
    if (!any)
        pg_msg_end(&c->out, pg_msg_begin(&c->out, 'I'));
    after_message(c);
    pg_put_ready(&c->out, c->txn);
    return 0;
}

/* ---- Extended query --------------------------------------------------------------------------- */

static int do_parse(struct pg_conn *c, const struct pg_message *m)
{
    const char *name = m->u.parse.name;
    struct pg_statement *old = find_statement(c, name);
    if (old && *name)
        return ext_error(c, "42P05", NULL, 0, "prepared statement \"%s\" already exists", name);
    if (!old && c->nstatements >= PG_MAX_STATEMENTS)
        return ext_error(c, "53400", "Close or DEALLOCATE statements no longer needed.", 0,
                         "more than %d prepared statements on one connection", PG_MAX_STATEMENTS);
    struct pg_statement *s = calloc(1, sizeof *s);
    if (!s || !(s->name = strdup(name)) || !(s->text = strdup(m->u.parse.text))) {
        if (s) {
            free(s->name);
            free(s);
        }
        return ext_error(c, "53200", NULL, 0, "out of memory");
    }
    s->refs = 1;
    s->kind = pg_statement_kind(s->text, strlen(s->text));
    if (s->kind == PG_STMT_ASK) {
        struct ask_error err = {0};
        uint32_t *oids;
        int n;
        if (engine_describe(c->engine, s->text, &s->cols, &s->ncols, &oids, &n, &err)) {
            const char *hint;
            const char *state = pg_sqlstate(&err, &hint);
            ext_error(c, state, hint, pg_error_position(s->text, &err, 0), "%s", err.message);
            statement_release(s);
            return 0;
        }
        s->param_oids = oids;
        s->nparams = n;
        if (m->u.parse.nparams > n) {
            statement_release(s);
            return ext_error(c, "42P18", NULL, 0,
                             "%d parameter types were declared but the ask uses %d",
                             m->u.parse.nparams, n);
        }
        for (int i = 0; i < m->u.parse.nparams; i++) {
            uint32_t d = m->u.parse.oids[i];
            if (!pg_type_compatible(d, oids[i])) {
                uint32_t want = oids[i];
                statement_release(s);
                return ext_error(c, "42804", "Declare the parameter as the type it compares with, "
                                             "or leave it unspecified (0).",
                                 0, "parameter $%d is declared as type %u but is bound as type %u",
                                 i + 1, d, want);
            }
            if (d != 0 && d != 705)
                oids[i] = d == 1042 ? ANSWER_OID_TEXT : d;
        }
    } else {
        s->nparams = m->u.parse.nparams;
        s->param_oids = calloc((size_t)s->nparams + 1, sizeof *s->param_oids);
        for (int i = 0; s->param_oids && i < s->nparams; i++)
            s->param_oids[i] = m->u.parse.oids[i];
        if (s->nparams > 0) {
            statement_release(s);
            return ext_error(c, "42P02", NULL, 0, "this statement takes no parameters");
        }
        /* A catalog statement's columns, for Describe and Bind's result
         * formats: read now, as an ask's are (its RowDescription is not
         * sent here). */
        size_t before = c->out.len;
        if (s->kind == PG_STMT_CATALOG &&
            pg_catalog_run(c, s->text, strlen(s->text), 0, PG_CATALOG_DESCRIBE, 0, NULL,
                           &s->cols, &s->ncols) == 0)
            c->out.len = before;
        else if (s->kind == PG_STMT_CATALOG) {
            statement_release(s);
            c->skip_to_sync = true;
            if (c->txn == 'T')
                c->txn = 'E';
            return 0;
        }
    }
    if (old)
        close_statement(c, old);
    s->next = c->statements;
    c->statements = s;
    c->nstatements++;
    pg_msg_end(&c->out, pg_msg_begin(&c->out, '1'));
    return 0;
}

static int do_bind(struct pg_conn *c, const struct pg_message *m)
{
    const struct pg_message *b = m;
    struct pg_statement *s = find_statement(c, b->u.bind.statement);
    if (!s)
        return ext_error(c, "26000", NULL, 0, "prepared statement \"%s\" does not exist",
                         b->u.bind.statement);
    if (b->u.bind.nparams != s->nparams)
        return ext_error(c, "08P01", NULL, 0,
                         "bind message supplies %d parameters, but prepared statement \"%s\" "
                         "requires %d",
                         b->u.bind.nparams, s->name, s->nparams);
    int nf = b->u.bind.nformats;
    if (nf > 1 && nf != s->nparams)
        return ext_error(c, "08P01", NULL, 0, "bind message has %d parameter formats but %d "
                                              "parameters", nf, s->nparams);
    int nr = b->u.bind.nresults;
    if (nr > 1 && nr != s->ncols)
        return ext_error(c, "08P01", NULL, 0, "bind message has %d result formats but the query "
                                              "has %d columns", nr, s->ncols);
    struct pg_portal *old = find_portal(c, b->u.bind.portal);
    if (old && *b->u.bind.portal)
        return ext_error(c, "42P03", NULL, 0, "portal \"%s\" already exists", b->u.bind.portal);
    if (!old && c->nportals >= PG_MAX_PORTALS)
        return ext_error(c, "53400", NULL, 0, "more than %d portals on one connection",
                         PG_MAX_PORTALS);
    struct pg_portal *p = calloc(1, sizeof *p);
    if (!p)
        return ext_error(c, "53200", NULL, 0, "out of memory");
    p->name = strdup(b->u.bind.portal);
    p->param_texts = calloc((size_t)s->nparams + 1, sizeof *p->param_texts);
    p->param_lens = calloc((size_t)s->nparams + 1, sizeof *p->param_lens);
    p->results = calloc((size_t)nr + 1, sizeof *p->results);
    p->stmt = s;
    s->refs++;
    if (!p->name || !p->param_texts || !p->param_lens || !p->results) {
        portal_free(p);
        return ext_error(c, "53200", NULL, 0, "out of memory");
    }
    p->nparams = s->nparams;
    p->nresults = nr;
    memcpy(p->results, b->u.bind.results, sizeof *p->results * (size_t)nr);
    for (int i = 0; i < s->nparams; i++) {
        const struct pg_bind_param *bp = &b->u.bind.params[i];
        if (!bp->data)
            continue;
        int16_t fmt = nf == 0 ? 0 : nf == 1 ? b->u.bind.formats[0] : b->u.bind.formats[i];
        char tmp[1100], why[200];
        const char *text;
        size_t len;
        if (pg_param_text(bp, fmt, s->param_oids[i], tmp, sizeof tmp, &text, &len, why,
                          sizeof why)) {
            portal_free(p);
            return ext_error(c, "22P03", NULL, 0, "parameter $%d: %s", i + 1, why);
        }
        if (memchr(text, 0, len)) {
            portal_free(p);
            return ext_error(c, "22021", NULL, 0, "parameter $%d holds a zero byte", i + 1);
        }
        p->param_texts[i] = strndup(text, len);
        p->param_lens[i] = len;
        if (!p->param_texts[i]) {
            portal_free(p);
            return ext_error(c, "53200", NULL, 0, "out of memory");
        }
    }
    if (old)
        close_portal(c, old);
    p->next = c->portals;
    c->portals = p;
    c->nportals++;
    pg_msg_end(&c->out, pg_msg_begin(&c->out, '2'));
    return 0;
}

static void put_no_data(struct buf *b) { pg_msg_end(b, pg_msg_begin(b, 'n')); }

static int do_describe(struct pg_conn *c, const struct pg_message *m)
{
    const char *name = m->u.target.name;
    if (m->u.target.kind == 'S') {
        struct pg_statement *s = find_statement(c, name);
        if (!s)
            return ext_error(c, "26000", NULL, 0, "prepared statement \"%s\" does not exist", name);
        size_t at = pg_msg_begin(&c->out, 't');
        pg_put_int16(&c->out, (int16_t)s->nparams);
        for (int i = 0; i < s->nparams; i++)
            pg_put_int32(&c->out, (int32_t)s->param_oids[i]);
        pg_msg_end(&c->out, at);
        if (s->cols)
            put_row_description(&c->out, s->cols, s->ncols, 0, NULL);
        else if (s->kind == PG_STMT_SESSION && pg_session_has_rows(s->text, strlen(s->text)))
            return pg_session_run(c, s->text, strlen(s->text), true, true) ? ext_error(c, "XX000", NULL, 0, "cannot describe") : 0;
        else
            put_no_data(&c->out);
        return 0;
    }
    struct pg_portal *p = find_portal(c, name);
    if (!p)
        return ext_error(c, "34000", NULL, 0, "portal \"%s\" does not exist", name);
    if (p->stmt->cols)
        put_row_description(&c->out, p->stmt->cols, p->stmt->ncols, p->nresults, p->results);
    else if (p->stmt->kind == PG_STMT_SESSION &&
             pg_session_has_rows(p->stmt->text, strlen(p->stmt->text))) {
        size_t before = c->out.len;
        if (pg_session_run(c, p->stmt->text, strlen(p->stmt->text), true, true)) {
            c->skip_to_sync = true;
            return 0;
        }
        /* The row's format as Bind asked: patch the one column's format. */
        if (p->nresults && p->results[0] == 1 && c->out.len >= before + 2 && !c->out.failed)
            c->out.data[c->out.len - 1] = 1;
    } else
        put_no_data(&c->out);
    return 0;
}

static int do_execute(struct pg_conn *c, const struct pg_message *m)
{
    struct pg_portal *p = find_portal(c, m->u.execute.portal);
    if (!p)
        return ext_error(c, "34000", NULL, 0, "portal \"%s\" does not exist", m->u.execute.portal);
    struct pg_statement *s = p->stmt;
    if (s->kind == PG_STMT_EMPTY) {
        pg_msg_end(&c->out, pg_msg_begin(&c->out, 'I'));
        return 0;
    }
    if (s->kind == PG_STMT_CATALOG) {
        if (c->txn == 'E')
            return ext_error(c, "25P02", NULL, 0, FAILED_TXN);
        /* A catalog answer is a few rows: it comes whole, whatever the
         * Execute's row limit. */
        if (pg_catalog_run(c, s->text, strlen(s->text), 0, PG_CATALOG_ROWS, p->nresults,
                           p->results, NULL, NULL)) {
            c->skip_to_sync = true;
            if (c->txn == 'T')
                c->txn = 'E';
        }
        return 0;
    }
    if (s->kind == PG_STMT_SESSION) {
        c->binary_results = p->nresults && p->results[0] == 1;
        if (pg_session_run(c, s->text, strlen(s->text), false, false)) {
            c->skip_to_sync = true;
            if (c->txn == 'T')
                c->txn = 'E';
        }
        return 0;
    }
    if (!p->executed) {
        struct ask_value params[PG_MAX_PARAMS];
        for (int i = 0; i < p->nparams; i++)
            params[i] = p->param_texts[i]
                            ? (struct ask_value){ASK_STRING, false, p->param_texts[i], p->param_lens[i]}
                            : (struct ask_value){ASK_NULL, false, NULL, 0};
        /* Asked for every row at once, the rows go straight out as they
         * come, flushed as they pass STREAM_FLUSH_BYTES: the portal keeps
         * none, so an answer of any length costs a flush's bytes. */
        bool whole = m->u.execute.max_rows <= 0;
        struct row_sink sink = {.c = c, .out = whole ? &c->out : &p->rows, .stream = whole,
                                .nresults = p->nresults, .results = p->results,
                                .row_at = whole ? NULL : &p->row_at};
        struct ask_error err = {0};
        if (run_ask(c, s->text, params, p->nparams, &sink, &err)) {
            if (!strcmp(err.code, "in_failed_transaction"))
                return ext_error(c, "25P02", NULL, 0, "%s", err.message);
            put_ask_error(c, s->text, &err, 0);
            c->skip_to_sync = true;
            return 0;
        }
        p->executed = true;
        p->nrows = sink.rows;
        if (whole) {
            char tag[40];
            p->sent = p->nrows;
            snprintf(tag, sizeof tag, "SELECT %lld", (long long)sink.rows);
            pg_put_command_complete(&c->out, tag);
            return 0;
        }
    }
    int64_t left = p->nrows - p->sent;
    int64_t take = m->u.execute.max_rows > 0 && m->u.execute.max_rows < left ? m->u.execute.max_rows
                                                                             : left;
    if (take > 0) {
        size_t from = p->row_at[p->sent];
        size_t to = p->sent + take < p->nrows ? p->row_at[p->sent + take] : p->rows.len;
        buf_put(&c->out, p->rows.data + from, to - from);
        p->sent += take;
    }
    if (p->sent < p->nrows) {
        pg_msg_end(&c->out, pg_msg_begin(&c->out, 's'));
    } else {
        char tag[40];
        snprintf(tag, sizeof tag, "SELECT %lld", (long long)take);
        pg_put_command_complete(&c->out, tag);
    }
    return 0;
}

static int do_close(struct pg_conn *c, const struct pg_message *m)
{
    if (m->u.target.kind == 'S') {
        struct pg_statement *s = find_statement(c, m->u.target.name);
        if (s)
            close_statement(c, s);
    } else {
        struct pg_portal *p = find_portal(c, m->u.target.name);
        if (p)
            close_portal(c, p);
    }
    pg_msg_end(&c->out, pg_msg_begin(&c->out, '3'));
    return 0;
}

int pg_handle_message(struct pg_conn *c, const struct pg_message *m)
{
    if (m->type == 'X')
        return 1;
    if (c->skip_to_sync && m->type != 'S')
        return 0;
    int rc = 0;
    switch (m->type) {
    case 'Q': rc = simple_query(c, m->u.query.text); break;
    case 'P': rc = do_parse(c, m); break;
    case 'B': rc = do_bind(c, m); break;
    case 'D': rc = do_describe(c, m); break;
    case 'E': rc = do_execute(c, m); break;
    case 'C': rc = do_close(c, m); break;
    case 'H': rc = c->flush(c); break;
    case 'S':
        c->skip_to_sync = false;
        if (c->txn == 'I')
            close_all_portals(c); /* the implicit transaction ends */
        pg_put_ready(&c->out, c->txn);
        break;
    case 'p':
        ext_error(c, "08P01", NULL, 0, "a password message outside authentication");
        break;
    default: break;
    }
    after_message(c);
    return rc;
}
