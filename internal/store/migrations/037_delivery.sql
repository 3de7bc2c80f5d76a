-- Test delivery (issue 55): an assignment gives one exam to classes and
-- users in a window; an accommodation adjusts it for one student; an
-- attempt is one student taking the exam, each save a committed row with a
-- revision. The deadline is the server's: computed at start, kept with the
-- attempt, enforced by the API (saves after deadline + grace are refused)
-- and by a Temporal timer per attempt, started through the outbox.
CREATE TABLE assignments (
  id                 text PRIMARY KEY,
  org_id             text NOT NULL REFERENCES orgs (id),
  exam_id            text NOT NULL REFERENCES exams (id) ON DELETE CASCADE,
  opens_at           timestamptz NOT NULL,
  closes_at          timestamptz NOT NULL CHECK (closes_at > opens_at),
  -- 0: no limit of its own, the attempt runs until the close.
  time_limit_minutes integer NOT NULL CHECK (time_limit_minutes BETWEEN 0 AND 10080),
  max_attempts       integer NOT NULL CHECK (max_attempts BETWEEN 1 AND 100),
  shuffle_questions  boolean NOT NULL DEFAULT false,
  shuffle_options    boolean NOT NULL DEFAULT false,
  grace_seconds      integer NOT NULL CHECK (grace_seconds BETWEEN 0 AND 3600),
  overdue            text NOT NULL CHECK (overdue IN ('autosubmit', 'discard')),
  show_results       text NOT NULL CHECK (show_results IN ('never', 'after_submit', 'after_close')),
  created_by         text NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX assignments_org ON assignments (org_id, id);
CREATE INDEX assignments_exam ON assignments (exam_id);

-- Who is assigned: whole classes (their students, as the roster is when a
-- student starts) and single users.
CREATE TABLE assignment_classes (
  assignment_id text NOT NULL REFERENCES assignments (id) ON DELETE CASCADE,
  class_id      text NOT NULL REFERENCES classes (id) ON DELETE CASCADE,
  org_id        text NOT NULL REFERENCES orgs (id),
  PRIMARY KEY (assignment_id, class_id)
);
CREATE INDEX assignment_classes_class ON assignment_classes (class_id, assignment_id);

CREATE TABLE assignment_users (
  assignment_id text NOT NULL REFERENCES assignments (id) ON DELETE CASCADE,
  user_id       text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  org_id        text NOT NULL REFERENCES orgs (id),
  PRIMARY KEY (assignment_id, user_id)
);
CREATE INDEX assignment_users_user ON assignment_users (user_id, assignment_id);

-- One student's overrides of an assignment.
CREATE TABLE accommodations (
  assignment_id      text NOT NULL REFERENCES assignments (id) ON DELETE CASCADE,
  user_id            text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  org_id             text NOT NULL REFERENCES orgs (id),
  extra_time_percent integer NOT NULL DEFAULT 0 CHECK (extra_time_percent BETWEEN 0 AND 1000),
  extra_minutes      integer NOT NULL DEFAULT 0 CHECK (extra_minutes BETWEEN 0 AND 10080),
  closes_at          timestamptz,
  max_attempts       integer CHECK (max_attempts BETWEEN 1 AND 100),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (assignment_id, user_id)
);
CREATE INDEX accommodations_user ON accommodations (user_id);

CREATE TABLE attempts (
  id            text PRIMARY KEY,
  org_id        text NOT NULL REFERENCES orgs (id),
  assignment_id text NOT NULL REFERENCES assignments (id) ON DELETE CASCADE,
  exam_id       text NOT NULL,
  user_id       text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  -- 1 for a student's first attempt of the assignment, 2 for the second...
  number        integer NOT NULL CHECK (number >= 1),
  status        text NOT NULL CHECK (status IN ('in_progress', 'submitted', 'discarded')),
  -- The question and option order of the attempt derive from the seed and
  -- the questions as they were at start, kept in question_ids.
  seed          bigint NOT NULL,
  question_ids  text[] NOT NULL,
  shuffle_options boolean NOT NULL,
  started_at    timestamptz NOT NULL DEFAULT now(),
  deadline      timestamptz NOT NULL,
  -- The assignment's grace and overdue policy when the attempt started:
  -- an edit of the assignment never shortens a running attempt.
  grace_seconds integer NOT NULL,
  overdue       text NOT NULL CHECK (overdue IN ('autosubmit', 'discard')),
  region        text NOT NULL CHECK (region IN ('global', 'eu')),
  started_by    text NOT NULL,
  submitted_at  timestamptz,
  submitted_by  text CHECK (submitted_by IN ('student', 'staff', 'system')),
  result_id     text,
  updated_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (assignment_id, user_id, number)
);
-- A student has at most one attempt in progress per assignment: two tabs
-- starting at once make one attempt.
CREATE UNIQUE INDEX attempts_one_in_progress ON attempts (assignment_id, user_id) WHERE status = 'in_progress';
CREATE INDEX attempts_org ON attempts (org_id, id);
CREATE INDEX attempts_user ON attempts (user_id);
CREATE INDEX attempts_assignment ON attempts (assignment_id, id);

-- The latest save of each question of an attempt. revision counts the
-- attempt's saves of that question; saved_at is the server's clock.
CREATE TABLE attempt_responses (
  attempt_id  text NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
  question_id text NOT NULL,
  org_id      text NOT NULL REFERENCES orgs (id),
  value       jsonb,
  files       jsonb NOT NULL DEFAULT '[]',
  revision    integer NOT NULL CHECK (revision >= 1),
  saved_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (attempt_id, question_id)
);

-- A result made by submitting an attempt names it.
ALTER TABLE results ADD COLUMN attempt_id text REFERENCES attempts (id) ON DELETE SET NULL;
ALTER TABLE results ADD COLUMN assignment_id text;
ALTER TABLE results DROP CONSTRAINT results_source_check;
ALTER TABLE results ADD CONSTRAINT results_source_check CHECK (source IN ('api', 'scan', 'attempt'));
CREATE UNIQUE INDEX results_attempt ON results (attempt_id) WHERE attempt_id IS NOT NULL;

-- The deadline of an attempt of p_user_id started at p_started_at, under
-- the assignment's and the student's accommodation's terms as they are now:
-- start + time limit (with extra time), never past the close (the later of
-- the assignment's and the accommodation's). The one statement of the rule,
-- used at start and when the terms change (running attempts are then
-- extended to it, never shortened).
CREATE FUNCTION attempt_deadline(p_assignment_id text, p_user_id text, p_started_at timestamptz) RETURNS timestamptz
  LANGUAGE sql STABLE
  AS $$
    SELECT CASE WHEN a.time_limit_minutes > 0
                THEN least(greatest(a.closes_at, coalesce(c.closes_at, a.closes_at)),
                           p_started_at + make_interval(secs => (a.time_limit_minutes * (100 + coalesce(c.extra_time_percent, 0)) / 100.0
                                                                 + coalesce(c.extra_minutes, 0)) * 60))
                ELSE greatest(a.closes_at, coalesce(c.closes_at, a.closes_at)) END
      FROM assignments a LEFT JOIN accommodations c ON c.assignment_id = a.id AND c.user_id = p_user_id
     WHERE a.id = p_assignment_id
  $$;

-- Whether a student may see the result of an attempt of p_assignment_id
-- now (showResults); results of deleted assignments and of no assignment
-- are shown.
CREATE FUNCTION assignment_results_shown(p_assignment_id text) RETURNS boolean
  LANGUAGE sql STABLE
  AS $$
    SELECT p_assignment_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM assignments a
       WHERE a.id = p_assignment_id
         AND (a.show_results = 'never' OR (a.show_results = 'after_close' AND now() < a.closes_at)))
  $$;

