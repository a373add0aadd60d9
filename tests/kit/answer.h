/* answer.h -- an answer as rows of text, from PostgreSQL (a PGresult) or from
 * straum-serve (its JSON), and the comparison the benchmarks use to say two
 * answers are equal: the same normalization as tests/e2e/test_serve_asks.c.
 * Rows compare as sets; exact decimals digit for digit (Straum writes them as
 * strings); timestamps as instants (the two sides write offsets
 * differently); JSON numbers as integers or their shortest round-trip text,
 * as PostgreSQL writes float8. */
#ifndef STRAUM_KIT_ANSWER_H
#define STRAUM_KIT_ANSWER_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

struct answer_row {
    char *key;    /* the normalized values joined by '|': what compares */
    char **cells; /* ncols display texts, "NULL" for NULL */
    int seq;      /* its place in the answer as received, from 0 */
};

struct answer {
    int ncols, nrows;
    char **columns;
    struct answer_row *rows; /* sorted by key once built */
};

/* Builds from a PGresult with tuples. Returns 0, or -1 (out of memory). */
int answer_from_pg(const PGresult *res, struct answer *a);

/* Builds from straum-serve's {"columns": [...], "rows": [[...], ...]}.
 * Returns 0, or -1 with a message in err. */
int answer_from_json(const char *json, struct answer *a, char *err, size_t errlen);

/* True when both hold the same rows (as sets) and as many columns; else
 * false with the first difference described in why. */
bool answer_equal(const struct answer *want, const struct answer *got, char *why, size_t whylen);

/* answer_equal, and each place holds an equal row in both (for an answer
 * whose ORDER BY decides every place: ties broken by every key). False
 * with the first difference in why; out of memory is a difference too. */
bool answer_equal_in_order(const struct answer *want, const struct answer *got, char *why,
                           size_t whylen);

void answer_free(struct answer *a);

#endif
