-- A single-row update of a measure: a trip's fare corrected by a cent.
-- pgbench -D maxid=N (the trips' largest id).
\set id random(1, :maxid)
UPDATE yellow_trips SET fare_amount = fare_amount + 0.01 WHERE id = :id;
