-- A subject can need its workflow again: a corrected answer of a graded
-- result is graded again (decision 0086). outbox_add writes the subject's
-- row in the caller's transaction, as the plain INSERT did. With p_again
-- the request counts as a restart, so the dispatcher runs the workflow anew
-- even though its last run completed, and a row still there (dispatched,
-- not yet pruned) is armed again instead of left alone. It runs as the
-- owner, so the application role still cannot read the outbox; it touches
-- only rows of the caller's organization.
CREATE FUNCTION outbox_add(p_kind text, p_subject_id text, p_region text, p_again boolean) RETURNS void
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    INSERT INTO workflow_outbox (kind, subject_id, org_id, region, restarts)
    VALUES (p_kind, p_subject_id, app_org_id(), p_region, CASE WHEN p_again THEN 1 ELSE 0 END)
    ON CONFLICT (kind, subject_id) DO UPDATE
       SET region = excluded.region, next_attempt_at = now(), attempts = 0, last_error = '',
           dispatched_at = NULL, checked_at = NULL, restarts = workflow_outbox.restarts + 1
     WHERE p_again AND workflow_outbox.org_id = excluded.org_id;
    SELECT pg_notify('assessd_outbox', '');
  $$;
REVOKE ALL ON FUNCTION outbox_add(text, text, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_add(text, text, text, boolean) TO assessd_app;
