/* buf.h -- a growable byte buffer, and the JSON string writer.
 *
 * Answers, views lists and dumps are written straight into one buffer: no
 * printf on the hot paths that matter (strings, integers), no intermediate
 * tree. A failed allocation marks the buffer failed instead of aborting, and
 * every later write is dropped; the caller checks `failed` once at the end
 * (serve answers 500). A zeroed struct buf is an empty buffer. */
#ifndef STRAUM_BASE_BUF_H
#define STRAUM_BASE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct buf {
    char *data; /* NUL-terminated once anything was written */
    size_t len, cap;
    bool failed; /* an allocation failed: the content is incomplete */
};

/* Makes room for more bytes and the NUL after them: false (the buffer
 * marked failed, what it had kept) when memory runs out or it had failed. */
bool buf_grow(struct buf *b, size_t more);
/* Appends len bytes. Cannot fail visibly: on allocation failure the buffer
 * is marked failed and keeps what it had. Inline: an answer writes a few
 * short pieces a value, and a call apiece was a tenth of writing a row. */
static inline void buf_put(struct buf *b, const void *data, size_t len)
{
    if (b->len + len + 1 > b->cap && !buf_grow(b, len))
        return;
    if (b->failed)
        return;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}
/* Appends one byte, as buf_put. */
static inline void buf_putc(struct buf *b, char c) { buf_put(b, &c, 1); }
/* Appends a NUL-terminated string, as buf_put. */
static inline void buf_puts(struct buf *b, const char *s) { buf_put(b, s, strlen(s)); }
/* The most bytes int64_text writes: "-9223372036854775808". */
#define INT64_TEXT_BYTES 20
/* Writes v in decimal, as printf's "%lld" does, into out (no NUL);
 * returns the bytes written, at most INT64_TEXT_BYTES. Cannot fail. The
 * answers' counts and keys are written with it, not printf (a tenth of a
 * light ask's writing). */
int int64_text(int64_t v, char out[INT64_TEXT_BYTES]);
/* Appends v in decimal, as buf_put. */
void buf_put_int64(struct buf *b, int64_t v);
/* Appends printf output, as buf_put. */
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s[0..len) as a JSON string literal, quotes included: '"', '\\'
 * and bytes below 0x20 are escaped; a well-formed UTF-8 sequence (Unicode
 * 15, Table 3-7) is copied as it is; every byte that does not begin one is
 * written as U+FFFD, so the output is valid JSON and valid UTF-8 whatever
 * the input. */
void buf_json_string(struct buf *b, const char *s, size_t len);
/* Frees the bytes and leaves an empty buffer. */
void buf_free(struct buf *b);

#endif
