-- Answer-sheet scanning (decision 0085): a scan of an exam's printed sheets,
-- its uploaded files (PostgreSQL holds the bytes: uploads are few and at
-- most 20 MiB each), the pages they split into with what was read from each,
-- and where results came from.
ALTER TABLE results ADD COLUMN source text NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'scan'));
-- A scanned answer a person should look at (a blank or doubtful row, a
-- written box the vision model was unsure of), until a teacher corrects it.
ALTER TABLE result_answers ADD COLUMN needs_review boolean NOT NULL DEFAULT false;

CREATE TABLE answer_sheet_scans (
  id           text PRIMARY KEY,
  org_id       text NOT NULL REFERENCES orgs (id),
  exam_id      text NOT NULL REFERENCES exams (id) ON DELETE CASCADE,
  requested_by text NOT NULL,
  region       text NOT NULL CHECK (region IN ('global', 'eu')),
  status       text NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
  error        text NOT NULL DEFAULT '',
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX answer_sheet_scans_org ON answer_sheet_scans (org_id, id);

-- One row per file: a media-CDN URL the worker fetches, or uploaded bytes.
-- The bytes are dropped once the file is split into pages.
CREATE TABLE answer_sheet_scan_files (
  scan_id    text NOT NULL REFERENCES answer_sheet_scans (id) ON DELETE CASCADE,
  position   integer NOT NULL,
  org_id     text NOT NULL REFERENCES orgs (id),
  url        text NOT NULL DEFAULT '',
  content    bytea,
  split      boolean NOT NULL DEFAULT false,
  error_code text NOT NULL DEFAULT '',
  error      text NOT NULL DEFAULT '',
  PRIMARY KEY (scan_id, position)
);

-- One row per page of the scan, numbered across its files. image holds the
-- page (an uploaded PNG or JPEG as it came, a PDF page as PNG) until it is
-- read (then dropped); reading fills user_id, sheet_page and answers, or
-- error_code and error.
CREATE TABLE answer_sheet_scan_pages (
  scan_id     text NOT NULL REFERENCES answer_sheet_scans (id) ON DELETE CASCADE,
  page        integer NOT NULL,
  org_id      text NOT NULL REFERENCES orgs (id),
  file        integer NOT NULL,
  file_page   integer NOT NULL,
  image       bytea,
  read        boolean NOT NULL DEFAULT false,
  user_id     text NOT NULL DEFAULT '',
  sheet_page  integer NOT NULL DEFAULT 0,
  answers     jsonb NOT NULL DEFAULT '[]',
  error_code  text NOT NULL DEFAULT '',
  error       text NOT NULL DEFAULT '',
  result_id   text REFERENCES results (id) ON DELETE SET NULL,
  PRIMARY KEY (scan_id, page)
);

ALTER TABLE answer_sheet_scans ENABLE ROW LEVEL SECURITY;
ALTER TABLE answer_sheet_scan_files ENABLE ROW LEVEL SECURITY;
ALTER TABLE answer_sheet_scan_pages ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON answer_sheet_scans USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON answer_sheet_scan_files USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON answer_sheet_scan_pages USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
GRANT SELECT, INSERT, UPDATE ON answer_sheet_scans, answer_sheet_scan_files, answer_sheet_scan_pages TO assessd_app;

-- The outbox carries scans (decision 0045); a scan is unfinished while
-- running. Migration 006 made outbox_subject_unfinished the one place that
-- knows each kind; every kind a migration adds is listed here again.
ALTER TABLE workflow_outbox DROP CONSTRAINT workflow_outbox_kind_check;
ALTER TABLE workflow_outbox ADD CONSTRAINT workflow_outbox_kind_check
  CHECK (kind IN ('grading', 'generation', 'regeneration', 'scanning'));

CREATE OR REPLACE FUNCTION outbox_subject_unfinished(p_kind text, p_subject_id text) RETURNS boolean
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT CASE p_kind
             WHEN 'grading' THEN EXISTS (SELECT 1 FROM results r WHERE r.id = p_subject_id AND r.status = 'grading')
             WHEN 'generation' THEN EXISTS (SELECT 1 FROM exam_generations g WHERE g.id = p_subject_id AND g.status = 'running')
             WHEN 'regeneration' THEN EXISTS (SELECT 1 FROM question_regenerations g WHERE g.id = p_subject_id AND g.status = 'running')
             WHEN 'scanning' THEN EXISTS (SELECT 1 FROM answer_sheet_scans s WHERE s.id = p_subject_id AND s.status = 'running')
           END
  $$;