ALTER TABLE assignments ENABLE ROW LEVEL SECURITY;
ALTER TABLE assignment_classes ENABLE ROW LEVEL SECURITY;
ALTER TABLE assignment_users ENABLE ROW LEVEL SECURITY;
ALTER TABLE accommodations ENABLE ROW LEVEL SECURITY;
ALTER TABLE attempts ENABLE ROW LEVEL SECURITY;
ALTER TABLE attempt_responses ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON assignments USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON assignment_classes USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON assignment_users USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON accommodations USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON attempts USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON attempt_responses USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
GRANT SELECT, INSERT, UPDATE, DELETE ON assignments, assignment_classes, assignment_users, accommodations,
  attempts, attempt_responses TO assessd_app;

-- The outbox carries attempts: the attempt's deadline workflow runs while
-- it is in progress.
ALTER TABLE workflow_outbox DROP CONSTRAINT workflow_outbox_kind_check;
ALTER TABLE workflow_outbox ADD CONSTRAINT workflow_outbox_kind_check
  CHECK (kind IN ('grading', 'generation', 'regeneration', 'scanning', 'webhook', 'attempt'));

CREATE OR REPLACE FUNCTION outbox_subject_unfinished(p_kind text, p_subject_id text) RETURNS boolean
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT CASE p_kind
             WHEN 'grading' THEN EXISTS (SELECT 1 FROM results r WHERE r.id = p_subject_id AND r.status = 'grading')
             WHEN 'generation' THEN EXISTS (SELECT 1 FROM exam_generations g WHERE g.id = p_subject_id AND g.status = 'running')
             WHEN 'regeneration' THEN EXISTS (SELECT 1 FROM question_regenerations g WHERE g.id = p_subject_id AND g.status = 'running')
             WHEN 'scanning' THEN EXISTS (SELECT 1 FROM answer_sheet_scans s WHERE s.id = p_subject_id AND s.status = 'running')
             WHEN 'webhook' THEN EXISTS (SELECT 1 FROM webhook_targets t WHERE t.event_id = p_subject_id AND t.status = 'pending')
             WHEN 'attempt' THEN EXISTS (SELECT 1 FROM attempts a WHERE a.id = p_subject_id AND a.status = 'in_progress')
           END
  $$;

