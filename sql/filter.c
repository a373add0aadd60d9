/* filter.c -- FILTER (WHERE ...) predicates: a small boolean grammar over
 * fact columns and constants, and its canonical text.
 *
 *   or   := and (OR and)*
 *   and  := not (AND not)*
 *   not  := NOT not | '(' or ')' | pred
 *   pred := col cmp const | const cmp col | col IS [NOT] NULL
 *         | col [NOT] IN (const, ...)
 *
 * The canonical text is how a view tells that two measures share a filter
 * (and so share an accumulator); it is also what the catalog shows. */
#include "sql/filter.h"

#include <stdio.h>
#include <string.h>

bool parse_colref(struct parser *p, struct colref *out)
{
    const struct sql_token *a = expect_ident(p, "a column name");
    if (!a)
        return false;
    memset(out, 0, sizeof *out);
    out->tok = a;
    out->name = a->text;
    if (accept_op(p, ".")) {
        const struct sql_token *b = expect_ident(p, "a column name");
        if (!b)
            return false;
        out->qual = a->text;
        out->name = b->text;
    }
    return true;
}

bool accept_cmp(struct parser *p, enum sql_cmp *cmp)
{
    static const struct {
        const char *op;
        enum sql_cmp cmp;
    } ops[] = {
        {"=", SQL_CMP_EQ}, {"<>", SQL_CMP_NE}, {"!=", SQL_CMP_NE}, {"<", SQL_CMP_LT},
        {"<=", SQL_CMP_LE}, {">", SQL_CMP_GT}, {">=", SQL_CMP_GE},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (accept_op(p, ops[i].op)) {
            *cmp = ops[i].cmp;
            return true;
        }
    }
    return false;
}

enum sql_cmp cmp_flipped(enum sql_cmp c)
{
    switch (c) {
    case SQL_CMP_LT: return SQL_CMP_GT;
    case SQL_CMP_LE: return SQL_CMP_GE;
    case SQL_CMP_GT: return SQL_CMP_LT;
    case SQL_CMP_GE: return SQL_CMP_LE;
    default: return c;
    }
}

static struct raw_filter *new_node(struct parser *p, enum sql_filter_kind kind)
{
    struct raw_filter *f = sql_arena_alloc(p->arena, sizeof *f);
    if (!f)
        fail_at(p, peek(p), SQL_ERR_LIMIT, "out of memory");
    else
        f->kind = kind;
    return f;
}

static bool parse_filter_const(struct parser *p, struct sql_const *c)
{
    const struct sql_token *t = peek(p);
    if (t->kind == TOK_PARAM)
        return fail_at(p, t, SQL_ERR_UNSUPPORTED,
                       "parameters are not allowed in a view; write a constant");
    if (!parse_const(p, c))
        return false;
    if (c->kind == SQL_CONST_NULL)
        return fail_at(p, t, SQL_ERR_INVALID,
                       "a comparison with NULL is never true; use IS NULL or IS NOT NULL");
    return true;
}

static struct raw_filter *parse_in_list(struct parser *p, struct raw_filter *f)
{
    if (!expect_op(p, "("))
        return NULL;
    int cap = 0;
    do {
        f->values = sql_arena_grow(p->arena, f->values, sizeof *f->values, &cap,
                                   f->nvalues + 1);
        if (!f->values || !parse_filter_const(p, &f->values[f->nvalues]))
            return NULL;
        f->nvalues++;
    } while (accept_op(p, ","));
    return expect_op(p, ")") ? f : NULL;
}

