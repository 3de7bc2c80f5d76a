-- Classes: rosters of an organization's users, students and teachers
-- (issue 55). external_id is a host's own key for the class (a SIS section,
-- an LMS course), unique within the organization when set. A teacher sees
-- and manages the classes they are a teacher of; owners and admins all.
CREATE TABLE classes (
  id          text PRIMARY KEY,
  org_id      text NOT NULL REFERENCES orgs (id),
  name        text NOT NULL,
  external_id text,
  created_by  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX classes_org ON classes (org_id, id);
CREATE UNIQUE INDEX classes_org_external_id ON classes (org_id, external_id) WHERE external_id IS NOT NULL;

CREATE TABLE class_members (
  class_id   text NOT NULL REFERENCES classes (id) ON DELETE CASCADE,
  user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  org_id     text NOT NULL REFERENCES orgs (id),
  role       text NOT NULL CHECK (role IN ('student', 'teacher')),
  added_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (class_id, user_id)
);
-- A user's classes: a teacher's visible classes, a student's assignments,
-- and the cascade when a user is deleted.
CREATE INDEX class_members_user ON class_members (user_id, class_id);

ALTER TABLE classes ENABLE ROW LEVEL SECURITY;
ALTER TABLE class_members ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON classes USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON class_members USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
GRANT SELECT, INSERT, UPDATE, DELETE ON classes, class_members TO assessd_app;
