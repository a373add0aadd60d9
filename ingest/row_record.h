/* row_record.h -- a decoded source row in a few bytes, as the initial load
 * sets rows aside.
 *
 * The load's readers decode each row as it arrives and spool it by time
 * partition; the applier replays the spools. A binary COPY tuple of the
 * taxi trips is about 86 bytes, its record about 20: the spools are
 * gigabytes of page cache written and read back, and the decoding is done
 * by the readers beside PostgreSQL rather than by the one applying thread.
 *
 * The record: a bitmap of the NULL columns (bit c of byte c/8), then each
 * non-NULL column in table order: TEXT as a varint length and its bytes,
 * every other type as its store code, zigzag varint. A non-TEXT value is a
 * function of its code and type (pgvalue_from_code), so nothing is lost.
 * Records never leave the process, yet replay checks every length. Private
 * to ingest/. */
#ifndef STRAUM_INGEST_ROW_RECORD_H
#define STRAUM_INGEST_ROW_RECORD_H

#include "ingest/internal.h"

/* A reusable buffer for encoding records. */
struct row_record_buf {
    uint8_t *bytes;
    size_t cap;
};

/* Encodes row (t->ncols values) into buf, grown as needed. Returns the
 * record's length, or 0 when out of memory. */
size_t row_record_encode(const struct source_table *t, const struct decoded_value *row,
                         struct row_record_buf *buf);

/* Decodes a record into row (t->ncols values); TEXT values point into p.
 * Returns 0, or -1 with a message when the bytes are not a record of t. */
int row_record_decode(const struct source_table *t, const uint8_t *p, size_t len,
                      struct decoded_value *row, char *err, size_t errlen);

void row_record_buf_free(struct row_record_buf *buf);

#endif
