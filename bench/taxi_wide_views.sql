-- The taxi under a wide key (seed 000, "The taxi month under a wide key"):
-- 15-minute buckets with day and week widths, keyed by payment type,
-- vendor, pickup zone and dropoff zone, with the pickup zone's borough,
-- zone and service zone through the zones dim and two filtered counts.
-- Pickup and dropoff zone together are nearly unique per trip, so the
-- 15-minute width collapses little: the hardest case for a cell store.
CREATE VIEW wide_trips WITH (buckets = '15 minutes, 1 day, 7 days') AS
SELECT date_bin('15 minutes', t.pickup_at, timestamptz 'epoch') AS bucket,
       t.payment_type AS payment_type,
       t.vendor_id AS vendor_id,
       t.pu_location_id AS pu_location_id,
       t.do_location_id AS do_location_id,
       z.borough AS borough,
       z.zone AS zone,
       z.service_zone AS service_zone,
       count(*) AS trips,
       count(*) FILTER (WHERE t.payment_type = 1) AS card_trips,
       count(*) FILTER (WHERE t.passenger_count > 1) AS shared_trips
FROM public.yellow_trips AS t
LEFT JOIN public.taxi_zones AS z ON z.location_id = t.pu_location_id
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