static struct raw_filter *parse_predicate(struct parser *p)
{
    const struct sql_token *t = peek(p);
    struct raw_filter *f = new_node(p, SQL_FILTER_CMP);
    if (!f)
        return NULL;
    /* An identifier starts a column unless it is a type in front of a
     * string (DATE '2024-01-01') or a keyword constant. */
    bool typed_literal = peek_at(p, 1)->kind == TOK_STRING ||
                         (is_kw(t, "timestamp") && (is_kw(peek_at(p, 1), "with") ||
                                                    is_kw(peek_at(p, 1), "without")));
    if (t->kind == TOK_IDENT && !is_reserved(t) && !typed_literal) {
        if (!parse_colref(p, &f->col))
            return NULL;
        if (accept_kw(p, "is")) {
            f->kind = accept_kw(p, "not") ? SQL_FILTER_IS_NOT_NULL : SQL_FILTER_IS_NULL;
            return expect_kw(p, "null") ? f : NULL;
        }
        if (is_kw(peek(p), "not") && is_kw(peek_at(p, 1), "in")) {
            p->pos += 2;
            f->kind = SQL_FILTER_NOT_IN;
            return parse_in_list(p, f);
        }
        if (accept_kw(p, "in")) {
            f->kind = SQL_FILTER_IN;
            return parse_in_list(p, f);
        }
        if (!accept_cmp(p, &f->cmp)) {
            fail_expected(p, peek(p), "a comparison, IS or IN");
            return NULL;
        }
        f->values = sql_arena_alloc(p->arena, sizeof *f->values);
        f->nvalues = 1;
        return f->values && parse_filter_const(p, f->values) ? f : NULL;
    }
    /* constant first: "10 <= fare_amount" */
    f->values = sql_arena_alloc(p->arena, sizeof *f->values);
    f->nvalues = 1;
    if (!f->values || !parse_filter_const(p, f->values))
        return NULL;
    if (!accept_cmp(p, &f->cmp)) {
        fail_expected(p, peek(p), "a comparison operator");
        return NULL;
    }
    f->cmp = cmp_flipped(f->cmp);
    return parse_colref(p, &f->col) ? f : NULL;
}

static struct raw_filter *parse_or(struct parser *p);

static struct raw_filter *parse_not(struct parser *p)
{
    const struct sql_token *t = peek(p);
    if (!parser_enter(p, t))
        return NULL;
    struct raw_filter *f;
    if (accept_kw(p, "not")) {
        f = new_node(p, SQL_FILTER_NOT);
        if (f && !(f->left = parse_not(p)))
            f = NULL;
    } else if (accept_op(p, "(")) {
        f = parse_or(p);
        if (f && !expect_op(p, ")"))
            f = NULL;
    } else {
        f = parse_predicate(p);
    }
    parser_leave(p);
    return f;
}

static struct raw_filter *parse_binary(struct parser *p, const char *kw,
                                       enum sql_filter_kind kind,
                                       struct raw_filter *(*operand)(struct parser *))
{
    struct raw_filter *left = operand(p);
    while (left && accept_kw(p, kw)) {
        struct raw_filter *f = new_node(p, kind);
        if (!f)
            return NULL;
        f->left = left;
        if (!(f->right = operand(p)))
            return NULL;
        left = f;
    }
    return left;
}

static struct raw_filter *parse_and(struct parser *p)
{
    return parse_binary(p, "and", SQL_FILTER_AND, parse_not);
}

static struct raw_filter *parse_or(struct parser *p)
{
    return parse_binary(p, "or", SQL_FILTER_OR, parse_and);
}

struct raw_filter *parse_filter(struct parser *p) { return parse_or(p); }

struct sql_filter *resolve_filter(struct parser *p, const struct raw_filter *raw,
                                  resolve_fact_fn resolve, void *ctx)
{
    struct sql_filter *f = sql_arena_alloc(p->arena, sizeof *f);
    if (!f) {
        fail_at(p, peek(p), SQL_ERR_LIMIT, "out of memory");
        return NULL;
    }
    f->kind = raw->kind;
    f->cmp = raw->cmp;
    f->values = raw->values;
    f->nvalues = raw->nvalues;
    f->fact_column = -1;
    switch (raw->kind) {
    case SQL_FILTER_AND:
    case SQL_FILTER_OR:
        if (!(f->right = resolve_filter(p, raw->right, resolve, ctx)))
            return NULL;
        /* fall through */
    case SQL_FILTER_NOT:
        if (!(f->left = resolve_filter(p, raw->left, resolve, ctx)))
            return NULL;
        return f;
    default:
        f->fact_column = resolve(ctx, &raw->col);
        return f->fact_column < 0 ? NULL : f;
    }
}

