/* source.c -- the PostgreSQL side as the views need it: which tables and
 * columns, of which types, with which replica identity; and connecting.
 *
 * Every table the views name is resolved once (to_regclass, so search_path
 * and quoting work as in psql), and every view that reads it records which of
 * the table's columns are its fact columns or its dim's key and columns.
 * Several views over one table share one source_table, so a changed row is
 * decoded once and applied to each. */
#include "ingest/internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

PGconn *source_connect(const char *conninfo, bool replication, char *err, size_t errlen)
{
    /* expand_dbname lets conninfo be a keyword string or a URI; keywords
     * after it override it. */
    const char *keys[6] = {0}, *vals[6] = {0};
    int n = 0;
    if (conninfo && *conninfo) {
        keys[n] = "dbname";
        vals[n++] = conninfo;
    }
    /* The store keeps UTF-8 and answers are JSON: PostgreSQL converts a
     * LATIN1, WIN1252 or other database's texts on the way out, in COPY and
     * in pgoutput alike (a client_encoding in conninfo is overridden).
     * Without it the connection takes the database's encoding, and such
     * texts reached the store as their LATIN1 bytes. */
    keys[n] = "client_encoding";
    vals[n++] = "UTF8";
    if (replication) {
        /* Text-mode pgoutput (servers before 14) must print dates and floats
         * the way pgvalue reads them. */
        keys[n] = "replication";
        vals[n++] = "database";
        keys[n] = "options";
        vals[n++] = "-c datestyle=ISO -c extra_float_digits=3";
    }
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        error_fmt(err, errlen, "cannot connect to PostgreSQL: %s",
             c ? PQerrorMessage(c) : "out of memory");
        size_t n = strlen(err);
        while (n && (err[n - 1] == '\n' || err[n - 1] == ' '))
            err[--n] = '\0';
        PQfinish(c);
        return NULL;
    }
    return c;
}

/* "schema"."name" with quotes doubled, or "name" alone. */
static char *quote_qualified(const char *schema, const char *name)
{
    size_t n = 8 + 2 * (strlen(name) + (schema ? strlen(schema) : 0));
    char *q = malloc(n), *p = q;
    if (!q)
        return NULL;
    const char *parts[2] = {schema, name};
    for (int i = 0; i < 2; i++) {
        if (!parts[i])
            continue;
        if (p != q)
            *p++ = '.';
        *p++ = '"';
        for (const char *c = parts[i]; *c; c++) {
            if (*c == '"')
                *p++ = '"';
            *p++ = *c;
        }
        *p++ = '"';
    }
    *p = '\0';
    return q;
}

static PGresult *query(PGconn *c, const char *sql, int n, const char *const *params, char *err,
                       size_t errlen)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        error_fmt(err, errlen, "catalog query failed: %s", PQerrorMessage(c));
        PQclear(r);
        return NULL;
    }
    return r;
}

static int load_columns(PGconn *c, struct source_table *t, char *err, size_t errlen)
{
    char relid[16];
    snprintf(relid, sizeof relid, "%u", t->relid);
    const char *params[] = {relid};
    /* Domains read as their base type. */
    PGresult *r = query(c,
                        "SELECT a.attnum, a.attname,"
                        " CASE WHEN ty.typtype = 'd' THEN ty.typbasetype ELSE a.atttypid END,"
                        " CASE WHEN ty.typtype = 'd' THEN ty.typtypmod ELSE a.atttypmod END,"
                        " a.atttypid"
                        " FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid"
                        " WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped"
                        " ORDER BY a.attnum",
                        1, params, err, errlen);
    if (!r)
        return -1;
    for (int i = 0; i < t->ncols; i++) {
        struct source_column *col = &t->cols[i];
        int row = -1;
        for (int k = 0; k < PQntuples(r) && row < 0; k++)
            if (strcmp(PQgetvalue(r, k, 1), col->name) == 0)
                row = k;
        if (row < 0) {
            PQclear(r);
            return error_fmt(err, errlen, "column \"%s\" does not exist in table %s", col->name,
                        t->qualified);
        }
        col->attnum = atoi(PQgetvalue(r, row, 0));
        col->type_oid = (uint32_t)strtoul(PQgetvalue(r, row, 2), NULL, 10);
        col->typmod = atoi(PQgetvalue(r, row, 3));
        col->declared_oid = (uint32_t)strtoul(PQgetvalue(r, row, 4), NULL, 10);
        char why[200];
        if (pgvalue_store_type(col->type_oid, col->typmod, &col->type, why, sizeof why)) {
            PQclear(r);
            return error_fmt(err, errlen, "column \"%s\" of table %s: %s", col->name, t->qualified, why);
        }
    }
    PQclear(r);
    return 0;
}

