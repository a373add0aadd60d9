-- A single-row delete: a trip taken away (an id already deleted deletes
-- nothing, and PostgreSQL sends that transaction as no change).
\set id random(1, :maxid)
DELETE FROM yellow_trips WHERE id = :id;
