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

/* ---- --wal physical: files and tuple layouts -------------------------------------- */

/* Where the rows of table relid live: its relfilenode, as the WAL names
 * its blocks. reltablespace 0 means the database's default tablespace,
 * which WAL records name by its OID, so it is resolved here. */
static int read_node(PGconn *c, const struct source_table *t, struct pgwal_relfilenode *out,
                     char *persistence, char *err, size_t errlen)
{
    char relid[16];
    snprintf(relid, sizeof relid, "%u", t->relid);
    const char *params[] = {relid};
    PGresult *r = query(c,
                        "SELECT c.relpersistence, c.relfilenode, pg_relation_filenode(c.oid),"
                        " CASE WHEN c.reltablespace = 0 THEN d.dattablespace"
                        " ELSE c.reltablespace END, d.oid"
                        " FROM pg_class c, pg_database d"
                        " WHERE c.oid = $1 AND d.datname = current_database()",
                        1, params, err, errlen);
    if (!r)
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return error_fmt(err, errlen, "table %s (OID %u) does not exist any more; change the "
                                      "views, and rerun with --rebuild",
                         t->qualified, t->relid);
    }
    *persistence = PQgetvalue(r, 0, 0)[0];
    /* A mapped catalog's file number is in the relation map, not in
     * pg_class, and moves with map updates the follower does not read (a
     * relation without storage has 0 there too, and no file at all). */
    bool mapped = strcmp(PQgetvalue(r, 0, 1), "0") == 0 && !PQgetisnull(r, 0, 2);
    if (mapped || PQgetisnull(r, 0, 2)) {
        PQclear(r);
        return error_fmt(err, errlen,
                         mapped ? "%s is a mapped system catalog (pg_class.relfilenode 0), whose "
                                  "file --wal physical cannot follow; make the views read user "
                                  "tables, or use --wal logical"
                                : "%s has no file of its own (pg_relation_filenode is NULL); "
                                  "--wal physical follows plain tables",
                         t->qualified);
    }
    out->rel = (uint32_t)strtoul(PQgetvalue(r, 0, 2), NULL, 10);
    out->spc = (uint32_t)strtoul(PQgetvalue(r, 0, 3), NULL, 10);
    out->db = (uint32_t)strtoul(PQgetvalue(r, 0, 4), NULL, 10);
    PQclear(r);
    return 0;
}

/* Only permanent tables are in the WAL: an unlogged table writes none of
 * its rows there, a temporary one neither (and lives in one session). */
static int check_persistence(const struct source_table *t, char persistence, char *err,
                             size_t errlen)
{
    if (persistence == 'u')
        return error_fmt(err, errlen,
                         "%s is unlogged: its changes are not written to the WAL, so --wal "
                         "physical cannot follow it; make it permanent with ALTER TABLE %s SET "
                         "LOGGED", t->qualified, t->qualified);
    if (persistence != 'p')
        return error_fmt(err, errlen,
                         "%s is a temporary table (relpersistence '%c'), whose changes are not "
                         "in the WAL; Straum follows permanent tables", t->qualified, persistence);
    return 0;
}

/* A partitioned table's rows live in its partitions' files: the refusal
 * names them (the first few), since reading them is the way out. */
static int refuse_partitioned(PGconn *c, const struct source_table *t, char *err, size_t errlen)
{
    char relid[16], why[200];
    snprintf(relid, sizeof relid, "%u", t->relid);
    const char *params[] = {relid};
    PGresult *r = query(c,
                        "SELECT string_agg(name, ', ' ORDER BY name), count(*) FROM"
                        " (SELECT format('%I.%I', n.nspname, c.relname) AS name"
                        " FROM pg_partition_tree($1::oid::regclass) p"
                        " JOIN pg_class c ON c.oid = p.relid"
                        " JOIN pg_namespace n ON n.oid = c.relnamespace"
                        " WHERE p.isleaf) leaves",
                        1, params, why, sizeof why);
    const char *names = r && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) ? PQgetvalue(r, 0, 0)
                                                                         : NULL;
    char list[400] = "";
    if (names) {
        int n = atoi(PQgetvalue(r, 0, 1));
        if (strlen(names) < 300)
            snprintf(list, sizeof list, " (%s)", names);
        else
            snprintf(list, sizeof list, " (%.300s..., %d in all)", names, n);
    }
    PQclear(r);
    return error_fmt(err, errlen,
                     "%s is partitioned: its rows live in its partitions' files, and --wal "
                     "physical follows plain tables; make the views read its partitions%s, or "
                     "follow it with --wal logical", t->qualified, list);
}