static int resolve_table(PGconn *c, struct source_table *t, char *err, size_t errlen)
{
    const char *params[] = {t->qualified};
    PGresult *r = query(c,
                        "SELECT c.oid, n.nspname, c.relname, c.relreplident,"
                        /* never analyzed (-1): estimate from its pages, ~60 rows each */
                        " CASE WHEN c.reltuples >= 0 THEN c.reltuples"
                        " ELSE pg_relation_size(c.oid) / 8192 * 60 END, c.relkind"
                        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                        " WHERE c.oid = to_regclass($1)",
                        1, params, err, errlen);
    if (!r)
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return error_fmt(err, errlen, "table %s does not exist; the views read it: create it, or "
                                 "change the views (a store built from it then needs "
                                 "straum-ingest run --rebuild)", t->qualified);
    }
    const char *kind = PQgetvalue(r, 0, 5);
    if (strcmp(kind, "r") != 0 && strcmp(kind, "p") != 0) {
        PQclear(r);
        return error_fmt(err, errlen, "%s is not a table (relkind %s); Straum follows tables",
                    t->qualified, kind);
    }
    t->relid = (uint32_t)strtoul(PQgetvalue(r, 0, 0), NULL, 10);
    free(t->schema);
    free(t->name);
    t->schema = strdup(PQgetvalue(r, 0, 1));
    t->name = strdup(PQgetvalue(r, 0, 2));
    t->replident = PQgetvalue(r, 0, 3)[0];
    t->reltuples = atof(PQgetvalue(r, 0, 4));
    t->partitioned = strcmp(kind, "p") == 0;
    PQclear(r);
    free(t->qualified);
    t->qualified = quote_qualified(t->schema, t->name);
    return t->schema && t->name && t->qualified ? 0 : error_fmt(err, errlen, "out of memory");
}

/* Index of a column in the table's list, added if new. */
static int table_column(struct source_table *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i].name, name) == 0)
            return i;
    struct source_column *cols = realloc(t->cols, sizeof *cols * (size_t)(t->ncols + 1));
    if (!cols)
        return -1;
    t->cols = cols;
    memset(&cols[t->ncols], 0, sizeof *cols);
    cols[t->ncols].name = strdup(name);
    return cols[t->ncols].name ? t->ncols++ : -1;
}

/* The table for (schema, name) as the views wrote them, added if new. */
static struct source_table *table_for(struct source *src, const char *schema, const char *name)
{
    char *q = quote_qualified(schema, name);
    if (!q)
        return NULL;
    for (int i = 0; i < src->ntables; i++)
        if (strcmp(src->tables[i].qualified, q) == 0) {
            free(q);
            return &src->tables[i];
        }
    struct source_table *t = realloc(src->tables, sizeof *t * (size_t)(src->ntables + 1));
    if (!t) {
        free(q);
        return NULL;
    }
    src->tables = t;
    t = &src->tables[src->ntables++];
    memset(t, 0, sizeof *t);
    t->qualified = q;
    t->schema = schema ? strdup(schema) : NULL;
    t->name = strdup(name);
    return t;
}

static int add_fact_use(struct source *src, int v, char *err, size_t errlen)
{
    const struct sql_view *view = &src->views->views[v];
    struct source_table *t = table_for(src, view->fact_schema, view->fact_table);
    struct fact_use *uses = t ? realloc(t->facts, sizeof *uses * (size_t)(t->nfacts + 1)) : NULL;
    if (!uses)
        return error_fmt(err, errlen, "out of memory");
    t->facts = uses;
    struct fact_use *u = &uses[t->nfacts++];
    memset(u, 0, sizeof *u);
    u->view = v;
    u->col = calloc((size_t)view->nfact_columns + 1, sizeof *u->col);
    if (!u->col)
        return error_fmt(err, errlen, "out of memory");
    for (int i = 0; i < view->nfact_columns; i++)
        if ((u->col[i] = table_column(t, view->fact_columns[i].name)) < 0)
            return error_fmt(err, errlen, "out of memory");
    return 0;
}

