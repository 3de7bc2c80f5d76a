-- A workflow kind is declared once, in Go (decision 0198): its route says
-- when its subject is finished (workflows.Route.Unfinished, the feature's
-- own query under row-level security), and outbox.Add refuses a kind that
-- is none of outbox.Kinds. The outbox's SQL no longer lists kinds: the check that
-- migrations 006, 007, 009 and 037 rewrote for each new kind goes, and so
-- does outbox_subject_unfinished, the CASE per kind that the reconciler's
-- two functions asked. The reconciler now reads the rows it would check
-- (outbox_unchecked), asks each kind's route which subjects are
-- unfinished, and deletes the rows of the finished ones (outbox_forget).
-- The previous release's reconciler calls the dropped functions: during a
-- rolling upgrade it logs its failures until it is replaced; its
-- dispatching is untouched.
ALTER TABLE workflow_outbox DROP CONSTRAINT workflow_outbox_kind_check;

DROP FUNCTION outbox_unfinished(double precision, integer, text[], double precision);
DROP FUNCTION outbox_prune();
DROP FUNCTION outbox_subject_unfinished(text, text);

-- outbox_unchecked is what outbox_unfinished (migration 037) was without
-- the subjects' check: the dispatched rows nobody checked for their
-- quiet, the sleeping kinds' after the others, with when they were
-- dispatched for outbox_forget.
CREATE FUNCTION outbox_unchecked(p_quiet_seconds double precision, p_limit integer,
                                 p_sleepers text[], p_sleeper_quiet_seconds double precision)
  RETURNS TABLE (kind text, subject_id text, org_id text, region text, attempts integer, restarts integer,
                 dispatched_at timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT o.kind, o.subject_id, o.org_id, o.region, o.attempts, o.restarts, o.dispatched_at
      FROM workflow_outbox o
     WHERE o.dispatched_at IS NOT NULL
       AND greatest(o.dispatched_at, o.checked_at) < now() - make_interval(secs =>
             CASE WHEN o.kind = ANY(p_sleepers) THEN p_sleeper_quiet_seconds ELSE p_quiet_seconds END)
     ORDER BY o.kind = ANY(p_sleepers), greatest(o.dispatched_at, o.checked_at) LIMIT p_limit
  $$;

-- outbox_forget deletes the rows whose subjects the reconciler found
-- finished, as outbox_prune did. A row is deleted only if it is still
-- dispatched when it was read: one re-armed (outbox_add's p_again, a
-- result graded again) or dispatched anew meanwhile has work to start.
CREATE FUNCTION outbox_forget(p_kinds text[], p_subject_ids text[], p_dispatched timestamptz[]) RETURNS void
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    DELETE FROM workflow_outbox o
      USING unnest(p_kinds, p_subject_ids, p_dispatched) AS f(kind, subject_id, dispatched_at)
     WHERE o.kind = f.kind AND o.subject_id = f.subject_id AND o.dispatched_at = f.dispatched_at
  $$;

REVOKE ALL ON FUNCTION outbox_unchecked(double precision, integer, text[], double precision),
  outbox_forget(text[], text[], timestamptz[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_unchecked(double precision, integer, text[], double precision),
  outbox_forget(text[], text[], timestamptz[]) TO assessd_app;
