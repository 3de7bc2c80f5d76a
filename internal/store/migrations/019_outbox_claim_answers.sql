-- A grading row's claim also reads the result's answers awaiting AI
-- grading (decision 0138), so the workflow starts with them in its input
-- instead of reading them in a local activity of its own: one statement
-- per claimed batch instead of a round trip, a database scope and a
-- history marker per result. The answers are read when the row is
-- claimed, as the local activity read them when the workflow started; a
-- correction that makes an answer pending again re-arms the row, which is
-- claimed again. Other kinds return null. Callers of the previous release
-- name the columns they read, so the added one does not disturb them.
DROP FUNCTION outbox_claim(integer, double precision, text, double precision);
CREATE FUNCTION outbox_claim(p_limit integer, p_lease_seconds double precision, p_region text, p_grace_seconds double precision)
  RETURNS TABLE (kind text, subject_id text, org_id text, region text, attempts integer, restarts integer, answers text[])
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    UPDATE workflow_outbox o
       SET next_attempt_at = now() + make_interval(secs => p_lease_seconds), attempts = o.attempts + 1
      FROM (SELECT w.kind, w.subject_id FROM workflow_outbox w
             WHERE w.dispatched_at IS NULL
               AND w.next_attempt_at <= now() - make_interval(secs => p_grace_seconds)
               AND (p_region IS NULL OR w.region = p_region)
             ORDER BY w.next_attempt_at LIMIT p_limit
             FOR UPDATE SKIP LOCKED) due
     WHERE o.kind = due.kind AND o.subject_id = due.subject_id
    RETURNING o.kind, o.subject_id, o.org_id, o.region, o.attempts, o.restarts,
              CASE WHEN o.kind = 'grading' THEN
                coalesce((SELECT array_agg(a.question_id ORDER BY a.position) FROM result_answers a
                           WHERE a.result_id = o.subject_id AND a.org_id = o.org_id AND a.status = 'pending'), '{}')
              END;
  END
  $$;
REVOKE ALL ON FUNCTION outbox_claim(integer, double precision, text, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_claim(integer, double precision, text, double precision) TO assessd_app;

CREATE OR REPLACE FUNCTION outbox_claim(p_limit integer, p_lease_seconds double precision)
  RETURNS TABLE (kind text, subject_id text, org_id text, region text, attempts integer, restarts integer)
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$ SELECT kind, subject_id, org_id, region, attempts, restarts FROM outbox_claim(p_limit, p_lease_seconds, NULL, 0) $$;