static int add_dim_uses(struct source *src, int v, char *err, size_t errlen)
{
    const struct sql_view *view = &src->views->views[v];
    for (int j = 0; j < view->njoins; j++) {
        const struct sql_join *join = &view->joins[j];
        struct source_table *t = table_for(src, join->schema, join->table);
        struct dim_use *uses = t ? realloc(t->dims, sizeof *uses * (size_t)(t->ndims + 1)) : NULL;
        if (!uses)
            return error_fmt(err, errlen, "out of memory");
        t->dims = uses;
        struct dim_use *u = &uses[t->ndims++];
        memset(u, 0, sizeof *u);
        u->view = v;
        u->join = j;
        u->fact_column = join->fact_column;
        u->key_col = table_column(t, join->dim_key);
        u->cols = calloc((size_t)join->ndim_columns + 1, sizeof *u->cols);
        if (!u->cols || u->key_col < 0)
            return error_fmt(err, errlen, "out of memory");
        for (int c = 1; c < join->ndim_columns; c++)
            if ((u->cols[c - 1] = table_column(t, join->dim_columns[c])) < 0)
                return error_fmt(err, errlen, "out of memory");
    }
    return 0;
}

static int check_dim_key(PGconn *c, struct source_table *t, char *err, size_t errlen)
{
    if (!t->ndims)
        return 0;
    char relid[16], attnum[16];
    snprintf(relid, sizeof relid, "%u", t->relid);
    snprintf(attnum, sizeof attnum, "%d", t->cols[t->dims[0].key_col].attnum);
    const char *params[] = {relid, attnum};
    PGresult *r = query(c,
                        "SELECT 1 FROM pg_index WHERE indrelid = $1 AND indisunique"
                        " AND indnkeyatts = 1 AND indkey[0] = $2 AND indpred IS NULL",
                        2, params, err, errlen);
    if (!r)
        return -1;
    t->has_unique_key = PQntuples(r) > 0;
    PQclear(r);
    return 0;
}

/* Dim keys are coded like the fact column they join, so both sides agree. */
static int type_dim_uses(struct source *src, struct source_table *t, char *err, size_t errlen)
{
    for (int i = 0; i < t->ndims; i++) {
        struct dim_use *u = &t->dims[i];
        const struct store_column_type *ft = &src->view_types[u->view].fact[u->fact_column];
        const struct store_column_type *kt = &t->cols[u->key_col].type;
        if (ft->type != kt->type || ft->scale != kt->scale)
            return error_fmt(err, errlen,
                        "view \"%s\" joins %s on \"%s\", whose type differs from the fact "
                        "column \"%s\"; join columns must have the same type",
                        src->views->views[u->view].name, t->qualified, t->cols[u->key_col].name,
                        src->views->views[u->view].fact_columns[u->fact_column].name);
        u->key_type = *ft;
    }
    return 0;
}

static int build_view_types(struct source *src, char *err, size_t errlen)
{
    src->view_types = calloc((size_t)src->views->nviews + 1, sizeof *src->view_types);
    if (!src->view_types)
        return error_fmt(err, errlen, "out of memory");
    for (int i = 0; i < src->ntables; i++) {
        struct source_table *t = &src->tables[i];
        for (int f = 0; f < t->nfacts; f++) {
            const struct sql_view *v = &src->views->views[t->facts[f].view];
            struct store_column_type *types = calloc((size_t)v->nfact_columns + 1, sizeof *types);
            if (!types)
                return error_fmt(err, errlen, "out of memory");
            for (int c = 0; c < v->nfact_columns; c++)
                types[c] = t->cols[t->facts[f].col[c]].type;
            src->view_types[t->facts[f].view].fact = types;
        }
    }
    return 0;
}

