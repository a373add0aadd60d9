/* view.c -- CREATE VIEW statements compiled to struct sql_view.
 *
 *   view  := CREATE [OR REPLACE] VIEW name [WITH (buckets = '...')] AS
 *            SELECT item, ... FROM rel [join ...] GROUP BY group, ...
 *   item  := date_bin('<interval>', col, <origin>) | col | aggregate
 *            [FILTER (WHERE ...)]; each with [[AS] name]
 *   rel   := [schema.]table [[AS] alias]
 *   join  := [LEFT [OUTER] | INNER] JOIN rel ON col = col
 *
 * Parsing happens in two passes because SELECT names aliases that FROM
 * defines later: first the statement is read into raw items, then names are
 * resolved and the view's columns, joins, cell keys and accumulators built.
 * The SELECT list must be exactly what PostgreSQL would run: every
 * non-aggregate column grouped, so the view body is also the oracle's SQL. */
#include "sql/filter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum item_kind { ITEM_BUCKET, ITEM_COLUMN, ITEM_AGG };

struct raw_item {
    enum item_kind kind;
    const char *name;             /* output name: alias or PostgreSQL's default */
    const struct sql_token *tok;  /* where the item starts */
    struct colref col;            /* COLUMN; AGG argument; BUCKET time column */
    bool has_col;
    int64_t stride;               /* BUCKET */
    int64_t origin;
    bool origin_has_zone;
    enum sql_agg agg;             /* AGG */
    const char *fraction_text;
    double fraction;
    struct raw_filter *filter;
};

struct raw_rel {
    const char *schema, *table, *alias;
    const struct sql_token *tok;
};

struct raw_join {
    struct raw_rel rel;
    enum sql_join_kind kind;
    struct colref left, right;
};

struct raw_group {
    const struct sql_token *tok;
    int ordinal;           /* > 0 for GROUP BY 2 */
    struct colref col;
};

struct view_builder {
    struct parser *p;
    struct sql_view *v;
    const struct sql_token *start;

    const struct sql_token *buckets_tok;
    struct raw_item *items;
    int nitems, items_cap;
    struct raw_rel fact;
    struct raw_join *joins;
    int njoins, joins_cap;
    struct raw_group *groups;
    int ngroups, groups_cap;

    struct sql_view_column *columns;
    struct sql_fact_column *fact_cols;
    int nfact, fact_cap;
    struct sql_join *sjoins;
    struct colref *join_fact_refs; /* the fact side of each ON */
    int *dim_cap;                  /* capacity of each join's dim_columns */
    int *cell_keys;
    int ncell_keys, cell_keys_cap;
    const struct sql_filter **filters;
    int nfilters, filters_cap;
    struct sql_count_spec *counts;
    int ncounts, counts_cap;
    struct sql_sum_spec *sums;
    int nsums, sums_cap;
    struct sql_value_count_spec *vcs;
    int nvcs, vcs_cap;
};

#define GROW(b, arr, n, cap)                                                      \
    ((arr) = sql_arena_grow((b)->p->arena, (arr), sizeof *(arr), &(cap), (n) + 1), \
     (arr) ? true : fail_at((b)->p, peek((b)->p), SQL_ERR_LIMIT, "out of memory"))

/* ---- Pass 1: reading the statement ------------------------------------------ */

static bool parse_options(struct view_builder *b)
{
    struct parser *p = b->p;
    if (!accept_kw(p, "with"))
        return true;
    if (!expect_op(p, "("))
        return false;
    do {
        const struct sql_token *name = expect_ident(p, "an option name");
        if (!name)
            return false;
        if (strcmp(name->text, "buckets") != 0)
            return fail_at(p, name, SQL_ERR_INVALID,
                           "unknown view option \"%s\"; the only option is buckets",
                           name->text);
        if (b->buckets_tok)
            return fail_at(p, name, SQL_ERR_INVALID, "option buckets is given twice");
        if (!expect_op(p, "="))
            return false;
        if (peek(p)->kind != TOK_STRING)
            return fail_expected(p, peek(p), "a list of widths such as '1 hour, 1 day'");
        b->buckets_tok = next(p);
    } while (accept_op(p, ","));
    return expect_op(p, ")");
}

