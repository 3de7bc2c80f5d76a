-- Question revisions and AI regeneration (decisions 0090, 0091).
--
-- A question's content (type, prompt, config, points) is versioned: every
-- create, edit and accepted regeneration appends a row to
-- question_revisions, and questions.revision names the current one. An
-- answer records the revision its student answered, so a result keeps
-- being read, graded and analysed against the question as it was.

ALTER TABLE questions ADD COLUMN revision integer NOT NULL DEFAULT 1 CHECK (revision > 0);

CREATE TABLE question_revisions (
  question_id     text NOT NULL REFERENCES questions (id) ON DELETE CASCADE,
  revision        integer NOT NULL CHECK (revision > 0),
  org_id          text NOT NULL REFERENCES orgs (id),
  exam_id         text NOT NULL,
  builtin_type    text,
  type_id         text REFERENCES question_types (id),
  prompt          text NOT NULL,
  config          jsonb NOT NULL,
  points          double precision NOT NULL CHECK (points > 0),
  -- created, edited or regenerated; regeneration_id names the accepted
  -- regeneration.
  source          text NOT NULL CHECK (source IN ('created', 'edited', 'regenerated')),
  regeneration_id text,
  created_by      text NOT NULL DEFAULT '',
  created_at      timestamptz NOT NULL DEFAULT now(),
  CHECK ((builtin_type IS NULL) <> (type_id IS NULL)),
  PRIMARY KEY (question_id, revision)
);
CREATE INDEX question_revisions_org ON question_revisions (org_id, question_id, revision DESC);

-- Every existing question is its own first revision.
INSERT INTO question_revisions (question_id, revision, org_id, exam_id, builtin_type, type_id, prompt, config, points, source, created_at)
  SELECT id, 1, org_id, exam_id, builtin_type, type_id, prompt, config, points, 'created', created_at FROM questions;

-- The revision an answer was given to; answers submitted before revisions
-- existed answered revision 1, the only one there was.
ALTER TABLE result_answers ADD COLUMN question_revision integer NOT NULL DEFAULT 1;

-- AI proposals of a question's next revision.
CREATE TABLE question_regenerations (
  id                text PRIMARY KEY,
  org_id            text NOT NULL REFERENCES orgs (id),
  exam_id           text NOT NULL,
  question_id       text NOT NULL REFERENCES questions (id) ON DELETE CASCADE,
  -- The revision the proposal was made from: accepting is refused once the
  -- question moved on.
  base_revision     integer NOT NULL,
  requested_by      text NOT NULL,
  region            text NOT NULL CHECK (region IN ('global', 'eu')),
  status            text NOT NULL CHECK (status IN ('running', 'ready', 'failed')),
  instructions      text NOT NULL DEFAULT '',
  proposal          jsonb,
  error             text NOT NULL DEFAULT '',
  accepted_revision integer,
  accepted_at       timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX question_regenerations_org ON question_regenerations (org_id, id);

ALTER TABLE question_revisions ENABLE ROW LEVEL SECURITY;
ALTER TABLE question_regenerations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON question_revisions USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON question_regenerations USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
-- Revisions are history: appended, never changed.
GRANT SELECT, INSERT ON question_revisions TO assessd_app;
GRANT SELECT, INSERT, UPDATE ON question_regenerations TO assessd_app;

-- The outbox carries regenerations too (decision 0045): a regeneration is
-- unfinished while running.
ALTER TABLE workflow_outbox DROP CONSTRAINT workflow_outbox_kind_check;
ALTER TABLE workflow_outbox ADD CONSTRAINT workflow_outbox_kind_check CHECK (kind IN ('grading', 'generation', 'regeneration'));

CREATE FUNCTION outbox_subject_unfinished(p_kind text, p_subject_id text) RETURNS boolean
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT CASE p_kind
             WHEN 'grading' THEN EXISTS (SELECT 1 FROM results r WHERE r.id = p_subject_id AND r.status = 'grading')
             WHEN 'generation' THEN EXISTS (SELECT 1 FROM exam_generations g WHERE g.id = p_subject_id AND g.status = 'running')
             WHEN 'regeneration' THEN EXISTS (SELECT 1 FROM question_regenerations g WHERE g.id = p_subject_id AND g.status = 'running')
           END
  $$;
REVOKE ALL ON FUNCTION outbox_subject_unfinished(text, text) FROM PUBLIC;

-- The reconciler's two functions now ask outbox_subject_unfinished, the one
-- place that knows when each kind's subject is finished.
CREATE OR REPLACE FUNCTION outbox_unfinished(p_quiet_seconds double precision, p_limit integer)
  RETURNS TABLE (kind text, subject_id text, org_id text, region text, attempts integer, restarts integer)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT o.kind, o.subject_id, o.org_id, o.region, o.attempts, o.restarts
      FROM workflow_outbox o
     WHERE o.dispatched_at IS NOT NULL
       AND greatest(o.dispatched_at, o.checked_at) < now() - make_interval(secs => p_quiet_seconds)
       AND outbox_subject_unfinished(o.kind, o.subject_id)
     ORDER BY greatest(o.dispatched_at, o.checked_at) LIMIT p_limit
  $$;

CREATE OR REPLACE FUNCTION outbox_prune() RETURNS bigint
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    WITH gone AS (
      DELETE FROM workflow_outbox o
       WHERE o.dispatched_at IS NOT NULL AND NOT outbox_subject_unfinished(o.kind, o.subject_id)
      RETURNING 1)
    SELECT count(*) FROM gone
  $$;