static int check_bucket_types(struct source *src, char *err, size_t errlen)
{
    for (int v = 0; v < src->views->nviews; v++) {
        const struct sql_view *view = &src->views->views[v];
        if (src->view_types[v].fact[view->bucket_fact_column].type != STORE_TYPE_TIMESTAMP)
            return error_fmt(err, errlen, "view \"%s\": the bucket column \"%s\" must be a timestamp "
                                     "or timestamptz", view->name,
                        view->fact_columns[view->bucket_fact_column].name);
    }
    return 0;
}

static int load_settings(PGconn *c, struct source *src, char *err, size_t errlen)
{
    PGresult *r = query(c,
                        "SELECT current_setting('server_version_num')::int,"
                        " current_setting('wal_level'),"
                        " current_setting('max_replication_slots')::int,"
                        " current_setting('max_wal_senders')::int",
                        0, NULL, err, errlen);
    if (!r)
        return -1;
    src->server_version = atoi(PQgetvalue(r, 0, 0));
    snprintf(src->wal_level, sizeof src->wal_level, "%s", PQgetvalue(r, 0, 1));
    src->max_replication_slots = atoi(PQgetvalue(r, 0, 2));
    src->max_wal_senders = atoi(PQgetvalue(r, 0, 3));
    PQclear(r);
    return 0;
}

int source_load(PGconn *conn, const struct sql_view_list *views, struct source *out, char *err,
                size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->views = views;
    if (load_settings(conn, out, err, errlen))
        return -1;
    for (int v = 0; v < views->nviews; v++)
        if (add_fact_use(out, v, err, errlen) || add_dim_uses(out, v, err, errlen))
            return -1;
    for (int i = 0; i < out->ntables; i++) {
        struct source_table *t = &out->tables[i];
        if (resolve_table(conn, t, err, errlen) || load_columns(conn, t, err, errlen) ||
            check_dim_key(conn, t, err, errlen))
            return -1;
        for (int k = 0; k < i; k++)
            if (out->tables[k].relid == t->relid)
                return error_fmt(err, errlen, "%s and %s are the same table; write it one way",
                            out->tables[k].qualified, t->qualified);
    }
    if (build_view_types(out, err, errlen) || check_bucket_types(out, err, errlen))
        return -1;
    for (int i = 0; i < out->ntables; i++)
        if (type_dim_uses(out, &out->tables[i], err, errlen))
            return -1;
    return 0;
}

static void free_filter(struct row_filter *f)
{
    if (!f)
        return;
    free_filter(f->left);
    free_filter(f->right);
    free(f->values);
    free(f);
}

void source_free(struct source *src)
{
    for (int i = 0; i < src->ntables; i++) {
        struct source_table *t = &src->tables[i];
        for (int c = 0; c < t->ncols; c++)
            free(t->cols[c].name);
        for (int f = 0; f < t->nfacts; f++) {
            const struct sql_view *v = &src->views->views[t->facts[f].view];
            for (int k = 0; t->facts[f].filters && k < v->nfilters; k++)
                free_filter(t->facts[f].filters[k]);
            free(t->facts[f].filters);
            free(t->facts[f].col);
        }
        for (int d = 0; d < t->ndims; d++)
            free(t->dims[d].cols);
        free(t->cols);
        free(t->facts);
        free(t->dims);
        free(t->relmap);
        free(t->scratch);
        free(t->schema);
        free(t->name);
        free(t->qualified);
    }
    free(src->tables);
    if (src->view_types)
        for (int v = 0; v < src->views->nviews; v++)
            free((void *)src->view_types[v].fact);
    free(src->view_types);
    memset(src, 0, sizeof *src);
}

struct source_table *source_by_relid(struct source *src, uint32_t relid)
{
    for (int i = 0; i < src->ntables; i++)
        if (src->tables[i].relid == relid)
            return &src->tables[i];
    return NULL;
}

struct source_table *source_by_name(struct source *src, const char *schema, const char *name)
{
    for (int i = 0; i < src->ntables; i++)
        if (strcmp(src->tables[i].schema, schema) == 0 && strcmp(src->tables[i].name, name) == 0)
            return &src->tables[i];
    return NULL;
}

/* ---- Filters -------------------------------------------------------------------- */