static bool parse_bucket_item(struct view_builder *b, struct raw_item *it)
{
    struct parser *p = b->p;
    it->kind = ITEM_BUCKET;
    it->name = "date_bin";
    struct sql_const stride, origin;
    const struct sql_token *st = peek(p);
    if (!parse_const(p, &stride))
        return false;
    if (stride.kind != SQL_CONST_STRING || (stride.cast && strcmp(stride.cast, "interval")))
        return fail_at(p, st, SQL_ERR_INVALID,
                       "date_bin's first argument must be an interval such as '1 hour'");
    char why[160];
    if (!sql_parse_interval(stride.text, &it->stride, why, sizeof why))
        return fail_at(p, st, SQL_ERR_INVALID, "%s", why);
    if (it->stride > SQL_MAX_WIDTH_USEC)
        return fail_at(p, st, SQL_ERR_INVALID, "date_bin's interval \"%.40s\" is longer than "
                       "the 100 years a width may span", stride.text);
    if (!expect_op(p, ",") || !parse_colref(p, &it->col))
        return false;
    it->has_col = true;
    if (!is_op(peek(p), ","))
        return fail_at(p, peek(p), SQL_ERR_SYNTAX,
                       "date_bin needs an origin: date_bin('1 hour', col, "
                       "timestamptz 'epoch')");
    next(p);
    const struct sql_token *ot = peek(p);
    if (!parse_const(p, &origin))
        return false;
    if (origin.kind != SQL_CONST_STRING ||
        (origin.cast && strcmp(origin.cast, "timestamptz") && strcmp(origin.cast, "timestamp")))
        return fail_at(p, ot, SQL_ERR_INVALID,
                       "date_bin's origin must be a timestamp such as timestamptz 'epoch'");
    bool has_offset;
    if (!sql_parse_timestamp(origin.text, &it->origin, &has_offset, why, sizeof why))
        return fail_at(p, ot, SQL_ERR_INVALID, "%s", why);
    it->origin_has_zone = !origin.cast || strcmp(origin.cast, "timestamp") != 0;
    return expect_op(p, ")");
}

static bool parse_percentile_args(struct view_builder *b, struct raw_item *it)
{
    struct parser *p = b->p;
    const struct sql_token *t = peek(p);
    if (t->kind != TOK_NUMBER)
        return fail_expected(p, t, "a fraction between 0 and 1");
    next(p);
    errno = 0;
    char *end;
    double f = strtod(t->text, &end);
    if (errno || *end || f < 0 || f > 1)
        return fail_at(p, t, SQL_ERR_INVALID, "percentile value %s is not between 0 and 1",
                       t->text);
    it->fraction = f;
    it->fraction_text = t->text;
    if (!expect_op(p, ")") || !expect_kw(p, "within") || !expect_kw(p, "group") ||
        !expect_op(p, "(") || !expect_kw(p, "order") || !expect_kw(p, "by") ||
        !parse_colref(p, &it->col))
        return false;
    it->has_col = true;
    const struct sql_token *dir = peek(p);
    if (accept_kw(p, "desc"))
        return fail_at(p, dir, SQL_ERR_UNSUPPORTED,
                       "percentiles are kept in ascending order only; remove DESC");
    accept_kw(p, "asc");
    if (accept_kw(p, "nulls") && !accept_kw(p, "first") && !expect_kw(p, "last"))
        return false;
    return expect_op(p, ")");
}

static bool parse_agg_column(struct view_builder *b, struct raw_item *it)
{
    struct parser *p = b->p;
    if (!parse_colref(p, &it->col))
        return false;
    it->has_col = true;
    if (!is_op(peek(p), ")"))
        return fail_at(p, peek(p), SQL_ERR_UNSUPPORTED,
                       "an aggregate reads one column, not an expression");
    next(p);
    return true;
}

static bool parse_agg_args(struct view_builder *b, struct raw_item *it,
                           const struct sql_token *fn)
{
    struct parser *p = b->p;
    const struct sql_token *t = peek(p);
    if (it->agg == SQL_AGG_PERCENTILE_DISC || it->agg == SQL_AGG_PERCENTILE_CONT)
        return parse_percentile_args(b, it);
    if (it->agg == SQL_AGG_COUNT && accept_op(p, "*")) {
        it->agg = SQL_AGG_COUNT_STAR;
        return expect_op(p, ")");
    }
    if (accept_kw(p, "distinct")) {
        if (it->agg != SQL_AGG_COUNT)
            return fail_at(p, t, SQL_ERR_UNSUPPORTED,
                           "%s(DISTINCT ...) is not supported; only count(DISTINCT ...)",
                           fn->text);
        it->agg = SQL_AGG_COUNT_DISTINCT;
    } else {
        accept_kw(p, "all");
    }
    return parse_agg_column(b, it);
}

/* "count, sum, avg, min, max, percentile_disc or percentile_cont": the
 * functions of sql_aggs, each once, in the table's order. */
static void agg_functions_text(char *buf, size_t len)
{
    const char *seen[SQL_NAGGS];
    int n = 0;
    for (int a = 0; a < SQL_NAGGS; a++) {
        bool dup = false;
        for (int k = 0; k < n; k++)
            dup |= strcmp(seen[k], sql_aggs[a].function) == 0;
        if (!dup)
            seen[n++] = sql_aggs[a].function;
    }
    size_t at = 0;
    buf[0] = '\0';
    for (int k = 0; k < n && at < len; k++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s",
                               k == 0 ? "" : k == n - 1 ? " or " : ", ", seen[k]);
}

