/* parser.c -- the token cursor, error helpers and literal parsing shared by
 * the view and ask parsers. */
#include "sql/parser.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool parser_init(struct parser *p, const char *text, struct sql_arena *arena,
                 struct sql_error *err)
{
    memset(p, 0, sizeof *p);
    p->src = text;
    p->arena = arena;
    p->err = err;
    struct sql_token *toks;
    int n = sql_lex(text, arena, &toks, err);
    if (n < 0)
        return false;
    p->toks = toks;
    p->ntoks = n;
    return true;
}

void parser_free(struct parser *p)
{
    free(p->toks);
    p->toks = NULL;
}

const struct sql_token *peek(const struct parser *p) { return &p->toks[p->pos]; }

const struct sql_token *peek_at(const struct parser *p, int k)
{
    int i = p->pos + k;
    return &p->toks[i < p->ntoks ? i : p->ntoks - 1];
}

const struct sql_token *next(struct parser *p)
{
    const struct sql_token *t = &p->toks[p->pos];
    if (t->kind != TOK_EOF)
        p->pos++;
    return t;
}

bool is_kw(const struct sql_token *t, const char *kw)
{
    return t->kind == TOK_IDENT && !t->quoted && strcmp(t->text, kw) == 0;
}

bool is_op(const struct sql_token *t, const char *op)
{
    return t->kind == TOK_OP && strcmp(t->text, op) == 0;
}

bool accept_kw(struct parser *p, const char *kw)
{
    if (!is_kw(peek(p), kw))
        return false;
    next(p);
    return true;
}

bool accept_op(struct parser *p, const char *op)
{
    if (!is_op(peek(p), op))
        return false;
    next(p);
    return true;
}

bool expect_kw(struct parser *p, const char *kw)
{
    if (accept_kw(p, kw))
        return true;
    char what[64];
    snprintf(what, sizeof what, "%s", kw);
    for (char *c = what; *c; c++)
        if (*c >= 'a' && *c <= 'z')
            *c = (char)(*c - 'a' + 'A');
    return fail_expected(p, peek(p), what);
}

bool expect_op(struct parser *p, const char *op)
{
    if (accept_op(p, op))
        return true;
    char what[16];
    snprintf(what, sizeof what, "\"%s\"", op);
    return fail_expected(p, peek(p), what);
}

bool is_reserved(const struct sql_token *t)
{
    static const char *const words[] = {
        "select", "from", "where", "group", "order", "by", "limit", "offset",
        "having", "join", "left", "right", "inner", "outer", "full", "cross",
        "on", "as", "and", "or", "not", "in", "is", "null", "true", "false",
        "filter", "within", "union", "with", "create", "view", "asc", "desc",
        "nulls", "distinct", "all", "case", "when", "then", "else", "end",
        "between", "like", "window", "over", "using", "natural", "fetch",
    };
    if (t->kind != TOK_IDENT || t->quoted)
        return false;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcmp(t->text, words[i]) == 0)
            return true;
    return false;
}

const char *token_describe(const struct sql_token *t, char *buf, size_t len)
{
    switch (t->kind) {
    case TOK_EOF:
        snprintf(buf, len, "end of input");
        break;
    case TOK_STRING:
        snprintf(buf, len, "string '%.40s%s'", t->text, t->len > 40 ? "..." : "");
        break;
    case TOK_NUMBER:
        snprintf(buf, len, "number %.40s", t->text);
        break;
    case TOK_PARAM:
        snprintf(buf, len, "parameter $%d", t->param);
        break;
    case TOK_IDENT:
    case TOK_OP:
        snprintf(buf, len, "\"%.60s\"", t->text);
        break;
    }
    return buf;
}

