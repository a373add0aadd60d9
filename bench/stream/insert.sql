-- A single-row insert: a new trip somewhere in January to June 2024, its id
-- from the sequence taxi_stream_ids (made past the trips' ids).
\set at random(1704067200, 1719791999)
\set minutes random(2, 60)
\set pu random(1, 265)
\set do random(1, 265)
\set payment random(1, 4)
\set fare random(250, 9000)
\set tip random(0, 1500)
INSERT INTO yellow_trips VALUES
  (nextval('taxi_stream_ids'), 1, to_timestamp(:at), to_timestamp(:at + 60 * :minutes), 1,
   :minutes * 0.31, :pu, :do, :payment, :fare / 100.0, :tip / 100.0, (:fare + :tip) / 100.0);
