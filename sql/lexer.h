/* lexer.h -- splits view and ask text into tokens, PostgreSQL's way.
 *
 * Follows PostgreSQL's lexical rules where Straum's grammar can meet them:
 * unquoted identifiers fold to lower case, "quoted" ones keep theirs, strings
 * are '...' with '' for a quote, E'...' with backslash escapes, or $tag$...$tag$;
 * two string literals separated by whitespace holding a newline are one;
 * comments are -- to the end of the line or nested slash-star blocks.
 * Private to sql/. */
#ifndef STRAUM_SQL_LEXER_H
#define STRAUM_SQL_LEXER_H

#include "sql/sql.h"

enum sql_token_kind {
    TOK_EOF,
    TOK_IDENT,  /* text is folded to lower case unless quoted */
    TOK_STRING, /* text is the decoded value */
    TOK_NUMBER, /* text is the literal as written */
    TOK_PARAM,  /* $n; param holds n */
    TOK_OP,     /* punctuation and operators; text is the operator */
};

struct sql_token {
    enum sql_token_kind kind;
    bool quoted;       /* TOK_IDENT written as "..." */
    const char *text;  /* NUL-terminated, owned by the arena */
    size_t len;
    int param;
    int line, column;
    size_t offset;     /* byte offset of the token in the source */
    size_t end;        /* byte offset just past it */
};

/* Splits text into tokens ending with TOK_EOF. Returns the count, or -1 with
 * err filled. *out is malloc'd, the caller's to free once parsed; the
 * tokens' texts are in arena. */
int sql_lex(const char *text, struct sql_arena *arena, struct sql_token **out,
            struct sql_error *err);

/* Sets err (once: the first error wins) with a position and a message. */
void sql_set_error(struct sql_error *err, enum sql_error_code code, int line,
                   int column, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
