-- A single-row update of the bucket column: a trip's pickup moved by up to
-- three hours either way, into another hour bucket (or back).
\set id random(1, :maxid)
\set shift random(-3, 3)
UPDATE yellow_trips SET pickup_at = pickup_at + :shift * interval '1 hour',
                        dropoff_at = dropoff_at + :shift * interval '1 hour'
WHERE id = :id;
