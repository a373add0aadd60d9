/* filter.h -- FILTER (WHERE ...) predicates of view measures: parsing,
 * resolving column names, and the canonical text that identifies them.
 * Private to sql/. */
#ifndef STRAUM_SQL_FILTER_H
#define STRAUM_SQL_FILTER_H

#include "sql/parser.h"

/* A column as written: [qualifier.]name, not yet resolved. */
struct colref {
    const char *qual; /* NULL when unqualified */
    const char *name;
    const struct sql_token *tok;
};

bool parse_colref(struct parser *p, struct colref *out);

/* A predicate as parsed, before names are resolved. */
struct raw_filter {
    enum sql_filter_kind kind;
    struct raw_filter *left, *right;
    struct colref col;
    enum sql_cmp cmp;
    struct sql_const *values;
    int nvalues;
};

/* A comparison operator (= <> != < <= > >=) at the parser, taken: true
 * with *cmp, or false with nothing taken. */
bool accept_cmp(struct parser *p, enum sql_cmp *cmp);
/* "5 < x" is "x > 5": the operator with its sides swapped. */
enum sql_cmp cmp_flipped(enum sql_cmp c);

/* Parses the boolean expression inside FILTER (WHERE ...). */
struct raw_filter *parse_filter(struct parser *p);

/* Resolves a column of a filter to a fact column index; returns -1 after
 * recording an error. */
typedef int (*resolve_fact_fn)(void *ctx, const struct colref *col);

struct sql_filter *resolve_filter(struct parser *p, const struct raw_filter *raw,
                                  resolve_fact_fn resolve, void *ctx);

/* Canonical text of a filter given the fact column names. */
size_t filter_format(const struct sql_fact_column *columns, const struct sql_filter *f,
                     char *buf, size_t len);

#endif