/* ---- Canonical text ------------------------------------------------------- */

struct out {
    char *buf;
    size_t len, need;
};

static void put(struct out *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++, o->need++)
        if (o->need + 1 < o->len)
            o->buf[o->need] = s[i];
    if (o->len)
        o->buf[o->need < o->len ? o->need : o->len - 1] = '\0';
}

static void puts_(struct out *o, const char *s) { put(o, s, strlen(s)); }

static void put_quoted(struct out *o, const char *s, size_t n, char q)
{
    put(o, &q, 1);
    for (size_t i = 0; i < n; i++) {
        put(o, &s[i], 1);
        if (s[i] == q)
            put(o, &q, 1);
    }
    put(o, &q, 1);
}

static void put_name(struct out *o, const char *name)
{
    bool plain = (name[0] >= 'a' && name[0] <= 'z') || name[0] == '_';
    for (const char *c = name; *c && plain; c++)
        plain = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_';
    if (plain)
        puts_(o, name);
    else
        put_quoted(o, name, strlen(name), '"');
}

static void put_const(struct out *o, const struct sql_const *c)
{
    switch (c->kind) {
    case SQL_CONST_NULL: puts_(o, "NULL"); break;
    case SQL_CONST_BOOL: puts_(o, c->boolean ? "true" : "false"); break;
    case SQL_CONST_NUMBER: put(o, c->text, c->len); break;
    case SQL_CONST_STRING: put_quoted(o, c->text, c->len, '\''); break;
    }
    if (c->cast) {
        puts_(o, "::");
        puts_(o, c->cast);
    }
}

static void format_node(struct out *o, const struct sql_fact_column *cols,
                        const struct sql_filter *f)
{
    static const char *const cmp_text[] = {" = ", " <> ", " < ", " <= ", " > ", " >= "};
    switch (f->kind) {
    case SQL_FILTER_AND:
    case SQL_FILTER_OR:
        puts_(o, "(");
        format_node(o, cols, f->left);
        puts_(o, f->kind == SQL_FILTER_AND ? " AND " : " OR ");
        format_node(o, cols, f->right);
        puts_(o, ")");
        return;
    case SQL_FILTER_NOT:
        puts_(o, "(NOT ");
        format_node(o, cols, f->left);
        puts_(o, ")");
        return;
    default:
        break;
    }
    put_name(o, cols[f->fact_column].name);
    switch (f->kind) {
    case SQL_FILTER_CMP:
        puts_(o, cmp_text[f->cmp]);
        put_const(o, &f->values[0]);
        break;
    case SQL_FILTER_IS_NULL: puts_(o, " IS NULL"); break;
    case SQL_FILTER_IS_NOT_NULL: puts_(o, " IS NOT NULL"); break;
    default:
        puts_(o, f->kind == SQL_FILTER_IN ? " IN (" : " NOT IN (");
        for (int i = 0; i < f->nvalues; i++) {
            if (i)
                puts_(o, ", ");
            put_const(o, &f->values[i]);
        }
        puts_(o, ")");
        break;
    }
}

size_t filter_format(const struct sql_fact_column *columns, const struct sql_filter *f,
                     char *buf, size_t len)
{
    struct out o = {.buf = buf, .len = len};
    if (len)
        buf[0] = '\0';
    format_node(&o, columns, f);
    return o.need;
}

size_t sql_filter_format(const struct sql_view *view, const struct sql_filter *f,
                         char *buf, size_t len)
{
    return filter_format(view->fact_columns, f, buf, len);
}
