-- The outbox functions every workflow start calls (decision 0131): add in
-- the submitting transaction, claim and dispatched in the dispatcher,
-- retry when a start fails. As SQL functions with a SET clause PostgreSQL
-- cannot inline them and plans their statement again on every call; as
-- PL/pgSQL they keep the plan for the session. Same signatures, same
-- statements, same privileges.
CREATE OR REPLACE FUNCTION outbox_add(p_kind text, p_subject_id text, p_region text, p_again boolean) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    INSERT INTO workflow_outbox (kind, subject_id, org_id, region, restarts)
    VALUES (p_kind, p_subject_id, app_org_id(), p_region, CASE WHEN p_again THEN 1 ELSE 0 END)
    ON CONFLICT (kind, subject_id) DO UPDATE
       SET region = excluded.region, next_attempt_at = now(), attempts = 0, last_error = '',
           dispatched_at = NULL, checked_at = NULL, restarts = workflow_outbox.restarts + 1
     WHERE p_again AND workflow_outbox.org_id = excluded.org_id;
    PERFORM pg_notify('assessd_outbox', '');
  END
  $$;

-- The output columns share their names with the table's, so column
-- references mean the table's.
CREATE OR REPLACE FUNCTION outbox_claim(p_limit integer, p_lease_seconds double precision, p_region text, p_grace_seconds double precision)
  RETURNS TABLE (kind text, subject_id text, org_id text, region text, attempts integer, restarts integer)
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
    RETURNING o.kind, o.subject_id, o.org_id, o.region, o.attempts, o.restarts;
  END
  $$;

CREATE OR REPLACE FUNCTION outbox_dispatched(p_kind text, p_subject_id text) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    UPDATE workflow_outbox SET dispatched_at = now(), checked_at = NULL, last_error = ''
     WHERE kind = p_kind AND subject_id = p_subject_id AND dispatched_at IS NULL;
  END
  $$;

CREATE OR REPLACE FUNCTION outbox_retry(p_kind text, p_subject_id text, p_error text, p_delay_seconds double precision) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    UPDATE workflow_outbox SET next_attempt_at = now() + make_interval(secs => p_delay_seconds), last_error = left(p_error, 500)
     WHERE kind = p_kind AND subject_id = p_subject_id AND dispatched_at IS NULL;
  END
  $$;
