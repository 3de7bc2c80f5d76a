-- The summary triggers (010) look up an answer's result by its primary key
-- (decision 0126). Two of them found it with the status in the lookup
-- (status = 'graded'), which lets the partial index results_exam_graded
-- serve it as a full scan, and whenever the planner took results for small
-- (a young table whose plan was cached in the session while it grew) it
-- chose that scan: each submission, and each teacher's correction, then
-- cost PostgreSQL time in proportion to the graded results already there
-- (5 ms of CPU per submission at 7,000). The status is now tested after
-- the lookup, so no partial index qualifies and the lookup is by the key
-- whatever the statistics say.

-- The answers' statement trigger looks each result up in a LATERAL
-- subquery with a LIMIT, which is never flattened into a join (a join
-- could again be hashed against every result), so it runs once per answer.
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

-- A corrected or deleted answer's result.
CREATE OR REPLACE FUNCTION summary_on_answer() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  DECLARE
    total double precision;
    result_status text;
  BEGIN
    IF TG_OP = 'UPDATE' AND (OLD.score, OLD.max_score, OLD.position) IS NOT DISTINCT FROM (NEW.score, NEW.max_score, NEW.position) THEN
      RETURN NEW;
    END IF;
    SELECT r.score, r.status INTO total, result_status FROM results r WHERE r.id = OLD.result_id;
    IF result_status = 'graded' THEN
      PERFORM summary_term(OLD, total, -1);
      IF TG_OP = 'UPDATE' THEN
        PERFORM summary_term(NEW, total, 1);
      END IF;
    END IF;
    IF TG_OP = 'DELETE' THEN
      RETURN OLD;
    END IF;
    RETURN NEW;
  END
  $$;
