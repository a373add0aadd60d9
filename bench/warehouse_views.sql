-- The warehouse workload's views (bench/warehouse_schema.sql): tasks by the
-- hour with a day width, keyed by organization, live, task group and
-- storage location, with the group's category and the location's type
-- through two dims. picks holds what the store is sized for (counts, a
-- FILTER count, sums); picks_full adds a max and a percentile_cont, whose
-- value counts are what the report gives separately.
CREATE VIEW picks WITH (buckets = '1 hour, 1 day') AS
SELECT date_bin('1 hour', t.created_at, timestamptz 'epoch') AS bucket,
       t.organization_id AS organization_id,
       t.live AS live,
       t.group_id AS group_id,
       t.location_id AS location_id,
       g.category AS category,
       l.type AS location_type,
       count(*) AS tasks,
       count(*) FILTER (WHERE t.status = 1) AS picks,
       sum(t.quantity) AS quantity,
       sum(t.pick_seconds) AS pick_seconds
FROM public.tasks AS t
LEFT JOIN public.task_groups AS g ON g.id = t.group_id
LEFT JOIN public.storage_locations AS l ON l.id = t.location_id
GROUP BY 1, 2, 3, 4, 5, 6, 7;

CREATE VIEW picks_full WITH (buckets = '1 hour, 1 day') AS
SELECT date_bin('1 hour', t.created_at, timestamptz 'epoch') AS bucket,
       t.organization_id AS organization_id,
       t.live AS live,
       t.group_id AS group_id,
       t.location_id AS location_id,
       g.category AS category,
       l.type AS location_type,
       count(*) AS tasks,
       count(*) FILTER (WHERE t.status = 1) AS picks,
       sum(t.quantity) AS quantity,
       sum(t.pick_seconds) AS pick_seconds,
       max(t.quantity) AS max_quantity,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.pick_seconds) AS median_pick_seconds
FROM public.tasks AS t
LEFT JOIN public.task_groups AS g ON g.id = t.group_id
LEFT JOIN public.storage_locations AS l ON l.id = t.location_id
GROUP BY 1, 2, 3, 4, 5, 6, 7;