static bool parse_agg_item(struct view_builder *b, struct raw_item *it,
                           const struct sql_token *fn)
{
    static const char *const unsupported[] = {
        "stddev", "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp",
        "string_agg", "array_agg", "json_agg", "jsonb_agg", "mode", "bool_and",
        "bool_or", "every", "bit_and", "bit_or", "corr", "covar_pop", "covar_samp",
        "regr_slope", "median", "first", "last",
    };
    struct parser *p = b->p;
    it->kind = ITEM_AGG;
    it->name = fn->text;
    int agg = sql_agg_by_function(fn->text);
    if (agg < 0) {
        for (size_t k = 0; k < sizeof unsupported / sizeof unsupported[0]; k++)
            if (strcmp(fn->text, unsupported[k]) == 0) {
                char names[200];
                agg_functions_text(names, sizeof names);
                return fail_at(p, fn, SQL_ERR_UNSUPPORTED,
                               "aggregate \"%s\" is not supported; use %s", fn->text, names);
            }
        return fail_at(p, fn, SQL_ERR_UNKNOWN_COLUMN, "unknown function \"%s\"", fn->text);
    }
    it->agg = (enum sql_agg)agg;
    if (!parse_agg_args(b, it, fn))
        return false;
    if (is_kw(peek(p), "over"))
        return fail_at(p, peek(p), SQL_ERR_UNSUPPORTED, "window functions are not supported");
    if (!accept_kw(p, "filter"))
        return true;
    if (!expect_op(p, "(") || !expect_kw(p, "where") || !(it->filter = parse_filter(p)))
        return false;
    return expect_op(p, ")");
}

static bool parse_item(struct view_builder *b, struct raw_item *it)
{
    struct parser *p = b->p;
    const struct sql_token *t = peek(p);
    memset(it, 0, sizeof *it);
    it->tok = t;
    if (is_op(t, "*"))
        return fail_at(p, t, SQL_ERR_UNSUPPORTED,
                       "a view cannot SELECT *: list the bucket, keys and measures");
    if (t->kind == TOK_IDENT && is_op(peek_at(p, 1), "(")) {
        p->pos += 2;
        if (strcmp(t->text, "date_bin") == 0) {
            if (!parse_bucket_item(b, it))
                return false;
        } else if (!parse_agg_item(b, it, t)) {
            return false;
        }
    } else {
        if (t->kind != TOK_IDENT || is_reserved(t))
            return fail_expected(p, t, "a column, date_bin(...) or an aggregate");
        it->kind = ITEM_COLUMN;
        if (!parse_colref(p, &it->col))
            return false;
        it->has_col = true;
        it->name = it->col.name;
    }
    if (accept_kw(p, "as")) {
        const struct sql_token *a = expect_ident(p, "a column name after AS");
        if (!a)
            return false;
        it->name = a->text;
    } else if (peek(p)->kind == TOK_IDENT && !is_reserved(peek(p))) {
        it->name = next(p)->text;
    }
    return true;
}

static bool parse_rel(struct view_builder *b, struct raw_rel *r)
{
    struct parser *p = b->p;
    const struct sql_token *a = expect_ident(p, "a table name");
    if (!a)
        return false;
    r->tok = a;
    r->table = a->text;
    if (accept_op(p, ".")) {
        const struct sql_token *t = expect_ident(p, "a table name");
        if (!t)
            return false;
        r->schema = a->text;
        r->table = t->text;
    }
    if (is_op(peek(p), "."))
        return fail_at(p, peek(p), SQL_ERR_UNSUPPORTED,
                       "table names have at most a schema in front");
    r->alias = r->table;
    if (accept_kw(p, "as")) {
        const struct sql_token *al = expect_ident(p, "an alias after AS");
        if (!al)
            return false;
        r->alias = al->text;
    } else if (peek(p)->kind == TOK_IDENT && !is_reserved(peek(p))) {
        r->alias = next(p)->text;
    }
    return true;
}

static bool parse_join_kind(struct parser *p, enum sql_join_kind *kind, bool *found)
{
    const struct sql_token *t = peek(p);
    *found = true;
    if (accept_kw(p, "left")) {
        accept_kw(p, "outer");
        *kind = SQL_JOIN_LEFT;
        return expect_kw(p, "join");
    }
    if (accept_kw(p, "inner")) {
        *kind = SQL_JOIN_INNER;
        return expect_kw(p, "join");
    }
    if (accept_kw(p, "join")) {
        *kind = SQL_JOIN_INNER;
        return true;
    }
    if (is_kw(t, "right") || is_kw(t, "full") || is_kw(t, "cross") || is_kw(t, "natural"))
        return fail_at(p, t, SQL_ERR_UNSUPPORTED,
                       "%s joins are not supported; use LEFT JOIN or INNER JOIN", t->text);
    if (is_op(t, ","))
        return fail_at(p, t, SQL_ERR_UNSUPPORTED,
                       "list joined tables with LEFT JOIN ... ON, not commas");
    *found = false;
    return true;
}

