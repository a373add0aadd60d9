/* calendar.h -- date_trunc's calendar buckets in a time zone, and the
 * groups they cut a range into. Private to engine/.
 *
 * date_trunc(unit, t) here is PostgreSQL's date_trunc(unit, timestamptz)
 * under a session TimeZone (timestamptz_trunc_internal): t's wall-clock
 * fields in the zone are truncated to the unit (a week starts on Monday, as
 * ISO weeks do; a quarter in January, April, July or October); for units of a
 * day and more the truncated wall time is read back in the zone (a time that
 * occurs twice as the later instant, one that does not with the offset
 * before the change, tz_local_to_utc), for smaller units with t's own offset
 * kept. So a New York day is 23 or 25 hours at the DST changes, and
 * date_trunc('hour', ...) keeps both 01:00s of the night clocks go back. */
#ifndef STRAUM_ENGINE_CALENDAR_H
#define STRAUM_ENGINE_CALENDAR_H

#include "engine/tz.h"
#include "sql/sql.h"

#include <stdint.h>

/* date_trunc(unit, t) in tz: an instant, µs since the epoch. t within the
 * times a store keeps (STORE_MIN_TIME..STORE_MAX_TIME). Never fails. */
int64_t calendar_trunc(const struct tz *tz, enum sql_time_unit unit, int64_t t);

/* The calendar buckets that [from, to) meets, in time order: bucket i holds
 * the instants [edges[i], edges[i + 1]) of the range (edges[0] = from,
 * edges[n] = to), all of whose date_trunc is keys[i]; n >= 1 when from < to.
 * The arrays are malloc'd (n + 1 edges, n keys), the caller's to free.
 * Returns 0, or -1 when out of memory or when the range holds more than
 * max_groups buckets (*n is then max_groups + 1 and nothing is returned). */
int calendar_groups(const struct tz *tz, enum sql_time_unit unit, int64_t from, int64_t to,
                    uint32_t max_groups, int64_t **edges, int64_t **keys, uint32_t *n);

#endif
