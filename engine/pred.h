/* pred.h -- an ask's conditions as SQL evaluates them: three-valued logic
 * over AND, OR and NOT, and the comparisons of text that need the text
 * (ranges in C collation, LIKE and ILIKE). Private to engine/. */
#ifndef STRAUM_ENGINE_PRED_H
#define STRAUM_ENGINE_PRED_H

#include "sql/sql.h"

#include <stdbool.h>
#include <stddef.h>

/* SQL's truth values: a comparison with NULL is UNKNOWN, and a row or a
 * group is kept only when its condition is TRUE. */
enum truth { T_FALSE = 0, T_TRUE = 1, T_UNKNOWN = 2 };

/* A leaf's truth: leaf(ctx, i) for leaf i of the tree, or -1 on an error
 * (the caller's, kept in ctx). */
typedef int (*pred_leaf_fn)(void *ctx, int leaf);

/* The truth of tree p (NULL: TRUE), evaluating leaves through leaf and
 * skipping those that cannot change the outcome (FALSE AND ..., TRUE OR
 * ...). Returns an enum truth, or -1 when a leaf failed. */
int pred_eval(const struct sql_pred *p, pred_leaf_fn leaf, void *ctx);

/* Whether p is leaves under AND only (or NULL): such a tree is TRUE exactly
 * when no leaf is FALSE or UNKNOWN, which the scan checks leaf by leaf
 * without the tree. */
bool pred_all_and(const struct sql_pred *p);

/* text LIKE pattern (icase: ILIKE, ASCII letters folded), as PostgreSQL
 * matches: % any run of characters, _ one character (a UTF-8 sequence),
 * backslash quotes the next pattern character. */
bool pred_like(const char *text, size_t len, const char *pattern, size_t plen, bool icase);

/* Byte order (C collation): <0, 0, >0. */
int pred_text_cmp(const char *a, size_t alen, const char *b, size_t blen);

/* Two decimal numbers written as text ("-12.50", "3", "1e3" too), compared
 * exactly when neither has an exponent: <0, 0, >0; -2 on -2 out when one
 * is not a number (*ok false). */
int pred_decimal_cmp(const char *a, size_t alen, const char *b, size_t blen, bool *ok);

#endif
