-- The workflow outbox (decision 0045): a row per result to grade and per exam
-- generation, written in the same transaction as the result or the
-- generation, so a workflow start can never be lost between commit and
-- Temporal. The dispatcher turns pending rows into workflow starts; the
-- reconciler re-arms rows whose workflow was lost or failed.
--
-- The application writes its rows inside the tenant's transaction (row-level
-- security as everywhere). The dispatcher works for every tenant at once, so
-- it reaches the table only through the narrow SECURITY DEFINER functions
-- below; the application role can neither read nor change other tenants'
-- rows directly.
CREATE TABLE workflow_outbox (
  kind            text NOT NULL CHECK (kind IN ('grading', 'generation')),
  subject_id      text NOT NULL,
  org_id          text NOT NULL REFERENCES orgs (id),
  region          text NOT NULL CHECK (region IN ('global', 'eu')),
  created_at      timestamptz NOT NULL DEFAULT now(),
  -- Pending while dispatched_at is null: due at next_attempt_at (also the
  -- lease of a dispatcher working on the row).
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  attempts        integer NOT NULL DEFAULT 0,
  last_error      text NOT NULL DEFAULT '',
  dispatched_at   timestamptz,
  -- When the reconciler last found the workflow alive, and how often it
  -- had to start it again.
  checked_at      timestamptz,
  restarts        integer NOT NULL DEFAULT 0,
  PRIMARY KEY (kind, subject_id)
);
CREATE INDEX workflow_outbox_pending ON workflow_outbox (next_attempt_at) WHERE dispatched_at IS NULL;
CREATE INDEX workflow_outbox_dispatched ON workflow_outbox (dispatched_at) WHERE dispatched_at IS NOT NULL;
ALTER TABLE workflow_outbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON workflow_outbox USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
GRANT INSERT ON workflow_outbox TO assessd_app;

-- Results and generations that were waiting for a workflow before the
-- outbox existed get their row, so the dispatcher starts (or joins) them.
INSERT INTO workflow_outbox (kind, subject_id, org_id, region)
  SELECT 'grading', id, org_id, region FROM results WHERE status = 'grading'
  UNION ALL
  SELECT 'generation', id, org_id, region FROM exam_generations WHERE status = 'running';

-- outbox_claim leases up to p_limit due rows to the calling dispatcher for
-- p_lease_seconds: other dispatchers skip locked rows and leased ones.
CREATE FUNCTION outbox_claim(p_limit integer, p_lease_seconds double precision)
  RETURNS TABLE (kind text, subject_id text, org_id text, region text, attempts integer, restarts integer)
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    UPDATE workflow_outbox o
       SET next_attempt_at = now() + make_interval(secs => p_lease_seconds), attempts = o.attempts + 1
      FROM (SELECT w.kind, w.subject_id FROM workflow_outbox w
             WHERE w.dispatched_at IS NULL AND w.next_attempt_at <= now()
             ORDER BY w.next_attempt_at LIMIT p_limit
             FOR UPDATE SKIP LOCKED) due
     WHERE o.kind = due.kind AND o.subject_id = due.subject_id
    RETURNING o.kind, o.subject_id, o.org_id, o.region, o.attempts, o.restarts
  $$;

-- outbox_dispatched records that the row's workflow was started (or
-- joined).
CREATE FUNCTION outbox_dispatched(p_kind text, p_subject_id text) RETURNS void
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    UPDATE workflow_outbox SET dispatched_at = now(), checked_at = NULL, last_error = ''
     WHERE kind = p_kind AND subject_id = p_subject_id AND dispatched_at IS NULL
  $$;

-- outbox_retry puts a row back, due again after p_delay_seconds.
CREATE FUNCTION outbox_retry(p_kind text, p_subject_id text, p_error text, p_delay_seconds double precision) RETURNS void
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    UPDATE workflow_outbox SET next_attempt_at = now() + make_interval(secs => p_delay_seconds), last_error = left(p_error, 500)
     WHERE kind = p_kind AND subject_id = p_subject_id AND dispatched_at IS NULL
  $$;

