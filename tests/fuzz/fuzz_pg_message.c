/* fuzz_pg_message.c -- libFuzzer target for the PostgreSQL front door's
 * parsers of client bytes: the startup packet and regular frontend
 * messages (serve/pg_frame.c), Bind parameters into the text the engine
 * binds (serve/pg_types.c), the session statement recogniser
 * (serve/pg_session.c), and the catalog reader (serve/pg_catalog.c) over
 * two views.
 *
 * The first input byte picks what the rest is: 0 a startup packet body,
 * else a message whose type is that byte. The body is copied to an
 * exact-size allocation, so ASan sees the first byte read past it.
 * Checks:
 *   - no crash, no read outside the body, no leak;
 *   - a refusal names a SQLSTATE of five characters and a message;
 *   - an accepted message's strings and parameters lie inside the body,
 *     its counts within the PG_MAX_* bounds; every parameter converts to
 *     text or is refused with a message, for each type it may be bound as;
 *   - a Query's text classifies as one of the statement kinds; a catalog
 *     one answers RowDescription, DataRows and CommandComplete, or one
 *     ErrorResponse, in whole messages, the columns as many as described. */
#include "serve/pg.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t types[] = {0,    16,   20,   21,   23,   25,   701,
                                 1043, 1082, 1114, 1184, 1700, 705,  3802};

static void check_inside(const unsigned char *body, size_t len, const void *p, size_t n)
{
    const unsigned char *q = p;
    if (n && (q < body || q + n > body + len))
        abort();
}

/* The catalog's answer to text over two views: whole messages, a
 * RowDescription then DataRows of its width and a CommandComplete, or an
 * ErrorResponse alone; the columns pg_catalog_answer returns match. */
static void check_catalog(const char *text, size_t n)
{
    static const struct answer_column trips[] = {{"bucket", 1184}, {"borough", 25}, {"fare", 1700}};
    static const struct answer_column zones[] = {{"Bucket", 1184}, {"n\"x", 20}};
    static const struct engine_relation rels[] = {{"trips", trips, 3, " SELECT 1"}, {"Zones 2", zones, 2, ""}};
    struct pg_conn *c = calloc(1, sizeof *c);
    if (!c)
        return;
    strcpy(c->user, "u");
    strcpy(c->database, "d");
    struct answer_column *cols = NULL;
    int ncols = -1;
    int rc = pg_catalog_answer(c, rels, 2, text, n, 0, PG_CATALOG_SIMPLE, 0, NULL, &cols, &ncols);
    if (c->out.failed) {
        free(cols);
        buf_free(&c->out);
        free(c);
        return;
    }
    const unsigned char *p = (const unsigned char *)c->out.data;
    size_t len = c->out.len, i = 0;
    int msgs = 0, width = -1;
    char last = 0;
    while (i < len) {
        if (len - i < 5)
            abort();
        uint32_t l = (uint32_t)p[i + 1] << 24 | (uint32_t)p[i + 2] << 16 |
                     (uint32_t)p[i + 3] << 8 | p[i + 4];
        if (l < 4 || l > len - i - 1)
            abort();
        char t = (char)p[i];
        int16_t cells = l >= 6 ? (int16_t)(p[i + 5] << 8 | p[i + 6]) : -1;
        if (msgs == 0 && t != (rc ? 'E' : 'T'))
            abort();
        if (t == 'T')
            width = cells;
        if (t == 'D' && cells != width)
            abort();
        last = t;
        msgs++;
        i += 1 + l;
    }
    if (rc ? msgs != 1 || cols : last != 'C' || ncols != width || !cols)
        abort();
    free(cols);
    buf_free(&c->out);
    free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t len = size - 1;
    unsigned char *body = malloc(len ? len : 1);
    if (!body)
        return 0;
    memcpy(body, data + 1, len);
    char why[200];
    if (data[0] == 0) {
        struct pg_startup st;
        if (pg_parse_startup(body, len, &st, why, sizeof why) == 0) {
            if (st.nparams > PG_MAX_STARTUP_PARAMS)
                abort();
            for (int i = 0; i < st.nparams; i++) {
                check_inside(body, len, st.names[i], strlen(st.names[i]) + 1);
                check_inside(body, len, st.values[i], strlen(st.values[i]) + 1);
            }
            (void)pg_startup_param(&st, "user");
        } else if (!why[0]) {
            abort();
        }
        free(body);
        return 0;
    }
    struct pg_message *m = malloc(sizeof *m);
    const char *state = NULL;
    if (pg_parse_message((char)data[0], body, len, m, &state, why, sizeof why) != 0) {
        if (!state || strlen(state) != 5 || !why[0])
            abort();
    } else if (m->type == 'Q') {
        size_t n = strlen(m->u.query.text);
        check_inside(body, len, m->u.query.text, n + 1);
        enum pg_stmt_kind k = pg_statement_kind(m->u.query.text, n);
        if (k != PG_STMT_ASK && k != PG_STMT_EMPTY && k != PG_STMT_SESSION &&
            k != PG_STMT_CATALOG)
            abort();
        (void)pg_session_has_rows(m->u.query.text, n);
        if (k == PG_STMT_CATALOG)
            check_catalog(m->u.query.text, n);
    } else if (m->type == 'P') {
        if (m->u.parse.nparams < 0 || m->u.parse.nparams > PG_MAX_PARAMS)
            abort();
        check_inside(body, len, m->u.parse.text, strlen(m->u.parse.text) + 1);
        for (int i = 0; i < m->u.parse.nparams; i++)
            (void)pg_type_compatible(m->u.parse.oids[i], types[i % 14]);
    } else if (m->type == 'B') {
        if (m->u.bind.nparams > PG_MAX_PARAMS || m->u.bind.nformats > PG_MAX_PARAMS ||
            m->u.bind.nresults > PG_MAX_PARAMS)
            abort();
        for (int i = 0; i < m->u.bind.nparams; i++) {
            const struct pg_bind_param *p = &m->u.bind.params[i];
            if (!p->data)
                continue;
            check_inside(body, len, p->data, (size_t)p->len);
            for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
                char tmp[1100];
                const char *text;
                size_t n;
                why[0] = '\0';
                if (pg_param_text(p, 1, types[t], tmp, sizeof tmp, &text, &n, why, sizeof why))
                    if (!why[0])
                        abort();
            }
        }
    }
    free(m);
    free(body);
    return 0;
}