/* Every attribute of table relid, dropped ones included, in attnum order:
 * the domain's base type as load_columns resolves it; last, the declared
 * type as SQL writes it, for messages. */
static PGresult *query_attrs(PGconn *c, uint32_t relid, char *err, size_t errlen)
{
    char id[16];
    snprintf(id, sizeof id, "%u", relid);
    const char *params[] = {id};
    /* A dropped attribute's atttypid is 0: hence the outer join. */
    return query(c,
                 "SELECT a.attnum, a.attname,"
                 " CASE WHEN ty.typtype = 'd' THEN ty.typbasetype ELSE a.atttypid END,"
                 " CASE WHEN ty.typtype = 'd' THEN ty.typtypmod ELSE a.atttypmod END,"
                 " a.attlen, a.attbyval, a.attalign, a.attisdropped, a.atthasmissing,"
                 " format_type(a.atttypid, a.atttypmod)"
                 " FROM pg_attribute a LEFT JOIN pg_type ty ON ty.oid = a.atttypid"
                 " WHERE a.attrelid = $1 AND a.attnum > 0"
                 " ORDER BY a.attnum",
                 1, params, err, errlen);
}

static struct heap_attr attr_of_row(const PGresult *r, int row)
{
    struct heap_attr a = {
        .name = PQgetvalue(r, row, 1),
        .attnum = (int16_t)atoi(PQgetvalue(r, row, 0)),
        .type_oid = (uint32_t)strtoul(PQgetvalue(r, row, 2), NULL, 10),
        .typmod = (int32_t)atoi(PQgetvalue(r, row, 3)),
        .attlen = (int16_t)atoi(PQgetvalue(r, row, 4)),
        .attbyval = PQgetvalue(r, row, 5)[0] == 't',
        .attalign = PQgetvalue(r, row, 6)[0],
        .attisdropped = PQgetvalue(r, row, 7)[0] == 't',
        .atthasmissing = PQgetvalue(r, row, 8)[0] == 't',
    };
    return a;
}

static void free_heap_attrs(struct source_table *t)
{
    for (int i = 0; i < t->heap_natts; i++)
        free((void *)t->heap_attrs[i].name);
    free(t->heap_attrs);
    free(t->col_attr);
    t->heap_attrs = NULL;
    t->col_attr = NULL;
    t->heap_natts = 0;
}

