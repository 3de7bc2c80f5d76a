-- The answers' summary trigger (010) looks up each answer's result by its
-- primary key (decision 0126). It joined the inserted answers to results,
-- and whenever the planner took results for small (a young table whose
-- plan was cached in the session while it grew) it scanned every graded
-- result through the partial index results_exam_graded instead: each
-- submission then cost PostgreSQL time in proportion to the results
-- already there (5 ms of CPU at 7,000). A LATERAL subquery with a LIMIT is
-- never flattened into a join, so it runs once per answer; and with the
-- status tested outside it, no partial index qualifies, so the lookup is
-- by the key whatever the statistics say.
CREATE OR REPLACE FUNCTION summary_answers_inserted() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    INSERT INTO question_score_sums AS s (org_id, exam_id, question_id, position, shard, n, sum_x, sum_xx, sum_y, sum_yy, sum_xy, sum_fraction)
    SELECT min(t.org_id), t.exam_id, t.question_id, t.position, t.shard, count(*),
           sum(t.x), sum(t.x * t.x), sum(t.y), sum(t.y * t.y), sum(t.x * t.y), sum(t.f)
      FROM (SELECT a.org_id, a.exam_id, a.question_id, a.position, summary_shard(a.result_id) AS shard,
                   a.score::numeric AS x, (r.score - a.score)::numeric AS y,
                   (CASE WHEN a.max_score > 0 THEN a.score / a.max_score ELSE 0 END)::numeric AS f
              FROM added a
              CROSS JOIN LATERAL (SELECT score, status FROM results WHERE id = a.result_id LIMIT 1) r
             WHERE r.status = 'graded') t
     GROUP BY 2, 3, 4, 5 ORDER BY 2, 3, 4, 5
    ON CONFLICT (exam_id, question_id, position, shard) DO UPDATE
       SET n = s.n + excluded.n, sum_x = s.sum_x + excluded.sum_x, sum_xx = s.sum_xx + excluded.sum_xx,
           sum_y = s.sum_y + excluded.sum_y, sum_yy = s.sum_yy + excluded.sum_yy,
           sum_xy = s.sum_xy + excluded.sum_xy, sum_fraction = s.sum_fraction + excluded.sum_fraction;
    RETURN NULL;
  END
  $$;