static bool parse_from(struct view_builder *b)
{
    struct parser *p = b->p;
    if (!expect_kw(p, "from") || !parse_rel(b, &b->fact))
        return false;
    for (;;) {
        enum sql_join_kind kind = SQL_JOIN_LEFT;
        bool found;
        if (!parse_join_kind(p, &kind, &found))
            return false;
        if (!found)
            return true;
        if (!GROW(b, b->joins, b->njoins, b->joins_cap))
            return false;
        struct raw_join *j = &b->joins[b->njoins++];
        memset(j, 0, sizeof *j);
        j->kind = kind;
        if (!parse_rel(b, &j->rel))
            return false;
        if (is_kw(peek(p), "using"))
            return fail_at(p, peek(p), SQL_ERR_UNSUPPORTED,
                           "write the join condition as ON dim.key = fact.column");
        if (!expect_kw(p, "on") || !parse_colref(p, &j->left))
            return false;
        if (!is_op(peek(p), "="))
            return fail_at(p, peek(p), SQL_ERR_UNSUPPORTED,
                           "a join condition is one equality: ON dim.key = fact.column");
        next(p);
        if (!parse_colref(p, &j->right))
            return false;
        if (is_kw(peek(p), "and") || is_kw(peek(p), "or"))
            return fail_at(p, peek(p), SQL_ERR_UNSUPPORTED,
                           "a join condition is one equality: ON dim.key = fact.column");
    }
}

static bool parse_group_by(struct view_builder *b)
{
    struct parser *p = b->p;
    const struct sql_token *t = peek(p);
    if (is_kw(t, "where"))
        return fail_at(p, t, SQL_ERR_UNSUPPORTED,
                       "a view cannot have WHERE; filter measures with FILTER (WHERE ...)");
    if (!is_kw(t, "group"))
        return fail_expected(p, t, "GROUP BY");
    next(p);
    if (!expect_kw(p, "by"))
        return false;
    do {
        if (!GROW(b, b->groups, b->ngroups, b->groups_cap))
            return false;
        struct raw_group *g = &b->groups[b->ngroups++];
        memset(g, 0, sizeof *g);
        g->tok = peek(p);
        if (g->tok->kind == TOK_NUMBER) {
            next(p);
            char *end;
            long n = strtol(g->tok->text, &end, 10);
            if (*end || n < 1 || n > b->nitems)
                return fail_at(p, g->tok, SQL_ERR_INVALID,
                               "GROUP BY position %s is not in select list", g->tok->text);
            g->ordinal = (int)n;
        } else if (!parse_colref(p, &g->col)) {
            return false;
        }
    } while (accept_op(p, ","));
    t = peek(p);
    if (is_kw(t, "having") || is_kw(t, "order") || is_kw(t, "limit") || is_kw(t, "offset"))
        return fail_at(p, t, SQL_ERR_UNSUPPORTED, "a view cannot have %s; asks can",
                       is_kw(t, "having") ? "HAVING" : is_kw(t, "order") ? "ORDER BY"
                                                                          : "LIMIT or OFFSET");
    if (!is_op(t, ";") && t->kind != TOK_EOF)
        return fail_expected(p, t, "\";\" or the end of the view");
    return true;
}

static bool parse_statement(struct view_builder *b)
{
    struct parser *p = b->p;
    b->start = peek(p);
    if (!expect_kw(p, "create"))
        return false;
    if (accept_kw(p, "or") && !expect_kw(p, "replace"))
        return false;
    if (is_kw(peek(p), "materialized"))
        next(p); /* CREATE MATERIALIZED VIEW reads the same; Straum keeps it either way */
    if (!expect_kw(p, "view"))
        return false;
    const struct sql_token *name = expect_ident(p, "a view name");
    if (!name)
        return false;
    if (is_op(peek(p), "."))
        return fail_at(p, peek(p), SQL_ERR_UNSUPPORTED,
                       "view names are not schema-qualified; write the name alone");
    b->v->name = name->text;
    if (!parse_options(b) || !expect_kw(p, "as") || !expect_kw(p, "select"))
        return false;
    do {
        if (!GROW(b, b->items, b->nitems, b->items_cap) ||
            !parse_item(b, &b->items[b->nitems++]))
            return false;
    } while (accept_op(p, ","));
    return parse_from(b) && parse_group_by(b);
}

/* ---- Pass 2: resolving names ------------------------------------------------ */

static int add_fact_column(struct view_builder *b, const char *name)
{
    for (int i = 0; i < b->nfact; i++)
        if (strcmp(b->fact_cols[i].name, name) == 0)
            return i;
    if (!GROW(b, b->fact_cols, b->nfact, b->fact_cap))
        return -1;
    b->fact_cols[b->nfact].name = name;
    return b->nfact++;
}

static int add_dim_column(struct view_builder *b, int j, const char *name)
{
    struct sql_join *sj = &b->sjoins[j];
    for (int i = 0; i < sj->ndim_columns; i++)
        if (strcmp(sj->dim_columns[i], name) == 0)
            return i;
    if (!GROW(b, sj->dim_columns, sj->ndim_columns, b->dim_cap[j]))
        return -1;
    sj->dim_columns[sj->ndim_columns] = name;
    return sj->ndim_columns++;
}

