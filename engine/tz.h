/* tz.h -- time zones from the system's tz database (TZif files), for reading
 * timestamp parameters written without an offset and writing buckets back
 * with the zone's offset, as PostgreSQL's session TimeZone does.
 * Private to engine/. */
#ifndef STRAUM_ENGINE_TZ_H
#define STRAUM_ENGINE_TZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tz;

/* Loads a zone by name ("UTC", "America/New_York") from the tz database
 * (TZDIR or /usr/share/zoneinfo). NULL with a message when unknown. Zones are
 * cached for the process's life: the same pointer comes back every time. */
const struct tz *tz_get(const char *name, char *err, size_t errlen);

/* The zone's offset from UTC in seconds at a UTC instant (µs). */
int32_t tz_offset_at(const struct tz *tz, int64_t utc_us);

/* The first instant (µs) after utc_us at which the zone's offset changes,
 * or INT64_MAX when it never does again. */
int64_t tz_next_transition(const struct tz *tz, int64_t utc_us);

/* The UTC instant of a wall-clock time in the zone. A time that occurs twice
 * (clocks go back) is read as the later instant (standard time) and a time
 * that does not occur (clocks go forward) with the offset in force before
 * the change, as PostgreSQL reads them. */
int64_t tz_local_to_utc(const struct tz *tz, int64_t local_us);

/* "2024-01-17T00:00:00-05:00": an instant written in the zone, with its
 * offset (seconds and fractions only when present). Returns bytes written. */
size_t tz_format(const struct tz *tz, int64_t utc_us, char *buf, size_t len);
/* The same with the offset given (seconds east of UTC). */
size_t tz_format_offset(int64_t utc_us, int32_t off, char *buf, size_t len);

#endif
