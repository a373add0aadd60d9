-- straum_generate_trips(trips, seed, first_id): inserts `trips` yellow trips
-- of January-June 2024, deterministic for a seed in [-1, 1], with taxi-like
-- skew: Manhattan-heavy zones, some zone ids not in the zone table (264, 265,
-- 300), card payments most, fares with one or two decimals including zeros
-- and negatives, tips mostly on card, a daily rhythm. A test-sized
-- generator; the benchmark has its own at full scale.
-- Every LATERAL subquery mentions g: an uncorrelated one (SELECT random())
-- would be evaluated once, giving every trip the same payment type.
CREATE OR REPLACE FUNCTION straum_generate_trips(trips int, seed float8, first_id bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
PERFORM setseed(seed);
INSERT INTO yellow_trips
SELECT first_id + g AS id,
       1 + (random() * 1)::int AS vendor_id,
       t.pickup_at,
       t.pickup_at + make_interval(secs => 60 + random() * 3000) AS dropoff_at,
       CASE WHEN random() < 0.05 THEN NULL ELSE 1 + (random() * 3)::int END,
       round((random() * random() * 20)::numeric, 2) AS trip_distance,
       z.pu, z.do_,
       p.payment_type,
       f.fare,
       CASE WHEN p.payment_type = 1 THEN round((f.fare * random() * 0.3)::numeric, 2)
            ELSE 0 END AS tip,
       f.fare + 1.00
FROM generate_series(1, trips) AS g,
LATERAL (SELECT timestamptz '2024-01-01 00:00:00+00'
                + make_interval(days => (random() * 181)::int)
                + make_interval(hours => (CASE WHEN random() < 0.7 THEN 7 + random() * 15
                                               ELSE random() * 24 END)::int)
                + make_interval(secs => random() * 3599) AS pickup_at, g AS gg) t,
LATERAL (SELECT CASE WHEN random() < 0.02 THEN (ARRAY[264, 265, 300])[1 + (random() * 2)::int]
                     WHEN random() < 0.65 THEN (ARRAY[4, 13, 43, 48, 68, 79, 87, 90, 100, 107,
                                                      113, 114, 125, 137, 140, 141, 142, 143,
                                                      144, 148, 151, 158, 161, 162, 163, 164,
                                                      166, 170, 186, 209, 211, 224, 229, 230,
                                                      231, 232, 233, 234, 236, 237, 238, 239,
                                                      246, 249, 261, 262, 263])[1 + (random() * 46)::int]
                     ELSE 1 + (random() * 262)::int END AS pu,
                CASE WHEN random() < 0.6 THEN (ARRAY[161, 162, 236, 237, 230, 170, 48, 68])[1 + (random() * 7)::int]
                     ELSE 1 + (random() * 264)::int END AS do_, g AS gg) z,
LATERAL (SELECT CASE WHEN r < 0.72 THEN 1 WHEN r < 0.90 THEN 2 WHEN r < 0.93 THEN 0
                     WHEN r < 0.96 THEN 3 WHEN r < 0.99 THEN 4 ELSE 5 END::smallint AS payment_type,
                g AS gg FROM (SELECT random() AS r, g AS g2) x) p,
LATERAL (SELECT CASE WHEN r < 0.01 THEN 0.00 WHEN r < 0.02 THEN -round((random() * 20)::numeric, 1)
                     ELSE round((3 + random() * random() * 70)::numeric, 1) END AS fare,
                g AS gg FROM (SELECT random() AS r, g AS g2) x) f;
END $$;
