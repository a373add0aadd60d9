/* pglz.h -- PostgreSQL's own compression format (pg_lzcompress.c) decoded:
 * it compresses full-page images in the WAL (wal_compression = pglz, read
 * by pgwal.c) and varlenas compressed inline in heap tuples (the default
 * TOAST compression, read by heap_tuple.c). Both come from a server the
 * follower does not control, so the decoder trusts no byte of its input.
 * Private to ingest. */
#ifndef STRAUM_INGEST_PGLZ_H
#define STRAUM_INGEST_PGLZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* pg_lzcompress.c's pglz_decompress: decodes the slen bytes at src into
 * dst, which holds rawsize bytes (the size the compressed datum or page
 * image states). A control byte gives the next eight items, lowest bit
 * first: a clear bit a literal byte, a set bit a tag of two bytes (length
 * - 3 in the low nibble, a 12-bit offset back into the output) and a third
 * byte of extra length when the nibble is 15.
 *
 * Bounded on both sides: no byte is read at or past src + slen and none is
 * written at or past dst + rawsize (a match running past it is cut, as
 * PostgreSQL cuts it); a tag cut short by the input's end, or a back
 * reference of 0 or before dst, is corrupt. Decoding stops when either the
 * input or the output is used up.
 *
 * check_complete is PostgreSQL's: when true, the input must decode to
 * exactly rawsize bytes and end there (a whole page image, a whole value);
 * when false, a shorter output or unread input is not an error (a slice of
 * a value). dst may be NULL only when rawsize is 0.
 *
 * Returns the number of bytes written to dst, or -1 for corrupt input. */
long pglz_decompress(const uint8_t *src, size_t slen, uint8_t *dst, size_t rawsize,
                     bool check_complete);

#endif
