/* parser.h -- the token cursor and helpers both parsers share.
 *
 * A parser walks the token array the lexer made. Every helper that fails
 * records the error (the first one wins) and returns false or NULL, so callers
 * just propagate. Private to sql/. */
#ifndef STRAUM_SQL_PARSER_H
#define STRAUM_SQL_PARSER_H

#include "sql/arena.h"
#include "sql/lexer.h"
#include "sql/sql.h"

struct parser {
    struct sql_token *toks; /* malloc'd: parser_free */
    int ntoks, pos;
    const char *src;
    struct sql_arena *arena;
    struct sql_error *err;
    int depth; /* recursion depth of nested expressions */
};

bool parser_init(struct parser *p, const char *text, struct sql_arena *arena,
                 struct sql_error *err);
/* Frees the tokens parser_init made (their texts stay in the arena). */
void parser_free(struct parser *p);

const struct sql_token *peek(const struct parser *p);
const struct sql_token *peek_at(const struct parser *p, int k);
const struct sql_token *next(struct parser *p);

bool is_kw(const struct sql_token *t, const char *kw);
bool is_op(const struct sql_token *t, const char *op);
bool accept_kw(struct parser *p, const char *kw);
bool accept_op(struct parser *p, const char *op);
bool expect_kw(struct parser *p, const char *kw);
bool expect_op(struct parser *p, const char *op);

/* True for words that end a select item or clause, so they cannot be a bare
 * column alias ("SELECT a FROM" is not "a AS from"). */
bool is_reserved(const struct sql_token *t);

/* "expected <what>, found <token>" at the token. Returns false. */
bool fail_expected(struct parser *p, const struct sql_token *t, const char *what);
/* Any error at a token. Returns false. */
bool fail_at(struct parser *p, const struct sql_token *t, enum sql_error_code code,
             const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Describes a token for messages: "\"foo\"", "end of input", "string 'x'". */
const char *token_describe(const struct sql_token *t, char *buf, size_t len);

/* An identifier (quoted or not). Unquoted reserved words are refused. */
const struct sql_token *expect_ident(struct parser *p, const char *what);

/* A literal constant: [+|-]number, 'string', TRUE, FALSE, NULL,
 * type 'string', or any of these followed by ::type. */
bool parse_const(struct parser *p, struct sql_const *out);

/* A literal or a parameter $n. */
bool parse_operand(struct parser *p, struct sql_operand *out);

/* Nesting guard: enter before recursing, leave after. */
bool parser_enter(struct parser *p, const struct sql_token *t);
void parser_leave(struct parser *p);

#endif
