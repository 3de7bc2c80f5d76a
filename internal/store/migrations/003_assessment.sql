-- Assessment content: folders, exams, question type definitions, questions,
-- results and their answers.
--
-- Same isolation pattern as 001: every table has org_id, a tenant policy on
-- app_org_id(), and grants to assessd_app, which owns nothing. The single
-- exception is question_types: a definition its owner marked public is
-- readable (SELECT only) by every organization, because sharing it is what
-- `public` means (decision 0021).

CREATE TABLE folders (
  id          text PRIMARY KEY,
  org_id      text NOT NULL REFERENCES orgs (id),
  parent_id   text REFERENCES folders (id),
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX folders_org_id ON folders (org_id, id);
CREATE INDEX folders_parent ON folders (org_id, parent_id);

CREATE TABLE exams (
  id                text PRIMARY KEY,
  org_id            text NOT NULL REFERENCES orgs (id),
  folder_id         text REFERENCES folders (id),
  name              text NOT NULL,
  description       text NOT NULL DEFAULT '',
  language          text NOT NULL,
  duration_minutes  integer CHECK (duration_minutes > 0),
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX exams_org_id ON exams (org_id, id);
CREATE INDEX exams_folder ON exams (org_id, folder_id, id);

CREATE TABLE question_types (
  id               text PRIMARY KEY,
  org_id           text NOT NULL REFERENCES orgs (id),
  key              text NOT NULL,
  name             text NOT NULL,
  description      text NOT NULL DEFAULT '',
  config_schema    jsonb NOT NULL,
  condition        text NOT NULL DEFAULT '',
  grading_enabled  boolean NOT NULL DEFAULT false,
  file_inputs      text NOT NULL DEFAULT '',
  public           boolean NOT NULL DEFAULT false,
  deprecated       boolean NOT NULL DEFAULT false,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX question_types_org_key ON question_types (org_id, key);
CREATE INDEX question_types_public ON question_types (id) WHERE public AND NOT deprecated;

-- An organization's enablement of another organization's public type.
CREATE TABLE question_type_enablements (
  org_id      text NOT NULL REFERENCES orgs (id),
  type_id     text NOT NULL REFERENCES question_types (id),
  enabled_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, type_id)
);

CREATE TABLE questions (
  id          text PRIMARY KEY,
  org_id      text NOT NULL REFERENCES orgs (id),
  exam_id     text NOT NULL REFERENCES exams (id) ON DELETE CASCADE,
  position    integer NOT NULL,
  -- Exactly one of builtin_type (a built-in key) and type_id is set.
  builtin_type text,
  type_id     text REFERENCES question_types (id),
  prompt      text NOT NULL,
  config      jsonb NOT NULL DEFAULT '{}',
  points      double precision NOT NULL CHECK (points > 0),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  CHECK ((builtin_type IS NULL) <> (type_id IS NULL)),
  -- Deferred so a reorder can permute positions in one transaction.
  UNIQUE (exam_id, position) DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX questions_org_exam ON questions (org_id, exam_id, position);

CREATE TABLE results (
  id            text PRIMARY KEY,
  org_id        text NOT NULL REFERENCES orgs (id),
  exam_id       text NOT NULL REFERENCES exams (id) ON DELETE CASCADE,
  user_id       text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  status        text NOT NULL CHECK (status IN ('grading', 'graded', 'failed')),
  score         double precision NOT NULL DEFAULT 0,
  max_score     double precision NOT NULL,
  reason        text NOT NULL DEFAULT '',
  submitted_at  timestamptz NOT NULL DEFAULT now(),
  graded_at     timestamptz
);
CREATE INDEX results_org_exam ON results (org_id, exam_id, id);
-- Covers the summary's scan of one exam's graded scores.
CREATE INDEX results_exam_graded ON results (org_id, exam_id) INCLUDE (score, max_score) WHERE status = 'graded';

-- One row per question of the exam at submission time, answered or not. An
-- answer is keyed by (result_id, question_id), so a grading workflow writes
-- its score back with a conditional UPDATE that is idempotent.
CREATE TABLE result_answers (
  result_id    text NOT NULL REFERENCES results (id) ON DELETE CASCADE,
  question_id  text NOT NULL,
  org_id       text NOT NULL REFERENCES orgs (id),
  exam_id      text NOT NULL,
  position     integer NOT NULL,
  value        jsonb,
  files        jsonb NOT NULL DEFAULT '[]',
  status       text NOT NULL CHECK (status IN ('pending', 'graded', 'failed')),
  score        double precision NOT NULL DEFAULT 0,
  max_score    double precision NOT NULL,
  feedback     text NOT NULL DEFAULT '',
  graded_at    timestamptz,
  PRIMARY KEY (result_id, question_id)
);
CREATE INDEX result_answers_question ON result_answers (org_id, exam_id, question_id) INCLUDE (score, max_score, status, result_id);

ALTER TABLE folders ENABLE ROW LEVEL SECURITY;
ALTER TABLE exams ENABLE ROW LEVEL SECURITY;
ALTER TABLE question_types ENABLE ROW LEVEL SECURITY;
ALTER TABLE question_type_enablements ENABLE ROW LEVEL SECURITY;
ALTER TABLE questions ENABLE ROW LEVEL SECURITY;
ALTER TABLE results ENABLE ROW LEVEL SECURITY;
ALTER TABLE result_answers ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant ON folders USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON exams USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON question_types USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
-- Public definitions are shared by design; SELECT only, so no other
-- organization can change or delete them.
CREATE POLICY shared ON question_types FOR SELECT USING (public);
CREATE POLICY tenant ON question_type_enablements USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON questions USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON results USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON result_answers USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());

GRANT SELECT, INSERT, UPDATE, DELETE ON folders, exams, questions, results, result_answers,
  question_type_enablements TO assessd_app;
-- Definitions are never deleted: questions of other organizations may use them.
GRANT SELECT, INSERT, UPDATE ON question_types TO assessd_app;