-- outbox_backlog counts the pending rows by kind, with the age of the
-- oldest.
CREATE FUNCTION outbox_backlog()
  RETURNS TABLE (kind text, pending bigint, oldest_seconds double precision)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT kind, count(*), coalesce(extract(epoch FROM now() - min(created_at)), 0)::double precision
      FROM workflow_outbox WHERE dispatched_at IS NULL GROUP BY kind
  $$;

-- outbox_unfinished lists dispatched rows whose result is still grading or
-- whose generation is still running, and that nobody looked at for
-- p_quiet_seconds: the reconciler asks Temporal whether their workflow is
-- alive.
CREATE FUNCTION outbox_unfinished(p_quiet_seconds double precision, p_limit integer)
  RETURNS TABLE (kind text, subject_id text, org_id text, region text, attempts integer, restarts integer)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT o.kind, o.subject_id, o.org_id, o.region, o.attempts, o.restarts
      FROM workflow_outbox o
     WHERE o.dispatched_at IS NOT NULL
       AND greatest(o.dispatched_at, o.checked_at) < now() - make_interval(secs => p_quiet_seconds)
       AND CASE o.kind
             WHEN 'grading' THEN EXISTS (SELECT 1 FROM results r WHERE r.id = o.subject_id AND r.status = 'grading')
             WHEN 'generation' THEN EXISTS (SELECT 1 FROM exam_generations g WHERE g.id = o.subject_id AND g.status = 'running')
           END
     ORDER BY greatest(o.dispatched_at, o.checked_at) LIMIT p_limit
  $$;

-- outbox_checked notes that the row's workflow is alive.
CREATE FUNCTION outbox_checked(p_kind text, p_subject_id text) RETURNS void
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    UPDATE workflow_outbox SET checked_at = now() WHERE kind = p_kind AND subject_id = p_subject_id
  $$;

-- outbox_rearm makes a dispatched row pending again (its workflow was lost
-- or failed) and wakes the dispatchers.
CREATE FUNCTION outbox_rearm(p_kind text, p_subject_id text, p_reason text) RETURNS void
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    UPDATE workflow_outbox
       SET dispatched_at = NULL, checked_at = NULL, next_attempt_at = now(), attempts = 0,
           restarts = restarts + 1, last_error = left(p_reason, 500)
     WHERE kind = p_kind AND subject_id = p_subject_id AND dispatched_at IS NOT NULL;
    SELECT pg_notify('assessd_outbox', '');
  $$;

-- outbox_prune deletes dispatched rows whose result or generation is
-- finished: nothing is left to start for them.
CREATE FUNCTION outbox_prune() RETURNS bigint
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    WITH gone AS (
      DELETE FROM workflow_outbox o
       WHERE o.dispatched_at IS NOT NULL
         AND NOT CASE o.kind
               WHEN 'grading' THEN EXISTS (SELECT 1 FROM results r WHERE r.id = o.subject_id AND r.status = 'grading')
               WHEN 'generation' THEN EXISTS (SELECT 1 FROM exam_generations g WHERE g.id = o.subject_id AND g.status = 'running')
             END
      RETURNING 1)
    SELECT count(*) FROM gone
  $$;

REVOKE ALL ON FUNCTION outbox_claim(integer, double precision), outbox_dispatched(text, text),
  outbox_retry(text, text, text, double precision), outbox_backlog(), outbox_unfinished(double precision, integer),
  outbox_checked(text, text), outbox_rearm(text, text, text), outbox_prune() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_claim(integer, double precision), outbox_dispatched(text, text),
  outbox_retry(text, text, text, double precision), outbox_backlog(), outbox_unfinished(double precision, integer),
  outbox_checked(text, text), outbox_rearm(text, text, text), outbox_prune() TO assessd_app;
