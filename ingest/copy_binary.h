/* copy_binary.h -- PostgreSQL's binary COPY format (COPY ... TO STDOUT
 * (FORMAT binary)): the 19-byte header (signature "PGCOPY\n\377\r\n\0",
 * flags, extension area), tuples (i16 field count, then per field i32
 * length or -1 for NULL and the bytes), and the trailer (field count -1).
 *
 * A streaming parser: feed it whatever chunks libpq hands out and take whole
 * tuples as they complete. Every length is checked against the buffer and
 * against sane limits. Private to ingest/. */
#ifndef STRAUM_INGEST_COPY_BINARY_H
#define STRAUM_INGEST_COPY_BINARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COPY_MAX_FIELDS 1600          /* PostgreSQL's column limit */
#define COPY_MAX_FIELD_BYTES (1u << 30)

struct copy_field {
    bool is_null;
    const uint8_t *data; /* points into the chunk fed or the parser's buffer; see copy_parser_next */
    uint32_t len;
};

struct copy_tuple {
    int nfields;
    struct copy_field fields[COPY_MAX_FIELDS];
};

struct copy_parser {
    const uint8_t *buf;  /* the bytes being read: own, or a lent chunk */
    size_t len, pos;     /* buf's length, and how much of it is consumed */
    uint8_t *own;        /* the parser's buffer, of cap bytes */
    size_t cap;
    bool header_done, trailer_seen;
    char error[200];
};

void copy_parser_init(struct copy_parser *p);
void copy_parser_free(struct copy_parser *p);

/* Appends a copy of a chunk. Returns 0, or -1 when out of memory. */
int copy_parser_feed(struct copy_parser *p, const void *data, size_t len);

/* Appends a chunk without copying it when nothing is pending: the chunk
 * must then stay valid until copy_parser_next has returned 0 or -1 (or the
 * next feed or lend), by when whatever of it was not taken is in the
 * parser's own buffer. Returns 0, or -1 when out of memory. */
int copy_parser_lend(struct copy_parser *p, const void *data, size_t len);

/* Takes the next whole tuple: 1 with a tuple in t (fields point into the
 * lent chunk or the parser's buffer, valid until the next feed and while
 * the chunk is), 0 when more bytes are needed or the trailer was reached
 * (see trailer_seen), -1 on malformed input with p->error set. */
int copy_parser_next(struct copy_parser *p, struct copy_tuple *t);

/* After the last chunk: 0 if the stream ended cleanly with the trailer and
 * nothing after it, -1 with p->error otherwise. */
int copy_parser_finish(struct copy_parser *p);

#endif