/* Which relation a qualifier names: -1 the fact table, j a join, -2 none. */
static int rel_of(const struct view_builder *b, const struct colref *c)
{
    if (!c->qual || strcmp(c->qual, b->fact.alias) == 0)
        return -1;
    for (int j = 0; j < b->njoins; j++)
        if (strcmp(c->qual, b->joins[j].rel.alias) == 0)
            return j;
    return -2;
}

static bool check_rel(struct view_builder *b, const struct colref *c, int rel)
{
    if (rel == -2)
        return fail_at(b->p, c->tok, SQL_ERR_UNKNOWN_COLUMN,
                       "missing FROM-clause entry for table \"%s\"", c->qual);
    return true;
}

/* Resolves a column that must be on the fact table (measures, filters,
 * the bucket column). */
static int resolve_fact(void *ctx, const struct colref *c)
{
    struct view_builder *b = ctx;
    int rel = rel_of(b, c);
    if (!check_rel(b, c, rel))
        return -1;
    if (rel >= 0) {
        fail_at(b->p, c->tok, SQL_ERR_UNSUPPORTED,
                "\"%s.%s\" is a column of dim \"%s\"; measures, filters and the bucket "
                "read fact columns", c->qual, c->name, b->joins[rel].rel.table);
        return -1;
    }
    return add_fact_column(b, c->name);
}

static bool check_aliases(struct view_builder *b)
{
    for (int j = 0; j < b->njoins; j++) {
        const struct raw_rel *r = &b->joins[j].rel;
        bool dup = strcmp(r->alias, b->fact.alias) == 0;
        for (int k = 0; k < j && !dup; k++)
            dup = strcmp(r->alias, b->joins[k].rel.alias) == 0;
        if (dup)
            return fail_at(b->p, r->tok, SQL_ERR_INVALID,
                           "table name \"%s\" specified more than once", r->alias);
    }
    return true;
}

/* Finds which side of each ON is the dim's key; the fact side is resolved
 * after the SELECT list so fact columns are numbered in SELECT order. */
static bool resolve_join_keys(struct view_builder *b)
{
    struct parser *p = b->p;
    b->sjoins = sql_arena_alloc(p->arena, sizeof *b->sjoins * (size_t)(b->njoins + 1));
    b->join_fact_refs = sql_arena_alloc(p->arena, sizeof *b->join_fact_refs *
                                                      (size_t)(b->njoins + 1));
    b->dim_cap = sql_arena_alloc(p->arena, sizeof *b->dim_cap * (size_t)(b->njoins + 1));
    if (!b->sjoins || !b->join_fact_refs || !b->dim_cap)
        return fail_at(p, peek(p), SQL_ERR_LIMIT, "out of memory");
    for (int j = 0; j < b->njoins; j++) {
        const struct raw_join *rj = &b->joins[j];
        struct sql_join *sj = &b->sjoins[j];
        int l = rel_of(b, &rj->left), r = rel_of(b, &rj->right);
        if (!check_rel(b, &rj->left, l) || !check_rel(b, &rj->right, r))
            return false;
        const struct colref *dim, *fact;
        if (l == j && r == -1) {
            dim = &rj->left;
            fact = &rj->right;
        } else if (r == j && l == -1) {
            dim = &rj->right;
            fact = &rj->left;
        } else {
            return fail_at(p, rj->left.tok, SQL_ERR_UNSUPPORTED,
                           "a join must connect the fact table to the dim: "
                           "ON %s.key = %s.column", rj->rel.alias, b->fact.alias);
        }
        sj->kind = rj->kind;
        sj->schema = rj->rel.schema;
        sj->table = rj->rel.table;
        sj->alias = rj->rel.alias;
        sj->dim_key = dim->name;
        sj->fact_column = -1;
        b->join_fact_refs[j] = *fact;
        if (add_dim_column(b, j, dim->name) < 0)
            return false;
    }
    return true;
}

static bool check_names(struct view_builder *b)
{
    for (int i = 0; i < b->nitems; i++)
        for (int k = 0; k < i; k++)
            if (strcmp(b->items[i].name, b->items[k].name) == 0)
                return fail_at(b->p, b->items[i].tok, SQL_ERR_INVALID,
                               "column \"%s\" specified more than once", b->items[i].name);
    return true;
}

static bool resolve_bucket(struct view_builder *b, const struct raw_item *it,
                           struct sql_view_column *c)
{
    if (b->v->nwidths)
        return fail_at(b->p, it->tok, SQL_ERR_INVALID, "a view has one date_bin(...) column");
    c->kind = SQL_COLUMN_BUCKET;
    if ((c->fact_column = resolve_fact(b, &it->col)) < 0)
        return false;
    b->v->bucket_fact_column = c->fact_column;
    b->v->origin_usec = it->origin;
    b->v->origin_has_zone = it->origin_has_zone;
    b->v->nwidths = 1; /* widths proper are read once the stride is known */
    return true;
}

