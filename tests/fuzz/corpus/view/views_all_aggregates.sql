CREATE VIEW "Rides 2" WITH (buckets = '5 minutes, 1 hour, 1 day, 1 week 2 days') AS
SELECT date_bin('5 minutes', r.at, timestamptz '1999-12-31 22:00:00-05:30') AS bucket,
       r.zone, z.name AS zone_name, z."Borough",
       count(*) AS n, count(r.fare) AS fares,
       count(*) FILTER (WHERE (r.fare >= 1 AND r.fare <= 10) OR r.kind IN ('a', 'b')) AS cheap,
       count(DISTINCT r.kind) AS kinds, sum(r.fare) AS fare, avg(r.dist) AS dist,
       min(r.fare) AS least, max(r.at) AS latest,
       percentile_disc(0.9) WITHIN GROUP (ORDER BY r.fare) AS p90,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY r.dist) FILTER (WHERE r.dist >= 0) AS median_dist
FROM app.rides AS r
INNER JOIN app.zones z ON z.id = r.zone
GROUP BY 1, 2, 3, 4;

CREATE VIEW by_kind AS
SELECT date_bin('1 day', k.at, timestamp 'epoch') AS day, k.kind, count(*) AS n
FROM rides k GROUP BY day, k.kind;
