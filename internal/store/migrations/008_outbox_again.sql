-- A subject can need its workflow again: a corrected answer of a graded
-- result is graded again (decision 0086). outbox_add writes the subject's
-- row in the caller's transaction, as the plain INSERT did, and when the
-- old row is still there (dispatched, not yet pruned) arms it again instead
-- of doing nothing. It runs as the owner, so the application role still
-- cannot read the outbox; it touches only rows of the caller's organization.
CREATE FUNCTION outbox_add(p_kind text, p_subject_id text, p_region text) RETURNS void
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    INSERT INTO workflow_outbox (kind, subject_id, org_id, region)
    VALUES (p_kind, p_subject_id, app_org_id(), p_region)
    ON CONFLICT (kind, subject_id) DO UPDATE
       SET region = excluded.region, next_attempt_at = now(), attempts = 0, last_error = '',
           dispatched_at = NULL, checked_at = NULL, restarts = 0
     WHERE workflow_outbox.org_id = excluded.org_id;
    SELECT pg_notify('assessd_outbox', '');
  $$;
REVOKE ALL ON FUNCTION outbox_add(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_add(text, text, text) TO assessd_app;