static bool resolve_column(struct view_builder *b, const struct raw_item *it,
                           struct sql_view_column *c)
{
    int rel = rel_of(b, &it->col);
    if (!check_rel(b, &it->col, rel))
        return false;
    if (rel == -1) {
        c->kind = SQL_COLUMN_FACT_KEY;
        return (c->fact_column = add_fact_column(b, it->col.name)) >= 0;
    }
    c->kind = SQL_COLUMN_DIM;
    c->join = rel;
    return (c->dim_column = add_dim_column(b, rel, it->col.name)) >= 0;
}

static bool resolve_measure(struct view_builder *b, const struct raw_item *it,
                            struct sql_view_column *c)
{
    struct sql_measure *m = &c->measure;
    c->kind = SQL_COLUMN_MEASURE;
    m->agg = it->agg;
    m->fact_column = -1;
    m->filter = -1;
    m->fraction = it->fraction;
    m->fraction_text = it->fraction_text;
    if (it->has_col && (m->fact_column = resolve_fact(b, &it->col)) < 0)
        return false;
    if (!it->filter)
        return true;
    const struct sql_filter *f = resolve_filter(b->p, it->filter, resolve_fact, b);
    if (!f)
        return false;
    /* Filters are identified by their canonical text: two measures with the
     * same predicate share its accumulators. */
    char text[1024], other[1024];
    filter_format(b->fact_cols, f, text, sizeof text);
    for (int i = 0; i < b->nfilters; i++) {
        filter_format(b->fact_cols, b->filters[i], other, sizeof other);
        if (strcmp(text, other) == 0) {
            m->filter = i;
            return true;
        }
    }
    if (!GROW(b, b->filters, b->nfilters, b->filters_cap))
        return false;
    b->filters[b->nfilters] = f;
    m->filter = b->nfilters++;
    return true;
}

static bool resolve_items(struct view_builder *b)
{
    b->columns = sql_arena_alloc(b->p->arena, sizeof *b->columns * (size_t)b->nitems);
    if (!b->columns)
        return fail_at(b->p, peek(b->p), SQL_ERR_LIMIT, "out of memory");
    for (int i = 0; i < b->nitems; i++) {
        const struct raw_item *it = &b->items[i];
        struct sql_view_column *c = &b->columns[i];
        c->name = it->name;
        c->line = it->tok->line;
        c->column = it->tok->column;
        c->fact_column = c->cell_key = c->join = c->dim_column = -1;
        c->measure.fact_column = c->measure.filter = -1;
        c->measure.count = c->measure.sum = c->measure.value_counts = -1;
        bool ok = it->kind == ITEM_BUCKET   ? resolve_bucket(b, it, c)
                  : it->kind == ITEM_COLUMN ? resolve_column(b, it, c)
                                            : resolve_measure(b, it, c);
        if (!ok)
            return false;
    }
    if (!b->v->nwidths)
        return fail_at(b->p, b->start, SQL_ERR_INVALID,
                       "a view needs a bucket: date_bin('1 hour', fact.time_column, "
                       "timestamptz 'epoch') AS bucket");
    for (int j = 0; j < b->njoins; j++)
        if ((b->sjoins[j].fact_column = add_fact_column(b, b->join_fact_refs[j].name)) < 0)
            return false;
    return true;
}

/* The SELECT item a GROUP BY entry names, or -1 after an error. */
static int group_target(struct view_builder *b, const struct raw_group *g)
{
    if (g->ordinal)
        return g->ordinal - 1;
    if (!g->col.qual)
        for (int i = 0; i < b->nitems; i++)
            if (strcmp(b->items[i].name, g->col.name) == 0)
                return i;
    int rel = rel_of(b, &g->col);
    if (!check_rel(b, &g->col, rel))
        return -1;
    for (int i = 0; i < b->nitems; i++) {
        const struct raw_item *it = &b->items[i];
        if (it->kind == ITEM_COLUMN && rel_of(b, &it->col) == rel &&
            strcmp(it->col.name, g->col.name) == 0)
            return i;
    }
    fail_at(b->p, g->tok, SQL_ERR_INVALID,
            "GROUP BY \"%s\" is not in the select list; a view keeps only what it selects",
            g->col.name);
    return -1;
}

static bool check_group_by(struct view_builder *b)
{
    bool *grouped = sql_arena_alloc(b->p->arena, (size_t)b->nitems);
    if (!grouped)
        return fail_at(b->p, peek(b->p), SQL_ERR_LIMIT, "out of memory");
    for (int g = 0; g < b->ngroups; g++) {
        int i = group_target(b, &b->groups[g]);
        if (i < 0)
            return false;
        if (b->items[i].kind == ITEM_AGG)
            return fail_at(b->p, b->groups[g].tok, SQL_ERR_INVALID,
                           "aggregate functions are not allowed in GROUP BY");
        grouped[i] = true;
    }
    for (int i = 0; i < b->nitems; i++)
        if (b->items[i].kind != ITEM_AGG && !grouped[i])
            return fail_at(b->p, b->items[i].tok, SQL_ERR_INVALID,
                           "column \"%s\" must appear in the GROUP BY clause",
                           b->items[i].name);
    return true;
}

