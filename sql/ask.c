/* ask.c -- asks (SELECT over one view) compiled to struct sql_ask.
 *
 *   ask   := SELECT item, ... FROM view [[AS] alias]
 *            [WHERE pred] [GROUP BY group, ...] [HAVING hpred]
 *            [ORDER BY order, ...] [LIMIT n|$n|ALL] [OFFSET n|$n]
 *   pred  := pred OR pred | pred AND pred | NOT pred | (pred) | cond
 *   hpred := the same over measure (= | <> | < | <= | > | >=) v
 *   item  := column | time  [[AS] name]
 *   time  := date_bin('<width>', bucket [, <origin>])
 *          | date_trunc('<unit>', bucket [, '<zone>'])
 *   cond  := bucket (>= | > | < | <=) v | bucket BETWEEN v AND v
 *          | col (= | <> | < | <= | > | >=) v | col [NOT] BETWEEN v AND v
 *          | col [NOT] IN (v, ...) | col [NOT] (LIKE | ILIKE) v | col IS [NOT] NULL
 *
 * An ask means the view's query over the rows whose bucket is in the range,
 * grouped by the ask's keys instead of the view's (SPEC.md, "What an ask
 * means"). The compiled ask says which view columns it reads, how it groups
 * and what each parameter must be; binding values and checking them against
 * the store's types is serve's job. */
