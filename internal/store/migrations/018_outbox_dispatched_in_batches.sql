-- A dispatcher records the rows of a claimed batch whose workflow started
-- in one call once the batch's starts are done (decision 0136), instead of
-- one call, one statement and one commit per row. The one-row function of
-- 014 stays for the processes of the previous release during a rolling
-- deploy.
CREATE FUNCTION outbox_dispatched(p_kinds text[], p_subject_ids text[]) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    UPDATE workflow_outbox o SET dispatched_at = now(), checked_at = NULL, last_error = ''
      FROM unnest(p_kinds, p_subject_ids) AS d(kind, subject_id)
     WHERE o.kind = d.kind AND o.subject_id = d.subject_id AND o.dispatched_at IS NULL;
  END
  $$;
REVOKE ALL ON FUNCTION outbox_dispatched(text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_dispatched(text[], text[]) TO assessd_app;