static bool parse_widths(struct view_builder *b)
{
    struct parser *p = b->p;
    int64_t stride = 0;
    for (int i = 0; i < b->nitems; i++)
        if (b->items[i].kind == ITEM_BUCKET)
            stride = b->items[i].stride;
    int64_t *w = NULL;
    int n = 0, cap = 0;
    if (!GROW(b, w, n, cap))
        return false;
    w[n++] = stride;
    if (b->buckets_tok) {
        const struct sql_token *t = b->buckets_tok;
        const char *s = t->text;
        for (;;) {
            const char *comma = strchr(s, ',');
            while (*s == ' ' || *s == '\t' || *s == '\n')
                s++;
            size_t len = comma ? (size_t)(comma - s) : strlen(s);
            while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\n'))
                len--;
            char one[128], why[160];
            if (len >= sizeof one)
                return fail_at(p, t, SQL_ERR_INVALID, "width \"%.40s...\" is too long", s);
            memcpy(one, s, len);
            one[len] = '\0';
            int64_t width;
            if (!sql_parse_interval(one, &width, why, sizeof why))
                return fail_at(p, t, SQL_ERR_INVALID, "%s", why);
            if (width > SQL_MAX_WIDTH_USEC)
                return fail_at(p, t, SQL_ERR_INVALID,
                               "width \"%s\" is longer than the 100 years a width may span", one);
            if (width % stride != 0)
                return fail_at(p, t, SQL_ERR_INVALID,
                               "width \"%s\" is not a multiple of the date_bin stride", one);
            bool dup = false;
            for (int k = 1; k < n; k++)
                dup |= w[k] == width;
            if (dup)
                return fail_at(p, t, SQL_ERR_INVALID, "width \"%s\" is listed twice", one);
            if (width != stride) { /* the stride may be listed; it is kept anyway */
                if (!GROW(b, w, n, cap))
                    return false;
                w[n++] = width;
            }
            if (!comma)
                break;
            s = comma + 1;
        }
    }
    for (int i = 1; i < n; i++) /* insertion sort: a handful of widths */
        for (int k = i; k > 0 && w[k] < w[k - 1]; k--) {
            int64_t tmp = w[k];
            w[k] = w[k - 1];
            w[k - 1] = tmp;
        }
    b->v->widths = w;
    b->v->nwidths = n;
    return true;
}

/* ---- Cell layout: keys and accumulators ------------------------------------- */

static bool add_cell_key(struct view_builder *b, int fact_column, int *index)
{
    for (int i = 0; i < b->ncell_keys; i++)
        if (b->cell_keys[i] == fact_column) {
            *index = i;
            return true;
        }
    if (!GROW(b, b->cell_keys, b->ncell_keys, b->cell_keys_cap))
        return false;
    b->cell_keys[b->ncell_keys] = fact_column;
    *index = b->ncell_keys++;
    return true;
}

static bool build_cell_keys(struct view_builder *b)
{
    for (int i = 0; i < b->nitems; i++)
        if (b->columns[i].kind == SQL_COLUMN_FACT_KEY &&
            !add_cell_key(b, b->columns[i].fact_column, &b->columns[i].cell_key))
            return false;
    /* A join whose dim is read, or whose INNER join drops rows, needs its
     * fact column in the cell key so the dim can change without moving cells.
     * A LEFT join whose dim is never selected changes nothing and is dropped
     * from the key. */
    for (int j = 0; j < b->njoins; j++) {
        const struct sql_join *sj = &b->sjoins[j];
        int unused;
        if ((sj->ndim_columns > 1 || sj->kind == SQL_JOIN_INNER) &&
            !add_cell_key(b, sj->fact_column, &unused))
            return false;
    }
    return true;
}

/* Finds or adds an accumulator with the given column and filter. The three
 * spec structs share their layout ({fact_column, filter}), which is what lets
 * one function serve them. */
#define ADD_SPEC(b, arr, n, cap, col, flt, out)                   \
    do {                                                          \
        (out) = -1;                                               \
        for (int i_ = 0; i_ < (n); i_++)                          \
            if ((arr)[i_].fact_column == (col) && (arr)[i_].filter == (flt)) \
                (out) = i_;                                       \
        if ((out) < 0) {                                          \
            if (!GROW(b, arr, n, cap))                            \
                return false;                                     \
            (arr)[n].fact_column = (col);                         \
            (arr)[n].filter = (flt);                              \
            (out) = (n)++;                                        \
        }                                                         \
    } while (0)