-- A file an attempt's response names is attached, as one a result's answer
-- names (migration 028): the sweep of unnamed uploads leaves it, however
-- long the attempt runs. answer_files_attach reads NEW.files and
-- NEW.org_id, which attempt_responses has too.
CREATE TRIGGER attempt_response_files_attached AFTER INSERT OR UPDATE OF files ON attempt_responses
  FOR EACH ROW WHEN (NEW.files <> '[]'::jsonb) EXECUTE FUNCTION answer_files_attach();

-- An attempt's deadline workflow sleeps for the whole attempt, so its row
-- stays dispatched and unfinished for hours, thousands at once on exam day.
-- The reconciler names such sleeping kinds (workflows.Route.Sleeps) and
-- looks at their rows less often (p_sleeper_quiet_seconds) and after every
-- other kind's: a lost grading workflow is not queued behind an exam's
-- timers.
DROP FUNCTION outbox_unfinished(double precision, integer);
CREATE FUNCTION outbox_unfinished(p_quiet_seconds double precision, p_limit integer,
                                  p_sleepers text[], p_sleeper_quiet_seconds double precision)
  RETURNS TABLE (kind text, subject_id text, org_id text, region text, attempts integer, restarts integer)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT o.kind, o.subject_id, o.org_id, o.region, o.attempts, o.restarts
      FROM workflow_outbox o
     WHERE o.dispatched_at IS NOT NULL
       AND greatest(o.dispatched_at, o.checked_at) < now() - make_interval(secs =>
             CASE WHEN o.kind = ANY(p_sleepers) THEN p_sleeper_quiet_seconds ELSE p_quiet_seconds END)
       AND outbox_subject_unfinished(o.kind, o.subject_id)
     ORDER BY o.kind = ANY(p_sleepers), greatest(o.dispatched_at, o.checked_at) LIMIT p_limit
  $$;
