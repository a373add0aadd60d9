/* decimal.h -- exact decimal text of a scaled integer, as PostgreSQL
 * prints numeric: v / 10^scale with exactly scale digits after the point
 * ("-12.50" for v = -1250, scale 2; "0.0012" for 12, scale 4). A negative
 * scale (numeric(p, -s)) means v counts units of 10^s: its zeros are
 * written out (12, scale -3: "12000"; zero stays "0"). Store codes of
 * numeric columns, sums and straum-dump's figures all print through here,
 * so they read the same as psql. */
#ifndef STRAUM_BASE_DECIMAL_H
#define STRAUM_BASE_DECIMAL_H

#include <stddef.h>

/* Writes the text into buf as snprintf does (what fits, always terminated
 * when len > 0) and returns its full length. Any __int128, the smallest
 * included; any scale from -1000 to 1000 (PostgreSQL's numeric limits).
 * Cannot fail. */
__extension__ size_t decimal_format(__int128 v, int scale, char *buf, size_t len);

/* The decimal digits of m, most significant first, NUL-terminated, into
 * out (40 bytes hold the 39 digits of 2^128 - 1 and the NUL); returns how
 * many digits. Cannot fail. */
enum { DECIMAL_DIGITS_BYTES = 40 };
__extension__ int decimal_digits(unsigned __int128 m, char out[DECIMAL_DIGITS_BYTES]);

#endif
