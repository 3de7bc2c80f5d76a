-- LTI Assignment and Grade Services and Names and Role Provisioning
-- Services (issue 57, decision 0204): what a launch leaves for the tool to
-- post scores to and read rosters from.

-- A learner's launch of a link whose platform offered a line item: the
-- scores of their results of the assignment go there, named by their
-- subject on the platform. The latest launch of one assignment by one
-- user names the line item.
CREATE TABLE lti_grade_links (
  org_id        text NOT NULL REFERENCES orgs (id),
  assignment_id text NOT NULL REFERENCES assignments (id) ON DELETE CASCADE,
  user_id       text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  platform_id   text NOT NULL REFERENCES lti_platforms (id) ON DELETE CASCADE,
  lineitem_url  text NOT NULL,
  subject       text NOT NULL,
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, assignment_id, user_id)
);
CREATE INDEX IF NOT EXISTS lti_grade_links_platform ON lti_grade_links (platform_id);
-- A deleted assignment or user cascades here.
CREATE INDEX IF NOT EXISTS lti_grade_links_assignment ON lti_grade_links (assignment_id);
CREATE INDEX IF NOT EXISTS lti_grade_links_user ON lti_grade_links (user_id);

-- A result whose score a line item awaits: the outbox's lti_score subject.
-- Each grading of the result (its first, a correction) counts in wanted;
-- posted is the count the last post answered, so a grading is posted once
-- and a corrected score again. failed holds why a post was given up.
CREATE TABLE lti_scores (
  result_id    text PRIMARY KEY REFERENCES results (id) ON DELETE CASCADE,
  org_id       text NOT NULL REFERENCES orgs (id),
  platform_id  text NOT NULL REFERENCES lti_platforms (id) ON DELETE CASCADE,
  lineitem_url text NOT NULL,
  subject      text NOT NULL,
  wanted       integer NOT NULL DEFAULT 1,
  posted       integer NOT NULL DEFAULT 0,
  posted_at    timestamptz,
  failed       text NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS lti_scores_org ON lti_scores (org_id, result_id);
CREATE INDEX IF NOT EXISTS lti_scores_platform ON lti_scores (platform_id);

-- A context's roster is read from the memberships URL its launches gave,
-- with the token of the registration that launched it.
ALTER TABLE lti_contexts ADD COLUMN platform_id text REFERENCES lti_platforms (id) ON DELETE SET NULL;
ALTER TABLE lti_contexts ADD COLUMN memberships_url text NOT NULL DEFAULT '';
-- When the roster was last read: an instructor's launch reads it again
-- once it is older than the tool's interval.
ALTER TABLE lti_contexts ADD COLUMN synced_at timestamptz;
CREATE INDEX IF NOT EXISTS lti_contexts_platform ON lti_contexts (platform_id);
GRANT UPDATE ON lti_contexts TO assessd_app;

ALTER TABLE lti_grade_links ENABLE ROW LEVEL SECURITY;
ALTER TABLE lti_scores ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON lti_grade_links USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON lti_scores USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
GRANT SELECT, INSERT, UPDATE, DELETE ON lti_grade_links, lti_scores TO assessd_app;
