/* taxi_asks.h -- the ten asks of the taxi benchmark (seed 000), each as
 * PostgreSQL SQL over the raw tables and as a Straum ask over the views in
 * taxi_views.sql with every value a parameter. Where the SQL has no range the
 * ask's is 2000 to 2030, which holds every trip. Shared by the tests (which
 * compile and, later, answer them) and the benchmark (which times them). */
#ifndef STRAUM_KIT_TAXI_ASKS_H
#define STRAUM_KIT_TAXI_ASKS_H

struct taxi_ask {
    const char *name;
    const char *postgres_sql;
    const char *ask;
    const char *params[4]; /* NULL-terminated */
};

#define TAXI_ALL_FROM "2000-01-01"
#define TAXI_ALL_TO "2030-01-01"

static const struct taxi_ask TAXI_ASKS[] = {
    {"Trips",
     "SELECT count(*) FROM yellow_trips",
     "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2",
     {TAXI_ALL_FROM, TAXI_ALL_TO, 0}},
    {"Card trips",
     "SELECT count(*) FROM yellow_trips WHERE payment_type = 1",
     "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2 AND payment_type = $3",
     {TAXI_ALL_FROM, TAXI_ALL_TO, "1", 0}},
    {"Trips by pickup borough",
     "SELECT z.borough, count(*) FROM yellow_trips t "
     "LEFT JOIN taxi_zones z ON z.location_id = t.pu_location_id GROUP BY z.borough",
     "SELECT borough, trips FROM trips WHERE bucket >= $1 AND bucket < $2 GROUP BY borough",
     {TAXI_ALL_FROM, TAXI_ALL_TO, 0}},
    {"Fares by payment type",
     "SELECT payment_type, count(*), sum(fare_amount), avg(fare_amount) "
     "FROM yellow_trips GROUP BY payment_type",
     "SELECT payment_type, trips, fare, avg_fare FROM trips "
     "WHERE bucket >= $1 AND bucket < $2 GROUP BY payment_type",
     {TAXI_ALL_FROM, TAXI_ALL_TO, 0}},
    {"Median fare",
     "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY fare_amount) FROM yellow_trips",
     "SELECT median_fare FROM trips WHERE bucket >= $1 AND bucket < $2",
     {TAXI_ALL_FROM, TAXI_ALL_TO, 0}},
    {"p99 fare by payment type",
     "SELECT payment_type, percentile_disc(0.99) WITHIN GROUP (ORDER BY fare_amount) "
     "FROM yellow_trips GROUP BY payment_type",
     "SELECT payment_type, p99_fare FROM trips "
     "WHERE bucket >= $1 AND bucket < $2 GROUP BY payment_type",
     {TAXI_ALL_FROM, TAXI_ALL_TO, 0}},
    {"Median fare per hour, one day",
     "SELECT date_trunc('hour', pickup_at), "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY fare_amount) FROM yellow_trips "
     "WHERE pickup_at >= '2024-01-17' AND pickup_at < '2024-01-18' GROUP BY 1",
     "SELECT bucket, median_fare FROM trips "
     "WHERE bucket >= $1 AND bucket < $2 GROUP BY bucket",
     {"2024-01-17", "2024-01-18", 0}},
    {"Manhattan pickups, one week",
     "SELECT count(*) FROM yellow_trips t "
     "JOIN taxi_zones z ON z.location_id = t.pu_location_id "
     "WHERE z.borough = 'Manhattan' "
     "AND t.pickup_at >= '2024-01-08' AND t.pickup_at < '2024-01-15'",
     "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2 AND borough = $3",
     {"2024-01-08", "2024-01-15", "Manhattan", 0}},
    {"Trips per hour, one day",
     "SELECT date_trunc('hour', pickup_at), count(*) FROM yellow_trips "
     "WHERE pickup_at >= '2024-01-17' AND pickup_at < '2024-01-18' GROUP BY 1",
     "SELECT bucket, trips FROM trips WHERE bucket >= $1 AND bucket < $2 GROUP BY bucket",
     {"2024-01-17", "2024-01-18", 0}},
    {"Tips by dropoff borough",
     "SELECT z.borough, count(*), sum(t.tip_amount), avg(t.trip_distance), "
     "sum(t.fare_amount) FROM yellow_trips t "
     "LEFT JOIN taxi_zones z ON z.location_id = t.do_location_id GROUP BY z.borough",
     "SELECT borough, trips, tips, avg_distance, fare FROM dropoffs "
     "WHERE bucket >= $1 AND bucket < $2 GROUP BY borough",
     {TAXI_ALL_FROM, TAXI_ALL_TO, 0}},
};

#define TAXI_NASKS ((int)(sizeof TAXI_ASKS / sizeof TAXI_ASKS[0]))

