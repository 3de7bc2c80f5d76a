-- The results summary's rows of one exam shard (its score counts and its
-- questions' sums) were locked by whichever writer came in the order it
-- touched them: a rules-scored submission takes a count and then the sums,
-- a correction one question's sum, then a count, then every sum, a
-- finishing grade a count and then the sums. Two of them on one shard of
-- one exam could each hold what the other waited for; PostgreSQL then
-- aborted one (a submission answered 500, a correction retried after a
-- second). Every writer now first takes one transaction-scoped advisory
-- lock per exam shard it is about to change, so writers of one shard take
-- turns from the start, as they already did on the rows, and writers of
-- different shards never meet (decision 0149).

-- summary_lock takes the lock of result_id's shard of exam_id, held until
-- the transaction ends.
CREATE FUNCTION summary_lock(exam_id text, result_id text) RETURNS void
  LANGUAGE sql VOLATILE
  AS $$ SELECT pg_advisory_xact_lock(hashtext(exam_id), summary_shard(result_id)) $$;

CREATE OR REPLACE FUNCTION summary_on_result() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  DECLARE
    a result_answers;
  BEGIN
    IF TG_OP = 'UPDATE' AND (OLD.status, OLD.score, OLD.max_score) IS NOT DISTINCT FROM (NEW.status, NEW.score, NEW.max_score) THEN
      RETURN NULL;
    END IF;
    PERFORM summary_lock(OLD.exam_id, OLD.id);
    PERFORM summary_count(OLD, -1);
    IF OLD.status = 'graded' THEN
      FOR a IN SELECT * FROM result_answers WHERE result_id = OLD.id ORDER BY question_id LOOP
        PERFORM summary_term(a, OLD.score, -1);
      END LOOP;
    END IF;
    IF TG_OP = 'DELETE' THEN
      RETURN OLD;
    END IF;
    PERFORM summary_count(NEW, 1);
    IF NEW.status = 'graded' THEN
      FOR a IN SELECT * FROM result_answers WHERE result_id = NEW.id ORDER BY question_id LOOP
        PERFORM summary_term(a, NEW.score, 1);
      END LOOP;
    END IF;
    RETURN NULL;
  END
  $$;

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
      PERFORM summary_lock(OLD.exam_id, OLD.result_id);
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

-- The statement triggers take the locks of every shard they change in one
-- order (by the lock's key), so two statements of many results cannot take
-- them crosswise.
CREATE OR REPLACE FUNCTION summary_results_inserted() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    PERFORM pg_advisory_xact_lock(k.exam_key, k.shard)
       FROM (SELECT DISTINCT hashtext(r.exam_id) AS exam_key, summary_shard(r.id) AS shard
               FROM added r WHERE r.status <> 'grading' ORDER BY 1, 2) k;
    INSERT INTO result_score_counts AS c (org_id, exam_id, shard, status, score, max_score, n)
    SELECT min(r.org_id), r.exam_id, summary_shard(r.id), r.status, r.score, r.max_score, count(*)
      FROM added r
     WHERE r.status <> 'grading'
     GROUP BY 2, 3, 4, 5, 6 ORDER BY 2, 3, 4, 5, 6
    ON CONFLICT (exam_id, shard, status, score, max_score) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
  END
  $$;

CREATE OR REPLACE FUNCTION summary_answers_inserted() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    PERFORM pg_advisory_xact_lock(k.exam_key, k.shard)
       FROM (SELECT DISTINCT hashtext(a.exam_id) AS exam_key, summary_shard(a.result_id) AS shard
               FROM added a
               CROSS JOIN LATERAL (SELECT status FROM results WHERE id = a.result_id LIMIT 1) r
              WHERE r.status = 'graded' ORDER BY 1, 2) k;
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

REVOKE ALL ON FUNCTION summary_lock(text, text) FROM PUBLIC;
