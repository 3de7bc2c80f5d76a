-- AI grading: the region a result was routed to at submission (its
-- organization's aiRegion then), and the grading details of each answer
-- (rationale, region, files attached and skipped with the reason).
ALTER TABLE results ADD COLUMN region text NOT NULL DEFAULT 'global' CHECK (region IN ('global', 'eu'));
ALTER TABLE result_answers ADD COLUMN grading jsonb;

-- AI exam generation requests and their outcome.
CREATE TABLE exam_generations (
  id           text PRIMARY KEY,
  org_id       text NOT NULL REFERENCES orgs (id),
  requested_by text NOT NULL,
  region       text NOT NULL CHECK (region IN ('global', 'eu')),
  status       text NOT NULL CHECK (status IN ('running', 'ready', 'failed')),
  params       jsonb NOT NULL,
  exam_id      text REFERENCES exams (id) ON DELETE SET NULL,
  error        text NOT NULL DEFAULT '',
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX exam_generations_org ON exam_generations (org_id, id);
ALTER TABLE exam_generations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON exam_generations USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
GRANT SELECT, INSERT, UPDATE ON exam_generations TO assessd_app;
