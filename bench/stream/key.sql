-- A single-row update of a key: a trip moved to another pickup zone (the
-- zone table's 265 ids), which moves its contribution between two cells.
\set id random(1, :maxid)
\set zone random(1, 265)
UPDATE yellow_trips SET pu_location_id = :zone WHERE id = :id;
