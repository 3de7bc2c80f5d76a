-- Regional dispatchers (decision 0130): each worker process starts the
-- workflows of its own region, so the workflow's first task comes back in
-- the start's answer (Temporal's eager start) instead of through matching;
-- serve's dispatcher takes only what no worker took within a grace period.
-- This claim is outbox_claim with both filters: p_region null claims every
-- region, p_grace_seconds 0 every due row. The two-argument outbox_claim
-- stays, now as this one without filters, for binaries older than this
-- migration during a rolling upgrade.
CREATE FUNCTION outbox_claim(p_limit integer, p_lease_seconds double precision, p_region text, p_grace_seconds double precision)
  RETURNS TABLE (kind text, subject_id text, org_id text, region text, attempts integer, restarts integer)
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    UPDATE workflow_outbox o
       SET next_attempt_at = now() + make_interval(secs => p_lease_seconds), attempts = o.attempts + 1
      FROM (SELECT w.kind, w.subject_id FROM workflow_outbox w
             WHERE w.dispatched_at IS NULL
               AND w.next_attempt_at <= now() - make_interval(secs => p_grace_seconds)
               AND (p_region IS NULL OR w.region = p_region)
             ORDER BY w.next_attempt_at LIMIT p_limit
             FOR UPDATE SKIP LOCKED) due
     WHERE o.kind = due.kind AND o.subject_id = due.subject_id
    RETURNING o.kind, o.subject_id, o.org_id, o.region, o.attempts, o.restarts
  $$;
REVOKE ALL ON FUNCTION outbox_claim(integer, double precision, text, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_claim(integer, double precision, text, double precision) TO assessd_app;

CREATE OR REPLACE FUNCTION outbox_claim(p_limit integer, p_lease_seconds double precision)
  RETURNS TABLE (kind text, subject_id text, org_id text, region text, attempts integer, restarts integer)
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$ SELECT * FROM outbox_claim(p_limit, p_lease_seconds, NULL, 0) $$;