#include "sql/filter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* How a bucket expression groups time: bins of width from origin, or a
 * calendar unit in a zone (NULL: the ask's). */
struct time_group {
    bool calendar;
    int64_t width, origin;
    enum sql_time_unit unit;
    const char *zone;
};

static bool time_group_equal(const struct time_group *a, const struct time_group *b)
{
    if (a->calendar != b->calendar)
        return false;
    if (!a->calendar)
        return a->width == b->width && a->origin == b->origin;
    return a->unit == b->unit && (a->zone == b->zone ||
                                  (a->zone && b->zone && strcmp(a->zone, b->zone) == 0));
}

/* What a name or expression in an ask stands for. */
struct target {
    bool is_bucket;
    struct time_group time; /* bucket: how it is grouped */
    int view_column;        /* the view column (the bucket's, for buckets) */
};

static const char *const unit_names[] = {
    [SQL_UNIT_SECOND] = "second", [SQL_UNIT_MINUTE] = "minute", [SQL_UNIT_HOUR] = "hour",
    [SQL_UNIT_DAY] = "day",       [SQL_UNIT_WEEK] = "week",     [SQL_UNIT_MONTH] = "month",
    [SQL_UNIT_QUARTER] = "quarter", [SQL_UNIT_YEAR] = "year",
};

const char *sql_time_unit_name(enum sql_time_unit unit)
{
    return (unsigned)unit < sizeof unit_names / sizeof unit_names[0] ? unit_names[unit] : "?";
}

struct raw_ask_item {
    const struct sql_token *tok;
    const char *name;
    bool is_date_bin, is_date_trunc;
    struct colref col;           /* the column, or date_bin's second argument */
    enum sql_time_unit unit;     /* date_trunc */
    const char *zone;            /* date_trunc's third argument, or NULL */
    const struct sql_token *width_tok;
    int64_t width;
    const struct sql_token *origin_tok;
    int64_t origin;
    bool has_origin;
    struct target target;
};

struct ask_builder {
    struct parser *p;
    struct sql_ask *ask;
    const struct sql_view_list *views;
    const struct sql_view *v;
    const char *alias;

    struct raw_ask_item *items;  /* malloc'd (sql_heap_grow): item_add */
    int nitems, items_cap;
    struct sql_ask_cond *conds;
    int nconds, conds_cap;
    bool has_from, has_to;
    int range_conds;             /* bucket conditions parsed so far */
    struct sql_having_cmp *having;
    int nhaving, having_cap;
    int *group_keys;
    int ngroup_keys, group_cap;
    bool group_bucket;
    struct time_group group_time;
    struct sql_ask_order *order;
    int norder, order_cap;
    struct sql_param *params;
    int nparams_cap, max_param;
    bool *param_seen;
};

#define AGROW(b, arr, n, cap)                                                      \
    ((arr) = sql_arena_grow((b)->p->arena, (arr), sizeof *(arr), &(cap), (n) + 1), \
     (arr) ? true : fail_at((b)->p, peek((b)->p), SQL_ERR_LIMIT, "out of memory"))

/* ---- Parameters --------------------------------------------------------- */

static const char *param_kind_text(enum sql_param_kind k)
{
    return k == SQL_PARAM_TIMESTAMP ? "a bucket edge"
           : k == SQL_PARAM_KEY     ? "a key value"
           : k == SQL_PARAM_MEASURE ? "a measure's value"
                                    : "a row count";
}

/* Records how an operand is used; a parameter used two ways is refused, since
 * it could not have one type. */
static bool note_operand(struct ask_builder *b, const struct sql_operand *o,
                         enum sql_param_kind kind, int view_column)
{
    if (!o->is_param)
        return true;
    struct sql_param *prm = &b->params[o->param - 1];
    if (b->param_seen[o->param - 1]) {
        if (prm->kind != kind || prm->view_column != view_column)
            return fail_at(b->p, &(struct sql_token){.line = o->line, .column = o->column},
                           SQL_ERR_INVALID,
                           "parameter $%d is used as %s and as %s; use two parameters",
                           o->param, param_kind_text(prm->kind), param_kind_text(kind));
        return true;
    }
    b->param_seen[o->param - 1] = true;
    prm->kind = kind;
    prm->view_column = view_column;
    prm->line = o->line;
    prm->column = o->column;
    if (o->param > b->max_param)
        b->max_param = o->param;
    return true;
}

static bool check_params(struct ask_builder *b)
{
    /* Reported where the highest parameter is, the one that made the gap. */
    const struct sql_param *last = b->max_param ? &b->params[b->max_param - 1] : NULL;
    for (int i = 0; i < b->max_param; i++)
        if (!b->param_seen[i])
            return fail_at(b->p, &(struct sql_token){.line = last->line, .column = last->column},
                           SQL_ERR_INVALID,
                           "parameter $%d is not used; number parameters from $1 without gaps",
                           i + 1);
    /* The ask keeps its parameters alone, not the builder's SQL_MAX_PARAMS
     * slots (4 KiB of every cached ask). */
    struct sql_param *kept = b->max_param ? sql_arena_alloc(b->p->arena, sizeof *kept * (size_t)b->max_param) : NULL;
    if (b->max_param && !kept)
        return fail_at(b->p, &(struct sql_token){.line = 0, .column = 0}, SQL_ERR_LIMIT, "out of memory");
    if (b->max_param)
        memcpy(kept, b->params, sizeof *kept * (size_t)b->max_param);
    b->ask->params = kept;
    b->ask->nparams = b->max_param;
    return true;
}

/* ---- Names --------------------------------------------------------------- */

/* Resolves [view.]name to a view column, or -1 after an error. */
static int resolve_name(struct ask_builder *b, const struct colref *c)
{
    if (c->qual && strcmp(c->qual, b->alias) != 0) {
        fail_at(b->p, c->tok, SQL_ERR_UNKNOWN_COLUMN,
                "missing FROM-clause entry for table \"%s\"", c->qual);
        return -1;
    }
    int i = sql_view_column_find(b->v, c->name);
    if (i < 0)
        fail_at(b->p, c->tok, SQL_ERR_UNKNOWN_COLUMN, "column \"%s\" does not exist in view \"%s\"",
                c->name, b->v->name);
    return i;
}

/* date_bin's width must be a whole multiple of the finest width: its bins
 * are then unions of whole finest buckets, which the cells compose. */
static bool check_width(struct ask_builder *b, const struct sql_token *t, int64_t width)
{
    if (width % b->v->widths[0] == 0)
        return true;
    char finest[64];
    sql_format_interval(b->v->widths[0], finest, sizeof finest);
    return fail_at(b->p, t, SQL_ERR_INVALID,
                   "date_bin's width '%s' is not a whole multiple of view \"%s\"'s finest "
                   "width %s", t->text, b->v->name, finest);
}

/* ---- SELECT items --------------------------------------------------------- */

static bool parse_date_bin(struct ask_builder *b, struct raw_ask_item *it)
{
    struct parser *p = b->p;
    struct sql_const c;
    char why[160];
    it->is_date_bin = true;
    it->name = "date_bin";
    it->width_tok = peek(p);
    if (!parse_const(p, &c))
        return false;
    if (c.kind != SQL_CONST_STRING || (c.cast && strcmp(c.cast, "interval")))
        return fail_at(p, it->width_tok, SQL_ERR_INVALID,
                       "date_bin's first argument must be an interval such as '1 day'");
    if (!sql_parse_interval(c.text, &it->width, why, sizeof why))
        return fail_at(p, it->width_tok, SQL_ERR_INVALID, "%s", why);
    if (!expect_op(p, ",") || !parse_colref(p, &it->col))
        return false;
    if (accept_op(p, ",")) {
        it->origin_tok = peek(p);
        bool has_offset;
        if (!parse_const(p, &c))
            return false;
        if (c.kind != SQL_CONST_STRING ||
            !sql_parse_timestamp(c.text, &it->origin, &has_offset, why, sizeof why))
            return fail_at(p, it->origin_tok, SQL_ERR_INVALID,
                           "date_bin's origin must be a timestamp such as timestamptz 'epoch'");
        it->has_origin = true;
    }
    return expect_op(p, ")");
}

/* date_trunc('unit', bucket [, 'Zone/Name']), after "date_trunc(". The
 * zone is checked when the ask is bound, where the tz database is. */
static bool parse_date_trunc(struct ask_builder *b, struct raw_ask_item *it)
{
    struct parser *p = b->p;
    struct sql_const c;
    it->is_date_trunc = true;
    it->name = "date_trunc";
    it->width_tok = peek(p);
    if (!parse_const(p, &c))
        return false;
    if (c.kind != SQL_CONST_STRING)
        return fail_at(p, it->width_tok, SQL_ERR_INVALID,
                       "date_trunc's first argument is a unit such as 'day'");
    int unit = -1;
    for (int u = 0; u < (int)(sizeof unit_names / sizeof unit_names[0]); u++)
        if (strcasecmp(c.text, unit_names[u]) == 0 ||
            (strlen(c.text) == strlen(unit_names[u]) + 1 &&
             strncasecmp(c.text, unit_names[u], strlen(unit_names[u])) == 0 &&
             (c.text[strlen(unit_names[u])] | 0x20) == 's'))
            unit = u; /* PostgreSQL takes "days" too */
    if (unit < 0)
        return fail_at(p, it->width_tok, SQL_ERR_UNSUPPORTED,
                       "date_trunc unit '%s' is not kept: use second, minute, hour, day, "
                       "week, month, quarter or year", c.text);
    it->unit = (enum sql_time_unit)unit;
    if (!expect_op(p, ",") || !parse_colref(p, &it->col))
        return false;
    if (accept_op(p, ",")) {
        it->origin_tok = peek(p);
        if (!parse_const(p, &c))
            return false;
        if (c.kind != SQL_CONST_STRING || c.len == 0)
            return fail_at(p, it->origin_tok, SQL_ERR_INVALID,
                           "date_trunc's third argument is a time zone such as "
                           "'America/New_York'");
        it->zone = c.text;
    }
    return expect_op(p, ")");
}

/* date_bin( or date_trunc( at the parser: parses the call into it. */
static bool parse_time_call(struct ask_builder *b, struct raw_ask_item *it)
{
    const struct sql_token *t = peek(b->p);
    b->p->pos += 2;
    return strcmp(t->text, "date_bin") == 0 ? parse_date_bin(b, it) : parse_date_trunc(b, it);
}

static bool is_time_call(struct parser *p)
{
    const struct sql_token *t = peek(p);
    return t->kind == TOK_IDENT && is_op(peek_at(p, 1), "(") &&
           (strcmp(t->text, "date_bin") == 0 || strcmp(t->text, "date_trunc") == 0);
}

static bool parse_item(struct ask_builder *b, struct raw_ask_item *it)
{
    struct parser *p = b->p;
    const struct sql_token *t = peek(p);
    memset(it, 0, sizeof *it);
    it->tok = t;
    if (is_op(t, "*"))
        return fail_at(p, t, SQL_ERR_UNSUPPORTED,
                       "an ask cannot SELECT *: name the keys and measures it wants");
    if (is_time_call(p)) {
        if (!parse_time_call(b, it))
            return false;
    } else if (t->kind == TOK_IDENT && is_op(peek_at(p, 1), "(")) {
        return fail_at(p, t, SQL_ERR_UNSUPPORTED,
                       "%s(...) is not allowed in an ask: a view's measures are "
                       "already aggregated; select them by name", t->text);
    } else {
        if (t->kind != TOK_IDENT || is_reserved(t))
            return fail_expected(p, t, "a column of the view");
        if (!parse_colref(p, &it->col))
            return false;
        it->name = it->col.name;
    }
    if (is_op(peek(p), "+") || is_op(peek(p), "-") || is_op(peek(p), "*") ||
        is_op(peek(p), "/"))
        return fail_at(p, peek(p), SQL_ERR_UNSUPPORTED,
                       "an ask selects columns of the view, not expressions");
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

static bool resolve_item(struct ask_builder *b, struct raw_ask_item *it)
{
    int col = resolve_name(b, &it->col);
    if (col < 0)
        return false;
    const struct sql_view_column *vc = &b->v->columns[col];
    it->target.view_column = col;
    it->target.is_bucket = vc->kind == SQL_COLUMN_BUCKET;
    it->target.time = (struct time_group){.width = b->v->widths[0], .origin = b->v->origin_usec};
    if (!it->is_date_bin && !it->is_date_trunc)
        return true;
    if (!it->target.is_bucket)
        return fail_at(b->p, it->col.tok, SQL_ERR_INVALID,
                       "%s re-buckets the bucket column, not \"%s\"", it->name, it->col.name);
    if (it->is_date_trunc) {
        it->target.time = (struct time_group){.calendar = true, .unit = it->unit,
                                              .zone = it->zone};
        return true;
    }
    if (!check_width(b, it->width_tok, it->width))
        return false;
    if (it->has_origin) {
        /* On a finest edge, so that each bin is whole finest buckets. */
        int64_t rel = it->origin - b->v->origin_usec, w = b->v->widths[0];
        if (rel % w != 0)
            return fail_at(b->p, it->origin_tok, SQL_ERR_INVALID,
                           "date_bin's origin must lie on an edge of view \"%s\"'s "
                           "buckets (the view's origin plus whole finest widths)", b->v->name);
        /* Any origin on an edge is the same bins as the one nearest the
         * view's: keep it reduced, so that equal bins compare equal. */
        it->target.time.origin = b->v->origin_usec + rel % it->width;
    }
    it->target.time.width = it->width;
    return true;
}

/* ---- WHERE ---------------------------------------------------------------- */

static bool check_range_literal(struct ask_builder *b, const struct sql_operand *o)
{
    if (o->is_param)
        return true;
    int64_t usec;
    bool has_offset;
    char why[160];
    const struct sql_token at = {.line = o->line, .column = o->column};
    if (o->lit.kind != SQL_CONST_STRING)
        return fail_at(b->p, &at, SQL_ERR_INVALID,
                       "a bucket edge is a timestamp such as '2024-01-17' or a parameter");
    if (!sql_parse_timestamp(o->lit.text, &usec, &has_offset, why, sizeof why))
        return fail_at(b->p, &at, SQL_ERR_INVALID, "%s", why);
    return true;
}

/* One side of the range: bucket >= v, > v, < v or <= v. */
static bool parse_range_side(struct ask_builder *b, const struct colref *c, bool from,
                             bool inclusive)
{
    struct parser *p = b->p;
    if ((from && b->has_from) || (!from && b->has_to))
        return fail_at(p, c->tok, SQL_ERR_INVALID, "the bucket range's %s is given twice",
                       from ? "start" : "end");
    struct sql_operand *o = from ? &b->ask->range_from : &b->ask->range_to;
    if (!parse_operand(p, o) || !check_range_literal(b, o) ||
        !note_operand(b, o, SQL_PARAM_TIMESTAMP, -1))
        return false;
    *(from ? &b->has_from : &b->has_to) = true;
    *(from ? &b->ask->range_from_inclusive : &b->ask->range_to_inclusive) = inclusive;
    return true;
}

static bool parse_bucket_cond(struct ask_builder *b, const struct colref *c)
{
    struct parser *p = b->p;
    const struct sql_token *op = peek(p);
    if (accept_kw(p, "between"))
        return parse_range_side(b, c, true, true) && expect_kw(p, "and") &&
               parse_range_side(b, c, false, true);
    bool ge = is_op(op, ">="), gt = is_op(op, ">"), lt = is_op(op, "<"), le = is_op(op, "<=");
    if (!ge && !gt && !lt && !le)
        return fail_at(p, op, SQL_ERR_UNSUPPORTED,
                       "the bucket is compared with >=, >, <, <= or BETWEEN, such as "
                       "bucket >= $1 AND bucket < $2");
    next(p);
    return parse_range_side(b, c, ge || gt, ge || le);
}

static bool parse_in_values(struct ask_builder *b, struct sql_ask_cond *cond)
{
    struct parser *p = b->p;
    if (!expect_op(p, "("))
        return false;
    struct sql_operand *vals = NULL;
    int cap = 0;
    do {
        if (!AGROW(b, vals, cond->nvalues, cap) || !parse_operand(p, &vals[cond->nvalues]) ||
            !note_operand(b, &vals[cond->nvalues], SQL_PARAM_KEY, cond->view_column))
            return false;
        if (!vals[cond->nvalues].is_param && vals[cond->nvalues].lit.kind == SQL_CONST_NULL)
            return fail_at(p, &(struct sql_token){.line = vals[cond->nvalues].line,
                                                  .column = vals[cond->nvalues].column},
                           SQL_ERR_INVALID, "NULL in an IN list matches nothing; use IS NULL");
        cond->nvalues++;
    } while (accept_op(p, ","));
    cond->values = vals;
    return expect_op(p, ")");
}

/* A new leaf condition on view column col, written at c; NULL after an
 * error. */
static struct sql_ask_cond *new_cond(struct ask_builder *b, const struct colref *c, int col,
                                     enum sql_ask_cond_kind kind)
{
    if (!AGROW(b, b->conds, b->nconds, b->conds_cap))
        return NULL;
    struct sql_ask_cond *cond = &b->conds[b->nconds++];
    memset(cond, 0, sizeof *cond);
    cond->view_column = col;
    cond->kind = kind;
    cond->line = c->tok->line;
    cond->column = c->tok->column;
    return cond;
}

static const struct sql_pred *new_pred(struct ask_builder *b, enum sql_pred_kind kind,
                                       const struct sql_pred *left, const struct sql_pred *right,
                                       int cond)
{
    struct sql_pred *p = sql_arena_alloc(b->p->arena, sizeof *p);
    if (!p) {
        fail_at(b->p, peek(b->p), SQL_ERR_LIMIT, "out of memory");
        return NULL;
    }
    *p = (struct sql_pred){kind, left, right, cond};
    return p;
}

/* One value a key is compared with, at cond->values[0..]. */
static bool parse_one_value(struct ask_builder *b, struct sql_ask_cond *cond)
{
    struct parser *p = b->p;
    struct sql_operand *o = sql_arena_alloc(p->arena, sizeof *o);
    if (!o)
        return fail_at(p, peek(p), SQL_ERR_LIMIT, "out of memory");
    if (!parse_operand(p, o) || !note_operand(b, o, SQL_PARAM_KEY, cond->view_column))
        return false;
    if (!o->is_param && o->lit.kind == SQL_CONST_NULL)
        return fail_at(p, &(struct sql_token){.line = o->line, .column = o->column},
                       SQL_ERR_INVALID,
                       "a comparison with NULL is never true; use IS NULL or IS NOT NULL");
    cond->values = o;
    cond->nvalues = 1;
    return true;
}

/* A leaf with one value: its predicate, or NULL after an error. */
static const struct sql_pred *value_leaf(struct ask_builder *b, const struct colref *c, int col,
                                         enum sql_ask_cond_kind kind)
{
    struct sql_ask_cond *cond = new_cond(b, c, col, kind);
    if (!cond || !parse_one_value(b, cond))
        return NULL;
    return new_pred(b, SQL_PRED_COND, NULL, NULL, b->nconds - 1);
}

/* The conditions on a key or dim column after its name: the predicate, or
 * NULL after an error. */
static const struct sql_pred *parse_key_cond(struct ask_builder *b, const struct colref *c,
                                             int col)
{
    struct parser *p = b->p;
    const struct sql_token *op = peek(p);
    if (accept_kw(p, "is")) {
        bool not = accept_kw(p, "not");
        if (!expect_kw(p, "null"))
            return NULL;
        if (!new_cond(b, c, col, not ? SQL_COND_IS_NOT_NULL : SQL_COND_IS_NULL))
            return NULL;
        return new_pred(b, SQL_PRED_COND, NULL, NULL, b->nconds - 1);
    }
    bool not = false;
    if (is_kw(op, "not") && (is_kw(peek_at(p, 1), "in") || is_kw(peek_at(p, 1), "like") ||
                             is_kw(peek_at(p, 1), "ilike") || is_kw(peek_at(p, 1), "between"))) {
        next(p);
        not = true;
    }
    const struct sql_pred *leaf = NULL;
    if (accept_kw(p, "in")) {
        struct sql_ask_cond *cond = new_cond(b, c, col, not ? SQL_COND_NOT_IN : SQL_COND_IN);
        if (!cond || !parse_in_values(b, cond))
            return NULL;
        return new_pred(b, SQL_PRED_COND, NULL, NULL, b->nconds - 1);
    } else if (accept_kw(p, "like") || accept_kw(p, "ilike")) {
        leaf = value_leaf(b, c, col, is_kw(peek_at(p, -1), "like") ? SQL_COND_LIKE : SQL_COND_ILIKE);
    } else if (accept_kw(p, "between")) {
        const struct sql_pred *lo = value_leaf(b, c, col, SQL_COND_GE);
        if (!lo || !expect_kw(p, "and"))
            return NULL;
        const struct sql_pred *hi = value_leaf(b, c, col, SQL_COND_LE);
        leaf = hi ? new_pred(b, SQL_PRED_AND, lo, hi, 0) : NULL;
    } else {
        static const struct {
            const char *op;
            enum sql_ask_cond_kind kind;
        } ops[] = {{"=", SQL_COND_EQ},  {"<>", SQL_COND_NE}, {"!=", SQL_COND_NE},
                   {"<", SQL_COND_LT},  {"<=", SQL_COND_LE}, {">", SQL_COND_GT},
                   {">=", SQL_COND_GE}};
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
            if (is_op(op, ops[i].op)) {
                next(p);
                return value_leaf(b, c, col, ops[i].kind);
            }
        fail_expected(p, op, "=, <>, <, <=, >, >=, IN, BETWEEN, LIKE, ILIKE or IS");
        return NULL;
    }
    return leaf && not ? new_pred(b, SQL_PRED_NOT, leaf, NULL, 0) : leaf;
}

/* WHERE's grammar: OR of ANDs of factors, NOT and parentheses binding
 * tightest, as in SQL. The bucket range stands only in the top-level AND
 * (within parentheses there too): under OR or NOT it would not be a range.
 * b->range_conds counts the bucket conditions parsed, so that an OR or a
 * NOT can tell whether it took one in. A factor that is a bucket condition
 * gives NULL with *ok. */
static const struct sql_pred *parse_wexpr(struct ask_builder *b, bool *ok);

static bool refuse_range_under(struct ask_builder *b, const struct sql_token *t, const char *what)
{
    return fail_at(b->p, t, SQL_ERR_UNSUPPORTED,
                   "the bucket range cannot stand under %s: write it beside the other "
                   "conditions, joined by AND", what);
}

static const struct sql_pred *parse_wfactor(struct ask_builder *b, bool *ok)
{
    struct parser *p = b->p;
    const struct sql_token *t = peek(p);
    *ok = false;
    if (accept_kw(p, "not")) {
        int ranges = b->range_conds;
        const struct sql_pred *inner = parse_wfactor(b, ok);
        if (!*ok)
            return NULL;
        *ok = false;
        if (b->range_conds != ranges) {
            refuse_range_under(b, t, "NOT");
            return NULL;
        }
        const struct sql_pred *n = new_pred(b, SQL_PRED_NOT, inner, NULL, 0);
        *ok = n != NULL;
        return n;
    }
    if (accept_op(p, "(")) {
        const struct sql_pred *inner = parse_wexpr(b, ok);
        if (*ok && !expect_op(p, ")"))
            *ok = false;
        return inner;
    }
    struct colref c;
    if (!parse_colref(p, &c))
        return NULL;
    int col = resolve_name(b, &c);
    if (col < 0)
        return NULL;
    const struct sql_view_column *vc = &b->v->columns[col];
    if (vc->kind == SQL_COLUMN_BUCKET) {
        *ok = parse_bucket_cond(b, &c);
        b->range_conds++;
        return NULL;
    }
    if (vc->kind == SQL_COLUMN_MEASURE) {
        fail_at(p, c.tok, SQL_ERR_UNSUPPORTED,
                "cannot filter on measure \"%s\" in WHERE: a view's measures are aggregates; "
                "conditions on them go in HAVING", c.name);
        return NULL;
    }
    const struct sql_pred *leaf = parse_key_cond(b, &c, col);
    *ok = leaf != NULL;
    return leaf;
}

/* Joins two predicates by kind; a NULL side (a bucket condition) drops out. */
static const struct sql_pred *join_preds(struct ask_builder *b, enum sql_pred_kind kind,
                                         const struct sql_pred *l, const struct sql_pred *r,
                                         bool *ok)
{
    if (!l || !r)
        return l ? l : r;
    const struct sql_pred *j = new_pred(b, kind, l, r, 0);
    *ok = j != NULL;
    return j;
}

static const struct sql_pred *parse_wterm(struct ask_builder *b, bool *ok)
{
    const struct sql_pred *acc = parse_wfactor(b, ok);
    while (*ok && accept_kw(b->p, "and")) {
        const struct sql_pred *next_pred = parse_wfactor(b, ok);
        if (*ok)
            acc = join_preds(b, SQL_PRED_AND, acc, next_pred, ok);
    }
    return acc;
}

static const struct sql_pred *parse_wexpr(struct ask_builder *b, bool *ok)
{
    int ranges = b->range_conds;
    const struct sql_pred *acc = parse_wterm(b, ok);
    while (*ok && is_kw(peek(b->p), "or")) {
        const struct sql_token *t = next(b->p);
        const struct sql_pred *next_pred = parse_wterm(b, ok);
        if (*ok && b->range_conds != ranges) {
            *ok = refuse_range_under(b, t, "OR");
            return NULL;
        }
        if (*ok)
            acc = join_preds(b, SQL_PRED_OR, acc, next_pred, ok);
    }
    return acc;
}

static bool parse_where(struct ask_builder *b)
{
    struct parser *p = b->p;
    if (!accept_kw(p, "where"))
        return true; /* every bucket, every row */
    bool ok;
    const struct sql_pred *where = parse_wexpr(b, &ok);
    if (!ok)
        return false;
    b->ask->where = where;
    b->ask->has_range_from = b->has_from;
    b->ask->has_range_to = b->has_to;
    b->ask->conds = b->conds;
    b->ask->nconds = b->nconds;
    return true;
}

/* ---- GROUP BY ------------------------------------------------------------- */

/* A GROUP BY or ORDER BY entry: an ordinal, an output name, a view column or
 * date_bin(...). Returns the select item it names (or -1 if none) and fills
 * target. */
static bool parse_group_ref(struct ask_builder *b, struct target *target, int *item)
{
    struct parser *p = b->p;
    const struct sql_token *t = peek(p);
    *item = -1;
    if (t->kind == TOK_NUMBER) {
        next(p);
        char *end;
        errno = 0;
        long n = strtol(t->text, &end, 10);
        if (*end || errno || n < 1 || n > b->nitems)
            return fail_at(p, t, SQL_ERR_INVALID, "position %s is not in select list", t->text);
        *item = (int)n - 1;
        *target = b->items[*item].target;
        return true;
    }
    if (is_time_call(p)) {
        struct raw_ask_item tmp = {.tok = t};
        if (!parse_time_call(b, &tmp) || !resolve_item(b, &tmp))
            return false;
        *target = tmp.target;
        return true;
    }
    struct colref c;
    if (!parse_colref(p, &c))
        return false;
    if (!c.qual)
        for (int i = 0; i < b->nitems; i++)
            if (strcmp(b->items[i].name, c.name) == 0) {
                *item = i;
                *target = b->items[i].target;
                return true;
            }
    int col = resolve_name(b, &c);
    if (col < 0)
        return false;
    target->view_column = col;
    target->is_bucket = b->v->columns[col].kind == SQL_COLUMN_BUCKET;
    target->time = (struct time_group){.width = b->v->widths[0], .origin = b->v->origin_usec};
    return true;
}

static bool add_group(struct ask_builder *b, const struct sql_token *t, const struct target *g)
{
    struct parser *p = b->p;
    if (g->is_bucket) {
        if (b->group_bucket && !time_group_equal(&b->group_time, &g->time))
            return fail_at(p, t, SQL_ERR_INVALID, "an ask groups by one bucket width");
        b->group_bucket = true;
        b->group_time = g->time;
        return true;
    }
    if (b->v->columns[g->view_column].kind == SQL_COLUMN_MEASURE)
        return fail_at(p, t, SQL_ERR_INVALID, "cannot group by measure \"%s\"",
                       b->v->columns[g->view_column].name);
    for (int i = 0; i < b->ngroup_keys; i++)
        if (b->group_keys[i] == g->view_column)
            return true;
    if (!AGROW(b, b->group_keys, b->ngroup_keys, b->group_cap))
        return false;
    b->group_keys[b->ngroup_keys++] = g->view_column;
    return true;
}

static bool parse_group_by(struct ask_builder *b)
{
    struct parser *p = b->p;
    if (!accept_kw(p, "group"))
        return true;
    if (!expect_kw(p, "by"))
        return false;
    do {
        const struct sql_token *t = peek(p);
        struct target g;
        int item;
        if (!parse_group_ref(b, &g, &item) || !add_group(b, t, &g))
            return false;
    } while (accept_op(p, ","));
    return true;
}

/* Every selected key and bucket must be grouped, as in SQL. */
static bool check_grouping(struct ask_builder *b)
{
    for (int i = 0; i < b->nitems; i++) {
        const struct target *t = &b->items[i].target;
        const struct sql_view_column *vc = &b->v->columns[t->view_column];
        bool ok = vc->kind == SQL_COLUMN_MEASURE;
        if (t->is_bucket)
            ok = b->group_bucket && time_group_equal(&b->group_time, &t->time);
        for (int k = 0; k < b->ngroup_keys && !ok; k++)
            ok = b->group_keys[k] == t->view_column;
        if (!ok)
            return fail_at(b->p, b->items[i].tok, SQL_ERR_INVALID,
                           "column \"%s\" must appear in the GROUP BY clause",
                           b->items[i].name);
    }
    return true;
}

/* ---- HAVING ---------------------------------------------------------------- */

/* A measure named in HAVING: an output name of a selected measure, or a
 * measure column of the view. -1 after an error. */
static int having_measure(struct ask_builder *b, const struct colref *c)
{
    if (!c->qual)
        for (int i = 0; i < b->nitems; i++)
            if (strcmp(b->items[i].name, c->name) == 0 &&
                b->v->columns[b->items[i].target.view_column].kind == SQL_COLUMN_MEASURE &&
                !b->items[i].target.is_bucket)
                return b->items[i].target.view_column;
    int col = resolve_name(b, c);
    if (col >= 0 && b->v->columns[col].kind != SQL_COLUMN_MEASURE) {
        fail_at(b->p, c->tok, SQL_ERR_INVALID,
                "HAVING compares measures; \"%s\" is a key: put its condition in WHERE", c->name);
        return -1;
    }
    return col;
}

static const struct sql_pred *parse_hexpr(struct ask_builder *b);

static const struct sql_pred *parse_hfactor(struct ask_builder *b)
{
    struct parser *p = b->p;
    if (accept_kw(p, "not")) {
        const struct sql_pred *inner = parse_hfactor(b);
        return inner ? new_pred(b, SQL_PRED_NOT, inner, NULL, 0) : NULL;
    }
    if (accept_op(p, "(")) {
        const struct sql_pred *inner = parse_hexpr(b);
        return inner && expect_op(p, ")") ? inner : NULL;
    }
    if (!AGROW(b, b->having, b->nhaving, b->having_cap))
        return NULL;
    struct sql_having_cmp *h = &b->having[b->nhaving];
    memset(h, 0, sizeof *h);
    const struct sql_token *t = peek(p);
    h->line = t->line;
    h->column = t->column;
    bool value_first = t->kind != TOK_IDENT || is_reserved(t);
    if (value_first && !parse_operand(p, &h->value))
        return NULL;
    struct colref c;
    if (value_first) {
        if (!accept_cmp(p, &h->cmp))
            return fail_expected(p, peek(p), "a comparison"), NULL;
        h->cmp = cmp_flipped(h->cmp);
        if (!parse_colref(p, &c))
            return NULL;
    } else {
        if (!parse_colref(p, &c))
            return NULL;
        if (!accept_cmp(p, &h->cmp))
            return fail_expected(p, peek(p), "=, <>, <, <=, > or >= after a measure"), NULL;
        if (!parse_operand(p, &h->value))
            return NULL;
    }
    if ((h->view_column = having_measure(b, &c)) < 0)
        return NULL;
    if (!h->value.is_param && h->value.lit.kind == SQL_CONST_NULL) {
        fail_at(p, &(struct sql_token){.line = h->value.line, .column = h->value.column},
                SQL_ERR_INVALID, "a comparison with NULL is never true");
        return NULL;
    }
    if (!note_operand(b, &h->value, SQL_PARAM_MEASURE, h->view_column))
        return NULL;
    b->nhaving++;
    return new_pred(b, SQL_PRED_COND, NULL, NULL, b->nhaving - 1);
}

static const struct sql_pred *parse_hterm(struct ask_builder *b)
{
    const struct sql_pred *acc = parse_hfactor(b);
    while (acc && accept_kw(b->p, "and")) {
        const struct sql_pred *r = parse_hfactor(b);
        acc = r ? new_pred(b, SQL_PRED_AND, acc, r, 0) : NULL;
    }
    return acc;
}

static const struct sql_pred *parse_hexpr(struct ask_builder *b)
{
    const struct sql_pred *acc = parse_hterm(b);
    while (acc && accept_kw(b->p, "or")) {
        const struct sql_pred *r = parse_hterm(b);
        acc = r ? new_pred(b, SQL_PRED_OR, acc, r, 0) : NULL;
    }
    return acc;
}

/* HAVING: kept after the roll-up, before ORDER BY and LIMIT, as in SQL. */
static bool parse_having(struct ask_builder *b)
{
    if (!accept_kw(b->p, "having"))
        return true;
    const struct sql_pred *h = parse_hexpr(b);
    if (!h)
        return false;
    b->ask->having_pred = h;
    b->ask->having = b->having;
    b->ask->nhaving = b->nhaving;
    return true;
}

/* ---- ORDER BY, LIMIT, OFFSET ---------------------------------------------- */

static int output_of(struct ask_builder *b, const struct target *t)
{
    for (int i = 0; i < b->nitems; i++) {
        const struct target *o = &b->items[i].target;
        if (o->view_column == t->view_column && o->is_bucket == t->is_bucket &&
            (!o->is_bucket || time_group_equal(&o->time, &t->time)))
            return i;
    }
    return -1;
}

static bool parse_order_by(struct ask_builder *b)
{
    struct parser *p = b->p;
    if (!accept_kw(p, "order"))
        return true;
    if (!expect_kw(p, "by"))
        return false;
    do {
        const struct sql_token *t = peek(p);
        struct target g;
        int item;
        if (!parse_group_ref(b, &g, &item))
            return false;
        if (item < 0 && (item = output_of(b, &g)) < 0)
            return fail_at(p, t, SQL_ERR_INVALID,
                           "ORDER BY must name a selected column; select it first");
        if (!AGROW(b, b->order, b->norder, b->order_cap))
            return false;
        struct sql_ask_order *o = &b->order[b->norder++];
        o->output_column = item;
        o->descending = accept_kw(p, "desc");
        if (!o->descending)
            accept_kw(p, "asc");
        o->nulls_first = o->descending;
        if (accept_kw(p, "nulls")) {
            if (accept_kw(p, "first"))
                o->nulls_first = true;
            else if (expect_kw(p, "last"))
                o->nulls_first = false;
            else
                return false;
        }
    } while (accept_op(p, ","));
    b->ask->order = b->order;
    b->ask->norder = b->norder;
    return true;
}

static bool parse_count(struct ask_builder *b, struct sql_operand *o, const char *what)
{
    struct parser *p = b->p;
    const struct sql_token *t = peek(p);
    if (t->kind != TOK_NUMBER && t->kind != TOK_PARAM)
        return fail_expected(p, t, what);
    if (!parse_operand(p, o))
        return false;
    if (!o->is_param) {
        char *end;
        errno = 0;
        long long n = strtoll(o->lit.text, &end, 10);
        if (*end || errno || n < 0)
            return fail_at(p, t, SQL_ERR_INVALID, "%s must be a non-negative integer",
                           what);
    }
    return note_operand(b, o, SQL_PARAM_COUNT, -1);
}

static bool parse_limit_offset(struct ask_builder *b)
{
    struct parser *p = b->p;
    struct sql_ask *a = b->ask;
    if (accept_kw(p, "limit") && !accept_kw(p, "all")) {
        if (!parse_count(b, &a->limit, "a row count after LIMIT"))
            return false;
        a->has_limit = true;
    }
    if (accept_kw(p, "offset")) {
        if (!parse_count(b, &a->offset, "a row count after OFFSET"))
            return false;
        a->has_offset = true;
    }
    accept_op(p, ";");
    const struct sql_token *t = peek(p);
    if (is_kw(t, "having"))
        return fail_at(p, t, SQL_ERR_SYNTAX, "HAVING comes after GROUP BY, before ORDER BY");
    if (t->kind != TOK_EOF)
        return fail_expected(p, t, "the end of the ask");
    return true;
}

/* ---- The ask --------------------------------------------------------------- */

static bool parse_from(struct ask_builder *b)
{
    struct parser *p = b->p;
    if (!expect_kw(p, "from"))
        return false;
    const struct sql_token *t = expect_ident(p, "a view name");
    if (!t)
        return false;
    if (is_op(peek(p), "."))
        return fail_at(p, peek(p), SQL_ERR_UNSUPPORTED, "views are named without a schema");
    b->v = sql_view_find(b->views, t->text);
    if (!b->v)
        return fail_at(p, t, SQL_ERR_UNKNOWN_VIEW, "unknown view \"%s\"", t->text);
    b->alias = b->v->name;
    if (accept_kw(p, "as")) {
        const struct sql_token *a = expect_ident(p, "an alias after AS");
        if (!a)
            return false;
        b->alias = a->text;
    } else if (peek(p)->kind == TOK_IDENT && !is_reserved(peek(p))) {
        b->alias = next(p)->text;
    }
    if (is_op(peek(p), ",") || is_kw(peek(p), "join") || is_kw(peek(p), "left") ||
        is_kw(peek(p), "inner"))
        return fail_at(p, peek(p), SQL_ERR_UNSUPPORTED, "an ask reads one view");
    return true;
}

static bool finish_columns(struct ask_builder *b)
{
    struct sql_ask_column *cols = sql_arena_alloc(b->p->arena, sizeof *cols * (size_t)b->nitems);
    if (!cols)
        return fail_at(b->p, peek(b->p), SQL_ERR_LIMIT, "out of memory");
    for (int i = 0; i < b->nitems; i++) {
        const struct target *t = &b->items[i].target;
        enum sql_column_kind k = b->v->columns[t->view_column].kind;
        cols[i].name = b->items[i].name;
        cols[i].view_column = t->view_column;
        cols[i].kind = t->is_bucket ? SQL_ASK_BUCKET
                       : k == SQL_COLUMN_MEASURE ? SQL_ASK_MEASURE
                                                 : SQL_ASK_KEY;
    }
    struct sql_ask *a = b->ask;
    a->view = b->v;
    a->columns = cols;
    a->ncolumns = b->nitems;
    a->group_by_bucket = b->group_bucket;
    a->bucket_width = b->group_bucket && !b->group_time.calendar ? b->group_time.width
                                                                  : b->v->widths[0];
    a->bucket_origin = b->group_bucket && !b->group_time.calendar ? b->group_time.origin
                                                                   : b->v->origin_usec;
    a->bucket_calendar = b->group_bucket && b->group_time.calendar;
    a->bucket_unit = b->group_time.unit;
    a->bucket_zone = b->group_time.zone;
    a->group_keys = b->group_keys;
    a->ngroup_keys = b->ngroup_keys;
    return true;
}

/* A new select item (parse_item fills it), or NULL with the error set.
 * The items are the parse's, not the compiled ask's (finish_columns keeps
 * what answers need): they grow outside the arena and go with the
 * builder, where doubling them in the arena left three dead copies in
 * every cached ask. */
static struct raw_ask_item *item_add(struct ask_builder *b)
{
    struct raw_ask_item *more = sql_heap_grow(b->items, sizeof *more, &b->items_cap, b->nitems + 1);
    if (!more) {
        fail_at(b->p, peek(b->p), SQL_ERR_LIMIT, "out of memory");
        return NULL;
    }
    b->items = more;
    return &b->items[b->nitems++];
}

static bool compile_ask(struct ask_builder *b)
{
    struct parser *p = b->p;
    if (!expect_kw(p, "select"))
        return false;
    do {
        struct raw_ask_item *item = item_add(b);
        if (!item || !parse_item(b, item))
            return false;
    } while (accept_op(p, ","));
    if (!parse_from(b))
        return false;
    for (int i = 0; i < b->nitems; i++)
        if (!resolve_item(b, &b->items[i]))
            return false;
    return parse_where(b) && parse_group_by(b) && check_grouping(b) && parse_having(b) &&
           parse_order_by(b) && parse_limit_offset(b) && check_params(b) &&
           finish_columns(b);
}

struct sql_ask *sql_parse_ask(const char *text, const struct sql_view_list *views,
                              struct sql_error *err)
{
    struct sql_error local;
    if (!err)
        err = &local;
    memset(err, 0, sizeof *err);
    struct sql_arena *arena = sql_arena_new();
    struct sql_ask *ask = arena ? sql_arena_alloc(arena, sizeof *ask) : NULL;
    struct parser p = {0}; /* parser_free may come before parser_init */
    struct ask_builder b = {.p = &p, .ask = ask, .views = views};
    if (!ask) {
        sql_set_error(err, SQL_ERR_LIMIT, 0, 0, "out of memory");
        goto fail;
    }
    ask->arena = arena;
    /* The builder's parameter slots live beside the arena: the ask keeps
     * only those it uses (check_params). */
    b.params = calloc(SQL_MAX_PARAMS, sizeof *b.params);
    b.param_seen = calloc(SQL_MAX_PARAMS, 1);
    if (!b.params || !b.param_seen) {
        sql_set_error(err, SQL_ERR_LIMIT, 0, 0, "out of memory");
        goto fail;
    }
    if (!parser_init(&p, text, arena, err) || !compile_ask(&b))
        goto fail;
    ask->text = sql_arena_strdup(arena, text);
    if (!ask->text) {
        sql_set_error(err, SQL_ERR_LIMIT, 0, 0, "out of memory");
        goto fail;
    }
    free(b.params);
    free(b.param_seen);
    free(b.items);
    parser_free(&p);
    return ask;
fail:
    free(b.params);
    free(b.param_seen);
    free(b.items);
    parser_free(&p);
    sql_arena_free(arena);
    return NULL;
}

void sql_ask_free(struct sql_ask *ask)
{
    if (ask)
        sql_arena_free(ask->arena);
}

size_t sql_ask_bytes(const struct sql_ask *ask) { return sql_arena_bytes(ask->arena); }
