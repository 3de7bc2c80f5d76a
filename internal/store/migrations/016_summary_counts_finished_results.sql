-- The results summary's score counts (010, decision 0117) keep finished
-- results only (decision 0134). A result still grading entered them on
-- submission and left them when it was finished: two upserts per
-- AI-graded result, on 16 rows per exam (its shards, all at the score of
-- the rules-scored answers, usually 0) that every submission and every
-- finishing grade of the exam locked until its commit. The summary counts
-- the results still grading from this partial index instead: they are few,
-- and leave it when they are finished.
CREATE INDEX results_exam_grading ON results (org_id, exam_id) WHERE status = 'grading';

CREATE OR REPLACE FUNCTION summary_count(r results, sign integer) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    IF r.status = 'grading' THEN
      RETURN;
    END IF;
    IF sign < 0 THEN
      UPDATE result_score_counts c SET n = c.n - 1
       WHERE c.exam_id = r.exam_id AND c.shard = summary_shard(r.id) AND c.status = r.status
         AND c.score = r.score AND c.max_score = r.max_score
         AND EXISTS (SELECT FROM exams e WHERE e.id = r.exam_id);
      RETURN;
    END IF;
    INSERT INTO result_score_counts AS c (org_id, exam_id, shard, status, score, max_score, n)
    VALUES (r.org_id, r.exam_id, summary_shard(r.id), r.status, r.score, r.max_score, 1)
    ON CONFLICT (exam_id, shard, status, score, max_score) DO UPDATE SET n = c.n + 1;
  END
  $$;

CREATE OR REPLACE FUNCTION summary_results_inserted() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    INSERT INTO result_score_counts AS c (org_id, exam_id, shard, status, score, max_score, n)
    SELECT min(r.org_id), r.exam_id, summary_shard(r.id), r.status, r.score, r.max_score, count(*)
      FROM added r
     WHERE r.status <> 'grading'
     GROUP BY 2, 3, 4, 5, 6 ORDER BY 2, 3, 4, 5, 6
    ON CONFLICT (exam_id, shard, status, score, max_score) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
  END
  $$;

DELETE FROM result_score_counts WHERE status = 'grading';