/* Six asks as a New York dashboard sends them: local days, a month of
 * local-day medians, months by borough over all time, a time picker's
 * range (Grafana's BETWEEN, off the hour edges) with a top-ten HAVING, and
 * two percentiles over six months by keys and by a dim column per local
 * day. The SQL is the same question over the raw rows
 * under the session time zone New York; the range on the view's bucket is
 * the hour bucket's, as the view buckets the rows. */
static const struct taxi_ask TAXI_DASHBOARD_ASKS[] = {
    {"Trips per New York day, six months",
     "SELECT date_trunc('day', pickup_at), count(*) FROM yellow_trips "
     "WHERE pickup_at >= '2024-01-01' AND pickup_at < '2024-07-01' GROUP BY 1",
     "SELECT date_trunc('day', bucket) AS day, trips FROM trips "
     "WHERE bucket >= $1 AND bucket < $2 GROUP BY day",
     {"2024-01-01", "2024-07-01", 0}},
    {"Median fare per New York day, March",
     "SELECT date_trunc('day', pickup_at), "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY fare_amount) FROM yellow_trips "
     "WHERE pickup_at >= '2024-03-01' AND pickup_at < '2024-04-01' GROUP BY 1",
     "SELECT date_trunc('day', bucket) AS day, median_fare FROM trips "
     "WHERE bucket >= $1 AND bucket < $2 GROUP BY day",
     {"2024-03-01", "2024-04-01", 0}},
    {"Trips per month by borough",
     "SELECT date_trunc('month', t.pickup_at), z.borough, count(*) FROM yellow_trips t "
     "LEFT JOIN taxi_zones z ON z.location_id = t.pu_location_id GROUP BY 1, 2",
     "SELECT date_trunc('month', bucket) AS month, borough, trips FROM trips "
     "GROUP BY month, borough",
     {0}},
    {"Top ten pickup zones, a time picker's range",
     "SELECT t.pu_location_id, count(*), avg(t.fare_amount) FROM yellow_trips t "
     "WHERE date_bin('1 hour', t.pickup_at, timestamptz 'epoch') "
     "BETWEEN '2024-03-09T18:42:17Z' AND '2024-03-11T00:42:17Z' "
     "GROUP BY 1 HAVING count(*) > 100 ORDER BY count(*) DESC, 1 LIMIT 10",
     "SELECT pu_location_id, trips, avg_fare FROM trips WHERE bucket BETWEEN $1 AND $2 "
     "GROUP BY pu_location_id HAVING trips > $3 ORDER BY trips DESC, pu_location_id LIMIT 10",
     {"2024-03-09T18:42:17Z", "2024-03-11T00:42:17Z", "100", 0}},
    {"p99 fare by pickup zone and payment type, six months",
     "SELECT pu_location_id, payment_type, "
     "percentile_disc(0.99) WITHIN GROUP (ORDER BY fare_amount) FROM yellow_trips "
     "WHERE pickup_at >= '2024-01-01' AND pickup_at < '2024-07-01' GROUP BY 1, 2",
     "SELECT pu_location_id, payment_type, p99_fare FROM trips "
     "WHERE bucket >= $1 AND bucket < $2 GROUP BY pu_location_id, payment_type",
     {"2024-01-01", "2024-07-01", 0}},
    {"Median fare per New York day by borough, six months",
     "SELECT date_trunc('day', t.pickup_at), z.borough, "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount) FROM yellow_trips t "
     "LEFT JOIN taxi_zones z ON z.location_id = t.pu_location_id "
     "WHERE t.pickup_at >= '2024-01-01' AND t.pickup_at < '2024-07-01' GROUP BY 1, 2",
     "SELECT date_trunc('day', bucket) AS day, borough, median_fare FROM trips "
     "WHERE bucket >= $1 AND bucket < $2 GROUP BY day, borough",
     {"2024-01-01", "2024-07-01", 0}},
};

#define TAXI_NDASHBOARD_ASKS ((int)(sizeof TAXI_DASHBOARD_ASKS / sizeof TAXI_DASHBOARD_ASKS[0]))

/* A large answer, streamed: trips, the average and the p99 fare per hour
 * by payment type and pickup borough over six months (105,752 rows at full
 * scale), timed end to end (the last byte of the body read). */
static const struct taxi_ask TAXI_LARGE_ASKS[] = {
    {"Per hour by payment type and borough, six months",
     "SELECT date_trunc('hour', t.pickup_at), t.payment_type, z.borough, count(*), "
     "avg(t.fare_amount), percentile_disc(0.99) WITHIN GROUP (ORDER BY t.fare_amount) "
     "FROM yellow_trips t LEFT JOIN taxi_zones z ON z.location_id = t.pu_location_id "
     "WHERE t.pickup_at >= '2024-01-01' AND t.pickup_at < '2024-07-01' GROUP BY 1, 2, 3",
     "SELECT bucket, payment_type, borough, trips, avg_fare, p99_fare FROM trips "
     "WHERE bucket >= $1 AND bucket < $2 GROUP BY bucket, payment_type, borough",
     {"2024-01-01", "2024-07-01", 0}},
};

