/* pgvalue.h -- PostgreSQL values in their binary send format (what binary
 * COPY and pgoutput's binary mode carry), turned into store codes and sum
 * terms, and the source types Straum accepts.
 *
 * Pure functions over buffers; every length is checked. Private to ingest/. */
#ifndef STRAUM_INGEST_PGVALUE_H
#define STRAUM_INGEST_PGVALUE_H

#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* PostgreSQL type OIDs: PG_BOOL and the others, in store/store.h. */

/* The store type for a source column, from its type OID and typmod (the
 * numeric scale lives in the typmod: ((typmod - 4) & 0xFFFF)). Returns 0, or
 * -1 with a message naming the type when Straum cannot keep it.
 * Unconstrained numeric (typmod -1) gets scale PGVALUE_DEFAULT_NUMERIC_SCALE;
 * a value with more decimals is refused when decoded. */
#define PGVALUE_DEFAULT_NUMERIC_SCALE 6
int pgvalue_store_type(uint32_t type_oid, int32_t typmod, struct store_column_type *out,
                       char *err, size_t errlen);

/* A decoded value. For TEXT: text/len point into the input. For every
 * other type: code is its store code; exact holds the value scaled to the
 * column's scale (INT, NUMERIC, BOOL as 0/1, DATE, TIMESTAMP); real holds
 * it as a double for FLOAT only, 0 for every other type (a sum of those is
 * exact, and straum-serve turns codes into doubles where an answer needs
 * one: a double per numeric value was 4% of the initial load, perf). */
struct pgvalue {
    int64_t code;
    __int128 exact;
    double real;
    const char *text;
    size_t len;
};

/* Decodes a non-NULL value in binary send format of type_oid into the
 * column type t. Returns 0, or -1 with a message (wrong length, NaN or
 * infinite numeric, more decimals than the scale, out of range). */
int pgvalue_decode_binary(uint32_t type_oid, const struct store_column_type *t,
                          const uint8_t *p, size_t len, struct pgvalue *out, char *err,
                          size_t errlen);

/* Decodes a value in text output format (pgoutput without binary mode, or a
 * 't' column), e.g. "12.50", "2024-01-17 10:00:00+00", "t". Same result. */
int pgvalue_decode_text(uint32_t type_oid, const struct store_column_type *t, const char *s,
                        size_t len, struct pgvalue *out, char *err, size_t errlen);

/* The value a non-TEXT code of column type t stands for, exactly as
 * decoding gave it: code, exact and real are functions of the code and the
 * type (the initial load keeps only codes while it sets rows aside). */
void pgvalue_from_code(const struct store_column_type *t, int64_t code, struct pgvalue *out);

#endif