static int load_heap_attrs(PGconn *c, struct source_table *t, char *err, size_t errlen)
{
    free_heap_attrs(t);
    PGresult *r = query_attrs(c, t->relid, err, errlen);
    if (!r)
        return -1;
    int n = PQntuples(r);
    if (n > HEAP_MAX_ATTRS) {
        PQclear(r);
        return error_fmt(err, errlen, "table %s has %d attributes, more than PostgreSQL's %d",
                         t->qualified, n, HEAP_MAX_ATTRS);
    }
    t->heap_attrs = calloc((size_t)n + 1, sizeof *t->heap_attrs);
    t->col_attr = calloc((size_t)t->ncols + 1, sizeof *t->col_attr);
    if (!t->heap_attrs || !t->col_attr) {
        PQclear(r);
        return error_fmt(err, errlen, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        t->heap_attrs[i] = attr_of_row(r, i);
        if (!(t->heap_attrs[i].name = strdup(t->heap_attrs[i].name))) {
            t->heap_natts = i;
            PQclear(r);
            return error_fmt(err, errlen, "out of memory");
        }
        t->heap_natts = i + 1;
    }
    PQclear(r);
    /* load_columns read the live columns a moment ago; an ALTER TABLE in
     * between shows as a mismatch here. */
    for (int k = 0; k < t->ncols; k++) {
        int at = t->cols[k].attnum - 1;
        if (at < 0 || at >= t->heap_natts || t->heap_attrs[at].attisdropped ||
            strcmp(t->heap_attrs[at].name, t->cols[k].name) != 0 ||
            t->heap_attrs[at].type_oid != t->cols[k].type_oid)
            return error_fmt(err, errlen, "column \"%s\" of table %s changed while it was "
                                          "read (ALTER TABLE); run straum-ingest again",
                             t->cols[k].name, t->qualified);
        t->col_attr[k] = at;
    }
    /* A column added with a DEFAULT (PostgreSQL 11's fast default) leaves
     * the rows written before without it: their value lives only in
     * pg_attribute.attmissingval, and heap_tuple refuses such an attribute
     * (atthasmissing). The rows' other values are placed as ever, so an
     * attribute the views do not read is taken as NULL where a row lacks
     * it: its value is never used. A column the views read keeps the flag,
     * and is refused by heap_desc_check (VACUUM FULL writes it into every
     * row). */
    for (int i = 0; i < t->heap_natts; i++) {
        bool read = false;
        for (int k = 0; k < t->ncols && !read; k++)
            read = t->col_attr[k] == i;
        if (!read)
            t->heap_attrs[i].atthasmissing = false;
    }
    char why[600];
    struct heap_desc d = {t->heap_natts, t->heap_attrs};
    if (heap_desc_check(&d, why, sizeof why))
        return error_fmt(err, errlen, "table %s: %s", t->qualified, why);
    return 0;
}

int source_load_physical(PGconn *conn, struct source *src, char *err, size_t errlen)
{
    /* pgwal.c decodes 15's WAL: another version's would only fail at its
     * first page, after the load. */
    if (src->server_version / 10000 != 15)
        return error_fmt(err, errlen,
                         "--wal physical reads PostgreSQL 15's WAL, and the server is "
                         "PostgreSQL %d.%d; follow it with --wal logical",
                         src->server_version / 10000, src->server_version % 10000);
    for (int i = 0; i < src->ntables; i++) {
        struct source_table *t = &src->tables[i];
        if (t->partitioned)
            return refuse_partitioned(conn, t, err, errlen);
        char persistence;
        if (read_node(conn, t, &t->node, &persistence, err, errlen) ||
            check_persistence(t, persistence, err, errlen) ||
            load_heap_attrs(conn, t, err, errlen))
            return -1;
    }
    return 0;
}

int source_relfilenode_now(PGconn *conn, const struct source_table *t,
                           struct pgwal_relfilenode *out, char *err, size_t errlen)
{
    /* ALTER TABLE ... SET UNLOGGED gives the table a new file too: taken
     * for a TRUNCATE's, it would empty the table in the store while its
     * rows stopped coming. */
    char persistence;
    if (read_node(conn, t, out, &persistence, err, errlen))
        return -1;
    if (persistence != 'p')
        return error_fmt(err, errlen,
                         "%s is not a permanent table any more (relpersistence '%c': ALTER TABLE "
                         "... SET UNLOGGED), so its changes are not in the WAL; run ALTER TABLE %s "
                         "SET LOGGED, then straum-ingest run --rebuild",
                         t->qualified, persistence, t->qualified);
    return 0;
}

uint64_t source_wal_end(PGconn *conn)
{
    uint64_t lsn = 0;
    PGresult *r = PQexec(conn, "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
                               "ELSE pg_current_wal_insert_lsn() END, "
                               "current_setting('wal_block_size')::int8, "
                               "pg_size_bytes(current_setting('wal_segment_size'))");
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
        lsn_parse(PQgetvalue(r, 0, 0), &lsn))
        lsn = pgwal_last_record_end(lsn, (uint32_t)strtoul(PQgetvalue(r, 0, 1), NULL, 10),
                                    (uint32_t)strtoul(PQgetvalue(r, 0, 2), NULL, 10));
    PQclear(r);
    return lsn;
}