#define TAXI_NLARGE_ASKS ((int)(sizeof TAXI_LARGE_ASKS / sizeof TAXI_LARGE_ASKS[0]))

/* The trips under the seed's wide key (bench/taxi_wide_views.sql), over
 * January (the seed's month): every key (nearly a group per trip), by
 * pickup borough, by zone and service zone over one day, and card trips per
 * day by vendor. */
#define TAXI_WIDE_JOIN \
    " FROM yellow_trips t LEFT JOIN taxi_zones z ON z.location_id = t.pu_location_id "
#define TAXI_WIDE_COUNTS \
    "count(*), count(*) FILTER (WHERE t.payment_type = 1), " \
    "count(*) FILTER (WHERE t.passenger_count > 1)"
#define TAXI_WIDE_JANUARY \
    "WHERE t.pickup_at >= '2024-01-01 00:00:00+00' AND t.pickup_at < '2024-02-01 00:00:00+00' "

static const struct taxi_ask TAXI_WIDE_ASKS[] = {
    {"Every key, January",
     "SELECT date_bin('15 minutes', t.pickup_at, timestamptz 'epoch'), t.payment_type, "
     "t.vendor_id, t.pu_location_id, t.do_location_id, z.borough, z.zone, z.service_zone, "
     TAXI_WIDE_COUNTS TAXI_WIDE_JOIN TAXI_WIDE_JANUARY "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8",
     "SELECT bucket, payment_type, vendor_id, pu_location_id, do_location_id, borough, zone, "
     "service_zone, trips, card_trips, shared_trips FROM wide_trips "
     "WHERE bucket >= $1 AND bucket < $2 GROUP BY bucket, payment_type, vendor_id, "
     "pu_location_id, do_location_id, borough, zone, service_zone",
     {"2024-01-01 00:00:00+00", "2024-02-01 00:00:00+00", 0}},
    {"By pickup borough, January",
     "SELECT z.borough, " TAXI_WIDE_COUNTS TAXI_WIDE_JOIN TAXI_WIDE_JANUARY "GROUP BY 1",
     "SELECT borough, trips, card_trips, shared_trips FROM wide_trips "
     "WHERE bucket >= $1 AND bucket < $2 GROUP BY borough",
     {"2024-01-01 00:00:00+00", "2024-02-01 00:00:00+00", 0}},
    {"By pickup zone and service zone, one day",
     "SELECT z.zone, z.service_zone, " TAXI_WIDE_COUNTS TAXI_WIDE_JOIN
     "WHERE t.pickup_at >= '2024-01-17 00:00:00+00' AND t.pickup_at < '2024-01-18 00:00:00+00' "
     "GROUP BY 1, 2",
     "SELECT zone, service_zone, trips, card_trips, shared_trips FROM wide_trips "
     "WHERE bucket >= $1 AND bucket < $2 GROUP BY zone, service_zone",
     {"2024-01-17 00:00:00+00", "2024-01-18 00:00:00+00", 0}},
    {"Card trips per day by vendor, January",
     "SELECT date_bin('1 day', t.pickup_at, timestamptz 'epoch'), t.vendor_id, "
     "count(*) FILTER (WHERE t.payment_type = 1) FROM yellow_trips t " TAXI_WIDE_JANUARY
     "GROUP BY 1, 2",
     "SELECT date_bin('1 day', bucket) AS d, vendor_id, card_trips FROM wide_trips "
     "WHERE bucket >= $1 AND bucket < $2 GROUP BY d, vendor_id",
     {"2024-01-01 00:00:00+00", "2024-02-01 00:00:00+00", 0}},
};

#define TAXI_NWIDE_ASKS ((int)(sizeof TAXI_WIDE_ASKS / sizeof TAXI_WIDE_ASKS[0]))

/* The seed's steps under the wide key after the load, each one commit
 * (the streamed commits are 200 of the first kind, each five new trips):
 * a zone renamed, a zone moved to a key no trip has (its trips lose their
 * zone), and a trip in the renamed zone changed. */
static const struct {
    const char *name, *sql;
} TAXI_WIDE_STEPS[] = {
    {"A zone renamed", "UPDATE taxi_zones SET zone = zone || ' North' WHERE location_id = 161"},
    {"A zone moved to a new key", "UPDATE taxi_zones SET location_id = 266 WHERE location_id = 262"},
    {"A trip in the renamed zone",
     "UPDATE yellow_trips SET passenger_count = 3, payment_type = 1 WHERE id = "
     "(SELECT min(id) FROM yellow_trips WHERE pu_location_id = 161)"},
};

#define TAXI_NWIDE_STEPS ((int)(sizeof TAXI_WIDE_STEPS / sizeof TAXI_WIDE_STEPS[0]))

#endif