/* A FILTER constant as the value of its column's type, so filters compare
 * codes: store_code_of_value, PostgreSQL's input rules (SPEC.md §4.1). A
 * constant no stored value equals (STORE_CODE_NONE: more decimals than the
 * column keeps, say) is refused rather than rounded, since rounding would
 * change what <, <=, > and >= mean (x > 1.005 is x >= 1.01 at scale 2, but
 * x > round(1.005) = x > 1.01 is not). A constant written without an
 * offset for a timestamptz column is UTC. Returns 0, or -1 with a message. */
static int filter_constant(const struct store_column_type *t, const struct sql_const *c,
                           struct pgvalue *out, char *err, size_t errlen)
{
    struct store_value v = {STORE_VALUE_TEXT, c->boolean, c->text, c->len};
    if (c->kind == SQL_CONST_BOOL)
        v.form = STORE_VALUE_BOOL;
    else if (c->kind == SQL_CONST_NUMBER)
        v.form = STORE_VALUE_NUMBER;
    else if (c->kind == SQL_CONST_NULL)
        return error_fmt(err, errlen, "NULL compares with IS NULL or IS NOT NULL");
    struct store_coded coded;
    if (store_code_of_value(t, &v, &coded, err, errlen) != STORE_CODE_OK)
        return -1;
    memset(out, 0, sizeof *out);
    if (t->type == STORE_TYPE_TEXT) {
        out->text = coded.text;
        out->len = coded.len;
        return 0;
    }
    pgvalue_from_code(t, coded.code, out);
    return 0;
}

static struct row_filter *compile_filter(const struct sql_filter *f, const struct fact_use *u,
                                         const struct source_table *t, const char *view,
                                         char *err, size_t errlen)
{
    struct row_filter *r = calloc(1, sizeof *r);
    if (!r) {
        error_fmt(err, errlen, "out of memory");
        return NULL;
    }
    r->kind = f->kind;
    r->cmp = f->cmp;
    if (f->left && !(r->left = compile_filter(f->left, u, t, view, err, errlen)))
        goto fail;
    if (f->right && !(r->right = compile_filter(f->right, u, t, view, err, errlen)))
        goto fail;
    if (f->kind == SQL_FILTER_AND || f->kind == SQL_FILTER_OR || f->kind == SQL_FILTER_NOT)
        return r;
    r->col = u->col[f->fact_column];
    const struct source_column *col = &t->cols[r->col];
    if (col->type.type == STORE_TYPE_TEXT && f->kind == SQL_FILTER_CMP && f->cmp != SQL_CMP_EQ &&
        f->cmp != SQL_CMP_NE) {
        error_fmt(err, errlen, "view \"%s\": FILTER orders text column \"%s\"; text compares with "
                          "=, <> and IN only (collations differ)", view, col->name);
        goto fail;
    }
    r->nvalues = f->nvalues;
    r->values = calloc((size_t)f->nvalues + 1, sizeof *r->values);
    if (!r->values) {
        error_fmt(err, errlen, "out of memory");
        goto fail;
    }
    for (int i = 0; i < f->nvalues; i++) {
        char why[200];
        const struct sql_const *c = &f->values[i];
        if (filter_constant(&col->type, c, &r->values[i], why, sizeof why)) {
            error_fmt(err, errlen, "view \"%s\": FILTER on \"%s\" at line %d, column %d: %s",
                        view, col->name, c->line, c->column, why);
            goto fail;
        }
    }
    return r;
fail:
    free_filter(r);
    return NULL;
}

int source_compile_filters(struct source *src, char *err, size_t errlen)
{
    for (int i = 0; i < src->ntables; i++) {
        struct source_table *t = &src->tables[i];
        for (int f = 0; f < t->nfacts; f++) {
            struct fact_use *u = &t->facts[f];
            const struct sql_view *v = &src->views->views[u->view];
            u->filters = calloc((size_t)v->nfilters + 1, sizeof *u->filters);
            if (!u->filters)
                return error_fmt(err, errlen, "out of memory");
            for (int k = 0; k < v->nfilters; k++)
                if (!(u->filters[k] = compile_filter(v->filters[k], u, t, v->name, err, errlen)))
                    return -1;
        }
    }
    return 0;
}
