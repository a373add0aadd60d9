-- The benchmark's tables (DESIGN.md §5). taxi_zones comes from the real TLC
-- zone table (bench/data/taxi_zone_lookup.csv); yellow_trips is generated.
CREATE TABLE taxi_zones (location_id int PRIMARY KEY, borough text, zone text, service_zone text);
CREATE TABLE yellow_trips (
  id bigint PRIMARY KEY, vendor_id smallint,
  pickup_at timestamptz NOT NULL, dropoff_at timestamptz NOT NULL,
  passenger_count smallint, trip_distance numeric(9,2),
  pu_location_id int, do_location_id int, payment_type smallint,
  fare_amount numeric(9,2), tip_amount numeric(9,2), total_amount numeric(9,2));
