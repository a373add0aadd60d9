/* duration.h -- the programs' duration options (--commit-interval,
 * --max-lag, --ask-timeout): "250us", "5ms", "2s", "1.5m", "1h".
 *
 * The grammar, whole: digits, optionally a '.' and more digits, then a unit:
 * us, ms, s, m or h; a bare number is milliseconds. No sign, no exponent,
 * no spaces. A fraction finer than a microsecond is cut off ("1.9us" is
 * 1 us). The value is computed in integers, so every input either gives the
 * exact truncated count of microseconds or is refused: a duration past
 * INT64_MAX microseconds (about 292,000 years) is refused, never wrapped. */
#ifndef STRAUM_BASE_DURATION_H
#define STRAUM_BASE_DURATION_H

#include <stdint.h>

/* What duration_parse reads, for --help and error messages. */
#define DURATION_FORMS "a number with us, ms, s, m or h (a bare number is milliseconds)"

/* Parses text as above: 0 and *usec set, or -1 (bad form or too large) and
 * *usec untouched. */
int duration_parse(const char *text, int64_t *usec);

#endif
