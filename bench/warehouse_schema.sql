-- The warehouse workload's tables (issue: wide keys and big dims; seed 000
-- "A warehouse's tables"): tasks picked in a warehouse, each in a task group
-- (its category) and at a storage location (its type). The seed's copy of a
-- production database is not public; straum_generate_warehouse below makes
-- tables of its shape.
CREATE TABLE storage_locations (id int PRIMARY KEY, type text);
CREATE TABLE task_groups (id bigint PRIMARY KEY, category text);
CREATE TABLE tasks (
  id bigint PRIMARY KEY, organization_id int NOT NULL, live boolean NOT NULL,
  group_id bigint, location_id int,
  created_at timestamptz NOT NULL, completed_at timestamptz,
  status smallint NOT NULL,          -- 0 open, 1 completed, 2 cancelled
  quantity int, pick_seconds numeric(9,1));
CREATE INDEX tasks_created_at ON tasks (created_at);

-- straum_generate_warehouse(tasks, groups, locations, first_id, span_days):
-- deterministic (no random(): each column is a hash of the row's id,
-- PostgreSQL's own hashint8extended with a salt per column, so a row is the
-- same at every scale and in every run), shaped like the seed's:
--   - locations of three types, one in 53 untyped (NULL);
--   - groups of about tasks/groups tasks each (the seed: 2.3), forty
--     categories, one group in seventeen uncategorised (NULL);
--   - 44 organizations, skewed (the square of a uniform: organization 1
--     has about 15 % of the tasks, organization 44 under 0.1 %); an
--     organization is live unless its id is a multiple of five;
--   - one task in 1,009 in no group (a NULL dim key), one in 2,003 at a
--     location the dim lacks;
--   - tasks created in id order over span_days from 2024-01-01 UTC, with a
--     daily rhythm; one in fifty open, one in ninety-seven cancelled, the
--     rest completed within two hours, with a pick time.
CREATE OR REPLACE FUNCTION straum_wh_hash(x bigint, salt int) RETURNS float8
LANGUAGE sql IMMUTABLE AS
$$ SELECT (hashint8extended(x, salt) & 4503599627370495)::float8 / 4503599627370496 $$;

CREATE OR REPLACE FUNCTION straum_generate_warehouse(ntasks bigint, ngroups bigint, nlocations int,
                                                     first_id bigint, span_days int)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
IF first_id = 1 THEN
  INSERT INTO storage_locations
  SELECT l, CASE WHEN l % 53 = 0 THEN NULL
                 ELSE (ARRAY['pick', 'reserve', 'staging'])[1 + floor(straum_wh_hash(l, 1) * 3)::int] END
  FROM generate_series(1, nlocations) l;
  INSERT INTO task_groups
  SELECT g, CASE WHEN g % 17 = 0 THEN NULL
                 ELSE 'category ' || lpad((1 + floor(straum_wh_hash(g, 2) * 40))::int::text, 2, '0') END
  FROM generate_series(1, ngroups) g;
END IF;
INSERT INTO tasks
SELECT id, o.org, o.org % 5 <> 0,
       CASE WHEN id % 1009 = 0 THEN NULL ELSE 1 + (id - 1) * ngroups / greatest(ntasks, 1) % ngroups END,
       CASE WHEN id % 2003 = 0 THEN nlocations + 1 ELSE 1 + floor(straum_wh_hash(id, 3) * nlocations)::int END,
       c.created_at,
       CASE WHEN s.status = 1 THEN c.created_at + make_interval(secs => 30 + floor(straum_wh_hash(id, 4) * 7170)) END,
       s.status,
       1 + floor(straum_wh_hash(id, 5) * 20)::int,
       CASE WHEN s.status = 1 THEN round((straum_wh_hash(id, 6) * straum_wh_hash(id, 7) * 900)::numeric, 1) END
FROM generate_series(first_id, first_id + ntasks - 1) id,
LATERAL (SELECT 1 + floor(44 * straum_wh_hash(id, 8) ^ 2)::int AS org) o,
LATERAL (SELECT CASE WHEN id % 50 = 7 THEN 0 WHEN id % 97 = 3 THEN 2 ELSE 1 END::smallint AS status) s,
LATERAL (SELECT timestamptz '2024-01-01 00:00:00+00'
                + make_interval(days => floor((id - 1) % greatest(ntasks, 1) * span_days::float8 / greatest(ntasks, 1))::int)
                + make_interval(hours => (CASE WHEN straum_wh_hash(id, 9) < 0.8 THEN 6 + straum_wh_hash(id, 10) * 14
                                              ELSE straum_wh_hash(id, 10) * 23.99 END)::int)
                + make_interval(secs => floor(straum_wh_hash(id, 11) * 3599)) AS created_at) c;
END $$;
