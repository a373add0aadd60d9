/* lexer.c -- PostgreSQL-flavoured tokens for the view and ask parsers.
 *
 * The lexer tracks line and column as it goes so that every token, and every
 * error, can say where it starts. Columns count characters: a UTF-8
 * continuation byte does not advance the column. */
#include "sql/lexer.h"

#include "sql/arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NAMEDATALEN - 1: PostgreSQL truncates longer names with a notice; Straum
 * refuses them instead, since a silent truncation could join two names. */
enum { MAX_IDENT_BYTES = 63 };

struct lexer {
    const char *src;
    size_t pos;
    int line, column;
    struct sql_arena *arena;
    struct sql_error *err;
};

void sql_set_error(struct sql_error *err, enum sql_error_code code, int line,
                   int column, const char *fmt, ...)
{
    if (!err || err->code != SQL_OK)
        return;
    err->code = code;
    err->line = line;
    err->column = column;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

static int cur(const struct lexer *lx) { return (unsigned char)lx->src[lx->pos]; }
static int at(const struct lexer *lx, size_t k)
{
    /* Safe: we never look past the terminating NUL, because every caller
     * checks the earlier bytes are non-NUL first. */
    return (unsigned char)lx->src[lx->pos + k];
}

static void advance(struct lexer *lx)
{
    int c = cur(lx);
    if (c == '\0')
        return;
    lx->pos++;
    if (c == '\n') {
        lx->line++;
        lx->column = 1;
    } else if ((c & 0xC0) != 0x80) {
        lx->column++;
    }
}

static bool is_ident_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static bool is_ident_char(int c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9') || c == '$';
}

static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_space(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* A growing byte buffer in the arena, for decoded strings. */
struct strbuf {
    char *data;
    int len, cap;
};

static bool strbuf_put(struct lexer *lx, struct strbuf *b, char c)
{
    b->data = sql_arena_grow(lx->arena, b->data, 1, &b->cap, b->len + 2);
    if (!b->data) {
        sql_set_error(lx->err, SQL_ERR_LIMIT, lx->line, lx->column, "out of memory");
        return false;
    }
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
    return true;
}

static bool strbuf_put_utf8(struct lexer *lx, struct strbuf *b, unsigned cp)
{
    char out[4];
    int n;
    if (cp < 0x80) {
        out[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    for (int i = 0; i < n; i++)
        if (!strbuf_put(lx, b, out[i]))
            return false;
    return true;
}

/* Skips whitespace and comments. Returns false on an unterminated comment. */
static bool skip_blanks(struct lexer *lx, bool *saw_newline)
{
    for (;;) {
        int c = cur(lx);
        if (is_space(c)) {
            if (c == '\n' && saw_newline)
                *saw_newline = true;
            advance(lx);
        } else if (c == '-' && at(lx, 1) == '-') {
            while (cur(lx) && cur(lx) != '\n')
                advance(lx);
        } else if (c == '/' && at(lx, 1) == '*') {
            int line = lx->line, column = lx->column, depth = 0;
            do {
                if (cur(lx) == '\0') {
                    sql_set_error(lx->err, SQL_ERR_SYNTAX, line, column,
                                  "unterminated /* comment");
                    return false;
                }
                if (cur(lx) == '/' && at(lx, 1) == '*') {
                    depth++;
                    advance(lx);
                } else if (cur(lx) == '*' && at(lx, 1) == '/') {
                    depth--;
                    advance(lx);
                }
                advance(lx);
            } while (depth > 0);
        } else {
            return true;
        }
    }
}

static int hex_value(int c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* One backslash escape of an E'...' string; the backslash is consumed. */
static bool lex_escape(struct lexer *lx, struct strbuf *b)
{
    int line = lx->line, column = lx->column - 1;
    int c = cur(lx);
    if (c == '\0')
        return true; /* the caller reports the unterminated string */
    switch (c) {
    case 'b': advance(lx); return strbuf_put(lx, b, '\b');
    case 'f': advance(lx); return strbuf_put(lx, b, '\f');
    case 'n': advance(lx); return strbuf_put(lx, b, '\n');
    case 'r': advance(lx); return strbuf_put(lx, b, '\r');
    case 't': advance(lx); return strbuf_put(lx, b, '\t');
    default: break;
    }
    unsigned value = 0;
    if (c >= '0' && c <= '7') {
        for (int i = 0; i < 3 && cur(lx) >= '0' && cur(lx) <= '7'; i++) {
            value = value * 8 + (unsigned)(cur(lx) - '0');
            advance(lx);
        }
        value &= 0xFF;
    } else if (c == 'x' && hex_value(at(lx, 1)) >= 0) {
        advance(lx);
        for (int i = 0; i < 2 && hex_value(cur(lx)) >= 0; i++) {
            value = value * 16 + (unsigned)hex_value(cur(lx));
            advance(lx);
        }
    } else if (c == 'u' || c == 'U') {
        int digits = c == 'u' ? 4 : 8;
        advance(lx);
        for (int i = 0; i < digits; i++) {
            if (hex_value(cur(lx)) < 0) {
                sql_set_error(lx->err, SQL_ERR_SYNTAX, line, column,
                              "invalid Unicode escape: \\%c needs %d hexadecimal digits",
                              c, digits);
                return false;
            }
            value = value * 16 + (unsigned)hex_value(cur(lx));
            advance(lx);
        }
        if (value == 0 || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
            sql_set_error(lx->err, SQL_ERR_SYNTAX, line, column,
                          "invalid Unicode escape value U+%04X", value);
            return false;
        }
        return strbuf_put_utf8(lx, b, value);
    } else {
        /* Any other escaped character stands for itself, as in PostgreSQL. */
        char ch = (char)c;
        advance(lx);
        return strbuf_put(lx, b, ch);
    }
    if (value == 0) {
        sql_set_error(lx->err, SQL_ERR_SYNTAX, line, column,
                      "invalid null byte in string literal");
        return false;
    }
    return strbuf_put(lx, b, (char)value);
}

/* The body of a quoted string; the opening quote is consumed. */
static bool lex_quoted_body(struct lexer *lx, struct strbuf *b, bool escapes,
                            int line, int column)
{
    for (;;) {
        int c = cur(lx);
        if (c == '\0') {
            sql_set_error(lx->err, SQL_ERR_SYNTAX, line, column,
                          "unterminated quoted string");
            return false;
        }
        advance(lx);
        if (c == '\'') {
            if (cur(lx) != '\'')
                return true;
            advance(lx);
            if (!strbuf_put(lx, b, '\''))
                return false;
        } else if (c == '\\' && escapes) {
            if (!lex_escape(lx, b))
                return false;
        } else if (!strbuf_put(lx, b, (char)c)) {
            return false;
        }
    }
}

/* '...' or E'...', then any continuation literals after a newline. */
static bool lex_string(struct lexer *lx, struct sql_token *t, bool escapes)
{
    struct strbuf b = {0};
    if (!strbuf_put(lx, &b, 'x')) /* make data non-NULL; reset below */
        return false;
    b.len = 0;
    b.data[0] = '\0';
    bool prefix = escapes; /* only the first part is written E'...' */
    for (;;) {
        int line = lx->line, column = lx->column;
        if (prefix)
            advance(lx); /* the E */
        prefix = false;
        advance(lx);     /* the quote */
        if (!lex_quoted_body(lx, &b, escapes, line, column))
            return false;
        /* PostgreSQL joins 'a'\n'b' into 'ab', but only across a newline. */
        size_t save_pos = lx->pos;
        int save_line = lx->line, save_col = lx->column;
        bool newline = false;
        if (!skip_blanks(lx, &newline))
            return false;
        if (newline && cur(lx) == '\'')
            continue; /* the continuation keeps the escape mode, as in PostgreSQL */
        lx->pos = save_pos;
        lx->line = save_line;
        lx->column = save_col;
        break;
    }
    t->kind = TOK_STRING;
    t->text = b.data;
    t->len = (size_t)b.len;
    return true;
}

/* $tag$ ... $tag$; the caller has seen '$' followed by '$' or a tag. */
static bool lex_dollar_string(struct lexer *lx, struct sql_token *t)
{
    int line = lx->line, column = lx->column;
    size_t tag_start = lx->pos;
    advance(lx);
    while (cur(lx) != '$') {
        if (!is_ident_char(cur(lx)) || cur(lx) == '$') {
            sql_set_error(lx->err, SQL_ERR_SYNTAX, line, column,
                          "invalid dollar-quote tag");
            return false;
        }
        advance(lx);
    }
    advance(lx);
    size_t tag_len = lx->pos - tag_start;
    size_t body_start = lx->pos;
    for (;;) {
        if (cur(lx) == '\0') {
            sql_set_error(lx->err, SQL_ERR_SYNTAX, line, column,
                          "unterminated dollar-quoted string");
            return false;
        }
        if (cur(lx) == '$' && strncmp(lx->src + lx->pos, lx->src + tag_start, tag_len) == 0)
            break;
        advance(lx);
    }
    t->kind = TOK_STRING;
    t->len = lx->pos - body_start;
    t->text = sql_arena_strndup(lx->arena, lx->src + body_start, t->len);
    for (size_t i = 0; i < tag_len; i++)
        advance(lx);
    return t->text != NULL;
}

static bool lex_ident(struct lexer *lx, struct sql_token *t)
{
    size_t start = lx->pos;
    while (is_ident_char(cur(lx)))
        advance(lx);
    size_t n = lx->pos - start;
    if (n > MAX_IDENT_BYTES) {
        sql_set_error(lx->err, SQL_ERR_LIMIT, t->line, t->column,
                      "identifier is longer than %d bytes", MAX_IDENT_BYTES);
        return false;
    }
    char *s = sql_arena_strndup(lx->arena, lx->src + start, n);
    if (!s)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 'A' && s[i] <= 'Z')
            s[i] = (char)(s[i] - 'A' + 'a');
    t->kind = TOK_IDENT;
    t->text = s;
    t->len = n;
    return true;
}

static bool lex_quoted_ident(struct lexer *lx, struct sql_token *t)
{
    struct strbuf b = {0};
    advance(lx);
    for (;;) {
        int c = cur(lx);
        if (c == '\0') {
            sql_set_error(lx->err, SQL_ERR_SYNTAX, t->line, t->column,
                          "unterminated quoted identifier");
            return false;
        }
        advance(lx);
        if (c == '"') {
            if (cur(lx) != '"')
                break;
            advance(lx);
        }
        if (!strbuf_put(lx, &b, (char)c))
            return false;
    }
    if (b.len == 0) {
        sql_set_error(lx->err, SQL_ERR_SYNTAX, t->line, t->column,
                      "zero-length quoted identifier");
        return false;
    }
    if (b.len > MAX_IDENT_BYTES) {
        sql_set_error(lx->err, SQL_ERR_LIMIT, t->line, t->column,
                      "identifier is longer than %d bytes", MAX_IDENT_BYTES);
        return false;
    }
    t->kind = TOK_IDENT;
    t->quoted = true;
    t->text = b.data;
    t->len = (size_t)b.len;
    return true;
}

static bool lex_number(struct lexer *lx, struct sql_token *t)
{
    size_t start = lx->pos;
    while (is_digit(cur(lx)))
        advance(lx);
    if (cur(lx) == '.' && at(lx, 1) != '.') {
        advance(lx);
        while (is_digit(cur(lx)))
            advance(lx);
    }
    if ((cur(lx) == 'e' || cur(lx) == 'E') &&
        (is_digit(at(lx, 1)) ||
         ((at(lx, 1) == '+' || at(lx, 1) == '-') && is_digit(at(lx, 2))))) {
        advance(lx);
        if (cur(lx) == '+' || cur(lx) == '-')
            advance(lx);
        while (is_digit(cur(lx)))
            advance(lx);
    }
    if (is_ident_start(cur(lx))) {
        sql_set_error(lx->err, SQL_ERR_SYNTAX, t->line, t->column,
                      "trailing junk after numeric literal");
        return false;
    }
    t->kind = TOK_NUMBER;
    t->len = lx->pos - start;
    t->text = sql_arena_strndup(lx->arena, lx->src + start, t->len);
    return t->text != NULL;
}

static bool lex_param(struct lexer *lx, struct sql_token *t)
{
    advance(lx);
    long n = 0;
    while (is_digit(cur(lx))) {
        n = n * 10 + (cur(lx) - '0');
        if (n > SQL_MAX_PARAMS) {
            sql_set_error(lx->err, SQL_ERR_LIMIT, t->line, t->column,
                          "parameter number is above the limit of %d", SQL_MAX_PARAMS);
            return false;
        }
        advance(lx);
    }
    if (n == 0) {
        sql_set_error(lx->err, SQL_ERR_SYNTAX, t->line, t->column,
                      "parameters are numbered from $1");
        return false;
    }
    if (is_ident_start(cur(lx))) {
        sql_set_error(lx->err, SQL_ERR_SYNTAX, t->line, t->column,
                      "trailing junk after parameter");
        return false;
    }
    t->kind = TOK_PARAM;
    t->param = (int)n;
    t->text = sql_arena_strndup(lx->arena, lx->src + t->offset, lx->pos - t->offset);
    t->len = lx->pos - t->offset;
    return t->text != NULL;
}

static bool lex_op(struct lexer *lx, struct sql_token *t)
{
    static const char *const two[] = {"<>", "!=", "<=", ">=", "::"};
    const char *s = lx->src + lx->pos;
    for (size_t i = 0; i < sizeof two / sizeof two[0]; i++) {
        if (s[0] == two[i][0] && s[1] == two[i][1]) {
            advance(lx);
            advance(lx);
            t->kind = TOK_OP;
            t->text = two[i];
            t->len = 2;
            return true;
        }
    }
    static const char one[] = "(),.;*=<>+-/[]";
    const char *hit = cur(lx) ? strchr(one, cur(lx)) : NULL;
    if (!hit) {
        int c = cur(lx);
        if (c >= 0x20 && c < 0x7F)
            sql_set_error(lx->err, SQL_ERR_SYNTAX, t->line, t->column,
                          "unexpected character \"%c\"", c);
        else
            sql_set_error(lx->err, SQL_ERR_SYNTAX, t->line, t->column,
                          "unexpected byte 0x%02X", c);
        return false;
    }
    char *op = sql_arena_strndup(lx->arena, s, 1);
    if (!op)
        return false;
    advance(lx);
    t->kind = TOK_OP;
    t->text = op;
    t->len = 1;
    return true;
}

static bool lex_one(struct lexer *lx, struct sql_token *t)
{
    if (!skip_blanks(lx, NULL))
        return false;
    memset(t, 0, sizeof *t);
    t->line = lx->line;
    t->column = lx->column;
    t->offset = lx->pos;
    int c = cur(lx);
    if (c == '\0') {
        t->kind = TOK_EOF;
        t->text = "";
        return true;
    }
    if ((c == 'e' || c == 'E') && at(lx, 1) == '\'')
        return lex_string(lx, t, true);
    if (c == '\'')
        return lex_string(lx, t, false);
    if (c == '"')
        return lex_quoted_ident(lx, t);
    if (is_ident_start(c))
        return lex_ident(lx, t);
    if (is_digit(c) || (c == '.' && is_digit(at(lx, 1))))
        return lex_number(lx, t);
    if (c == '$' && is_digit(at(lx, 1)))
        return lex_param(lx, t);
    if (c == '$' && (at(lx, 1) == '$' || is_ident_start(at(lx, 1))))
        return lex_dollar_string(lx, t);
    return lex_op(lx, t);
}

int sql_lex(const char *text, struct sql_arena *arena, struct sql_token **out,
            struct sql_error *err)
{
    if (strlen(text) > SQL_MAX_TEXT_BYTES) {
        sql_set_error(err, SQL_ERR_LIMIT, 0, 0, "text is longer than %u bytes",
                      SQL_MAX_TEXT_BYTES);
        return -1;
    }
    struct lexer lx = {.src = text, .line = 1, .column = 1, .arena = arena, .err = err};
    struct sql_token *toks = NULL;
    int n = 0, cap = 0;
    for (;;) {
        /* The array is the caller's to free, not the arena's: a compiled
         * ask keeps its arena (the ask cache holds it), and tokens grown
         * in it by doubling were three quarters of every cached ask's
         * bytes. */
        struct sql_token *more = sql_heap_grow(toks, sizeof *toks, &cap, n + 1);
        if (!more) {
            free(toks);
            sql_set_error(err, SQL_ERR_LIMIT, lx.line, lx.column, "out of memory");
            return -1;
        }
        toks = more;
        bool ok = lex_one(&lx, &toks[n]);
        toks[n].end = lx.pos;
        if (!ok) {
            free(toks);
            sql_set_error(err, SQL_ERR_LIMIT, lx.line, lx.column, "out of memory");
            return -1;
        }
        if (toks[n++].kind == TOK_EOF)
            break;
    }
    *out = toks;
    return n;
}
