/* text.h -- straum-dump's text formatters: times, widths, durations, LSNs,
 * exact scaled 128-bit sums, and a growable string buffer to render into.
 *
 * Pure functions over buffers, so the JSON and the human output of every
 * command render values the same way. */
#ifndef STRAUM_DUMP_TEXT_H
#define STRAUM_DUMP_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Big enough for any time, width, duration or LSN text below. */
#define TEXT_SMALL 80

/* Two spellings of one UTC instant: PostgreSQL's output for humans
 * ("2024-01-17 10:00:00+00"), RFC 3339 for JSON ("2024-01-17T10:00:00Z").
 * Fractional seconds appear only when non-zero. */
enum text_time_style { TIME_PG, TIME_RFC3339 };
void text_time(char buf[TEXT_SMALL], int64_t usec, enum text_time_style style);

/* A bucket width in the largest unit that divides it exactly: "1 hour",
 * "1 day", "7 days", "90 minutes", "1500 milliseconds". */
void text_width(char buf[TEXT_SMALL], int64_t usec);

/* An elapsed time for people: "0.250 s", "02:03:04", "3 days 02:03:04". */
void text_duration(char buf[TEXT_SMALL], int64_t usec);

/* A growable NUL-terminated string. Allocation failure exits the tool. */
struct sbuf {
    char *p;
    size_t len, cap;
};

void sbuf_reset(struct sbuf *b);
void sbuf_free(struct sbuf *b);
void sbuf_add(struct sbuf *b, const char *s, size_t n);
void sbuf_puts(struct sbuf *b, const char *s);
void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends text for a one-line display: control bytes become \n, \t, \xNN
 * so that a value can never break a line of output apart. */
void sbuf_add_display(struct sbuf *b, const char *s, size_t n);

/* Appends an int128 divided by 10^scale, exactly: "-12.50" for -1250 at
 * scale 2; a negative scale appends zeros. No double on the way. */
void sbuf_scaled_i128(struct sbuf *b, __int128 v, int scale);

/* Display width of UTF-8 text in columns (code points; no wide glyphs). */
size_t text_columns(const char *s);

/* Parses a whole decimal integer >= 0; false on junk or overflow. */
bool text_parse_count(const char *s, int64_t *out);

#endif