bool fail_at(struct parser *p, const struct sql_token *t, enum sql_error_code code,
             const char *fmt, ...)
{
    char msg[sizeof p->err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sql_set_error(p->err, code, t->line, t->column, "%s", msg);
    return false;
}

bool fail_expected(struct parser *p, const struct sql_token *t, const char *what)
{
    char found[96];
    return fail_at(p, t, SQL_ERR_SYNTAX, "expected %s, found %s", what,
                   token_describe(t, found, sizeof found));
}

const struct sql_token *expect_ident(struct parser *p, const char *what)
{
    const struct sql_token *t = peek(p);
    if (t->kind != TOK_IDENT || is_reserved(t)) {
        fail_expected(p, t, what);
        return NULL;
    }
    return next(p);
}

bool parser_enter(struct parser *p, const struct sql_token *t)
{
    if (++p->depth > SQL_MAX_DEPTH)
        return fail_at(p, t, SQL_ERR_LIMIT, "expression is nested deeper than %d levels",
                       SQL_MAX_DEPTH);
    return true;
}

void parser_leave(struct parser *p) { p->depth--; }

/* ---- Type names and literals --------------------------------------------- */

/* Reads a type name for a cast and returns its canonical spelling, or NULL
 * without consuming anything when the tokens do not start one. */
static const char *accept_type_name(struct parser *p)
{
    static const struct {
        const char *word, *canonical;
    } simple[] = {
        {"int", "int4"},         {"integer", "int4"},     {"int4", "int4"},
        {"smallint", "int2"},    {"int2", "int2"},        {"bigint", "int8"},
        {"int8", "int8"},        {"numeric", "numeric"},  {"decimal", "numeric"},
        {"real", "float4"},      {"float4", "float4"},    {"float8", "float8"},
        {"text", "text"},        {"varchar", "varchar"},  {"bool", "bool"},
        {"boolean", "bool"},     {"date", "date"},        {"timestamptz", "timestamptz"},
        {"interval", "interval"},
    };
    const struct sql_token *t = peek(p);
    if (t->kind != TOK_IDENT || t->quoted)
        return NULL;
    if (is_kw(t, "double") && is_kw(peek_at(p, 1), "precision")) {
        p->pos += 2;
        return "float8";
    }
    if (is_kw(t, "character") && is_kw(peek_at(p, 1), "varying")) {
        p->pos += 2;
        return "varchar";
    }
    if (is_kw(t, "timestamp")) {
        next(p);
        bool with = is_kw(peek(p), "with"), without = is_kw(peek(p), "without");
        if ((with || without) && is_kw(peek_at(p, 1), "time") &&
            is_kw(peek_at(p, 2), "zone")) {
            p->pos += 3;
            return with ? "timestamptz" : "timestamp";
        }
        return "timestamp";
    }
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
        if (strcmp(t->text, simple[i].word) == 0) {
            next(p);
            return simple[i].canonical;
        }
    }
    return NULL;
}

static bool parse_cast_suffix(struct parser *p, struct sql_const *out)
{
    while (accept_op(p, "::")) {
        const struct sql_token *t = peek(p);
        const char *type = accept_type_name(p);
        if (!type)
            return fail_expected(p, t, "a type name");
        out->cast = type;
    }
    return true;
}

/* "type 'literal'": a type name directly followed by a string. */
static bool try_typed_literal(struct parser *p, struct sql_const *out)
{
    int save = p->pos;
    const char *type = accept_type_name(p);
    if (!type)
        return false;
    const struct sql_token *s = peek(p);
    if (s->kind != TOK_STRING) {
        p->pos = save;
        return false;
    }
    next(p);
    out->kind = SQL_CONST_STRING;
    out->text = s->text;
    out->len = s->len;
    out->cast = type;
    return true;
}

static bool parse_const_or(struct parser *p, struct sql_const *out, const char *what)
{
    const struct sql_token *t = peek(p);
    memset(out, 0, sizeof *out);
    out->line = t->line;
    out->column = t->column;
    if ((is_op(t, "-") || is_op(t, "+")) && peek_at(p, 1)->kind == TOK_NUMBER) {
        bool negative = is_op(t, "-");
        next(p);
        const struct sql_token *n = next(p);
        out->kind = SQL_CONST_NUMBER;
        out->len = n->len + (negative ? 1 : 0);
        char *text = sql_arena_alloc(p->arena, out->len + 1);
        if (!text)
            return fail_at(p, t, SQL_ERR_LIMIT, "out of memory");
        snprintf(text, out->len + 1, "%s%s", negative ? "-" : "", n->text);
        out->text = text;
    } else if (t->kind == TOK_NUMBER) {
        next(p);
        out->kind = SQL_CONST_NUMBER;
        out->text = t->text;
        out->len = t->len;
    } else if (t->kind == TOK_STRING) {
        next(p);
        out->kind = SQL_CONST_STRING;
        out->text = t->text;
        out->len = t->len;
    } else if (is_kw(t, "true") || is_kw(t, "false")) {
        next(p);
        out->kind = SQL_CONST_BOOL;
        out->boolean = is_kw(t, "true");
    } else if (is_kw(t, "null")) {
        next(p);
        out->kind = SQL_CONST_NULL;
    } else if (!try_typed_literal(p, out)) {
        return fail_expected(p, t, what);
    }
    return parse_cast_suffix(p, out);
}

bool parse_const(struct parser *p, struct sql_const *out)
{
    return parse_const_or(p, out, "a constant");
}

bool parse_operand(struct parser *p, struct sql_operand *out)
{
    const struct sql_token *t = peek(p);
    memset(out, 0, sizeof *out);
    out->line = t->line;
    out->column = t->column;
    if (t->kind == TOK_PARAM) {
        next(p);
        out->is_param = true;
        out->param = t->param;
        return true;
    }
    return parse_const_or(p, &out->lit, "a parameter or a constant");
}