static bool build_accumulators(struct view_builder *b)
{
    int unused;
    ADD_SPEC(b, b->counts, b->ncounts, b->counts_cap, -1, -1, unused);
    (void)unused;
    for (int i = 0; i < b->nitems; i++) {
        struct sql_view_column *c = &b->columns[i];
        if (c->kind != SQL_COLUMN_MEASURE)
            continue;
        struct sql_measure *m = &c->measure;
        m->count = m->sum = m->value_counts = -1;
        switch (m->agg) {
        case SQL_AGG_COUNT_STAR:
        case SQL_AGG_COUNT:
            ADD_SPEC(b, b->counts, b->ncounts, b->counts_cap, m->fact_column, m->filter,
                     m->count);
            break;
        case SQL_AGG_SUM:
        case SQL_AGG_AVG:
            ADD_SPEC(b, b->counts, b->ncounts, b->counts_cap, m->fact_column, m->filter,
                     m->count);
            ADD_SPEC(b, b->sums, b->nsums, b->sums_cap, m->fact_column, m->filter, m->sum);
            break;
        default:
            ADD_SPEC(b, b->vcs, b->nvcs, b->vcs_cap, m->fact_column, m->filter,
                     m->value_counts);
            break;
        }
    }
    return true;
}

static void finish(struct view_builder *b)
{
    struct sql_view *v = b->v;
    v->fact_schema = b->fact.schema;
    v->fact_table = b->fact.table;
    v->fact_alias = b->fact.alias;
    v->columns = b->columns;
    v->ncolumns = b->nitems;
    v->fact_columns = b->fact_cols;
    v->nfact_columns = b->nfact;
    v->joins = b->sjoins;
    v->njoins = b->njoins;
    v->cell_keys = b->cell_keys;
    v->ncell_keys = b->ncell_keys;
    v->filters = b->filters;
    v->nfilters = b->nfilters;
    v->counts = b->counts;
    v->ncounts = b->ncounts;
    v->sums = b->sums;
    v->nsums = b->nsums;
    v->value_counts = b->vcs;
    v->nvalue_counts = b->nvcs;
}

static bool compile_view(struct parser *p, struct sql_view *v)
{
    struct view_builder b = {.p = p, .v = v};
    memset(v, 0, sizeof *v);
    if (!parse_statement(&b) || !check_aliases(&b) || !check_names(&b) ||
        !resolve_join_keys(&b) || !resolve_items(&b) || !check_group_by(&b) ||
        !parse_widths(&b) || !build_cell_keys(&b) || !build_accumulators(&b))
        return false;
    const struct sql_token *last = &p->toks[p->pos > 0 ? p->pos - 1 : 0];
    v->source = sql_arena_strndup(p->arena, p->src + b.start->offset,
                                  last->end - b.start->offset);
    if (!v->source)
        return fail_at(p, b.start, SQL_ERR_LIMIT, "out of memory");
    finish(&b);
    return true;
}

struct sql_view_list *sql_parse_views(const char *text, struct sql_error *err)
{
    struct sql_error local;
    if (!err)
        err = &local;
    memset(err, 0, sizeof *err);
    struct sql_arena *arena = sql_arena_new();
    struct sql_view_list *list = arena ? sql_arena_alloc(arena, sizeof *list) : NULL;
    struct parser p = {0}; /* parser_free may come before parser_init */
    if (!list) {
        sql_set_error(err, SQL_ERR_LIMIT, 0, 0, "out of memory");
        goto fail;
    }
    list->arena = arena;
    if (!parser_init(&p, text, arena, err))
        goto fail;
    int cap = 0;
    while (peek(&p)->kind != TOK_EOF) {
        if (accept_op(&p, ";"))
            continue;
        list->views = sql_arena_grow(arena, list->views, sizeof *list->views, &cap,
                                     list->nviews + 1);
        if (!list->views) {
            sql_set_error(err, SQL_ERR_LIMIT, 0, 0, "out of memory");
            goto fail;
        }
        const struct sql_token *start = peek(&p);
        struct sql_view *v = &list->views[list->nviews];
        if (!compile_view(&p, v))
            goto fail;
        if (sql_view_find(list, v->name)) {
            fail_at(&p, start, SQL_ERR_INVALID, "view \"%s\" is defined twice", v->name);
            goto fail;
        }
        list->nviews++;
    }
    if (list->nviews == 0) {
        sql_set_error(err, SQL_ERR_SYNTAX, 1, 1, "expected CREATE VIEW, found end of input");
        goto fail;
    }
    parser_free(&p);
    return list;
fail:
    parser_free(&p);
    sql_arena_free(arena);
    return NULL;
}

void sql_view_list_free(struct sql_view_list *list)
{
    if (list)
        sql_arena_free(list->arena);
}

const struct sql_view *sql_view_find(const struct sql_view_list *list, const char *name)
{
    for (int i = 0; i < list->nviews; i++)
        if (strcmp(list->views[i].name, name) == 0)
            return &list->views[i];
    return NULL;
}

int sql_view_column_find(const struct sql_view *view, const char *name)
{
    for (int i = 0; i < view->ncolumns; i++)
        if (strcmp(view->columns[i].name, name) == 0)
            return i;
    return -1;
}
