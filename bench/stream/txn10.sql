-- A transaction of ten single-row updates: fares of ten random trips.
\set a random(1, :maxid)
\set b random(1, :maxid)
\set c random(1, :maxid)
\set d random(1, :maxid)
\set e random(1, :maxid)
\set f random(1, :maxid)
\set g random(1, :maxid)
\set h random(1, :maxid)
\set i random(1, :maxid)
\set j random(1, :maxid)
BEGIN;
UPDATE yellow_trips SET fare_amount = fare_amount + 0.01 WHERE id = :a;
UPDATE yellow_trips SET fare_amount = fare_amount + 0.01 WHERE id = :b;
UPDATE yellow_trips SET fare_amount = fare_amount + 0.01 WHERE id = :c;
UPDATE yellow_trips SET fare_amount = fare_amount + 0.01 WHERE id = :d;
UPDATE yellow_trips SET fare_amount = fare_amount + 0.01 WHERE id = :e;
UPDATE yellow_trips SET fare_amount = fare_amount + 0.01 WHERE id = :f;
UPDATE yellow_trips SET fare_amount = fare_amount + 0.01 WHERE id = :g;
UPDATE yellow_trips SET fare_amount = fare_amount + 0.01 WHERE id = :h;
UPDATE yellow_trips SET fare_amount = fare_amount + 0.01 WHERE id = :i;
UPDATE yellow_trips SET fare_amount = fare_amount + 0.01 WHERE id = :j;
END;