/* Whether a column Straum reads, retyped in place (no rewrite: the stored
 * bytes are those read before), still means what it meant: the same store
 * type and scale (varchar(20) to varchar(40) or text, numeric(9,2) to
 * numeric(12,2)), as logical mode follows such changes. */
static bool same_meaning(const struct source_column *col, const struct heap_attr *now)
{
    struct store_column_type type;
    char why[200];
    return pgvalue_store_type(now->type_oid, now->typmod, &type, why, sizeof why) == 0 &&
           type.type == col->type.type && type.scale == col->type.scale;
}

static int check_attrs(const struct source_table *t, const PGresult *r, char *err, size_t errlen)
{
    int n = PQntuples(r);
    if (n == 0)
        return error_fmt(err, errlen, "table %s was dropped; change the views, and rerun with "
                                      "--rebuild", t->qualified);
    for (int k = 0; k < t->ncols; k++) {
        const struct source_column *col = &t->cols[k];
        int at = t->col_attr[k];
        struct heap_attr now = at < n ? attr_of_row(r, at) : (struct heap_attr){0};
        if (at >= n || now.attisdropped || strcmp(now.name, col->name) != 0)
            return error_fmt(err, errlen,
                             "column \"%s\" of table %s is gone (dropped or renamed); the views "
                             "need it: change the views, and rerun with --rebuild",
                             col->name, t->qualified);
        const struct heap_attr *was = &t->heap_attrs[at];
        if (now.type_oid == was->type_oid && now.typmod == was->typmod)
            continue;
        if (now.attlen == was->attlen && now.attbyval == was->attbyval &&
            now.attalign == was->attalign && same_meaning(col, &now)) {
            log_debug("column \"%s\" of table %s changed type in place (to %s); its values "
                      "keep their codes, so Straum follows it", col->name, t->qualified,
                      PQgetvalue(r, at, 9));
            continue;
        }
        return error_fmt(err, errlen,
                         "column \"%s\" of table %s changed type (to %s) and its values would "
                         "change meaning in the store; rerun with --rebuild to reload it",
                         col->name, t->qualified, PQgetvalue(r, at, 9));
    }
    /* Every attribute places the ones after it in a tuple: a dropped one
     * keeps its length and alignment, so only a retype changes them. */
    for (int i = 0; i < n && i < t->heap_natts; i++) {
        struct heap_attr now = attr_of_row(r, i);
        const struct heap_attr *was = &t->heap_attrs[i];
        if (now.attlen != was->attlen || now.attbyval != was->attbyval ||
            now.attalign != was->attalign)
            return error_fmt(err, errlen,
                             "attribute %d (\"%s\") of table %s changed how it is stored "
                             "(attlen %d to %d, attalign '%c' to '%c'), which moves the values "
                             "after it in every row; rerun with --rebuild",
                             i + 1, now.name, t->qualified, (int)was->attlen, (int)now.attlen,
                             was->attalign, now.attalign);
    }
    /* Columns added (and maybe dropped since): the views read none of
     * them, and the attributes before them stand where they stood. */
    if (n > t->heap_natts)
        return 2;
    if (n < t->heap_natts)
        return error_fmt(err, errlen,
                         "table %s has %d attributes where %d were read when ingest started; "
                         "rerun with --rebuild", t->qualified, n, t->heap_natts);
    return 0;
}

int source_check_physical(PGconn *conn, struct source_table *t, char *err, size_t errlen)
{
    PGresult *r = query_attrs(conn, t->relid, err, errlen);
    if (!r)
        return PQstatus(conn) == CONNECTION_OK ? -1 : 1;
    int rc = check_attrs(t, r, err, errlen);
    PQclear(r);
    if (rc == 2) { /* columns added: their layout is read again */
        rc = load_heap_attrs(conn, t, err, errlen);
        if (rc == 0)
            log_info("table %s has %d attributes now; following its new rows", t->qualified,
                     t->heap_natts);
    }
    return rc;
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
        free_heap_attrs(t);
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
