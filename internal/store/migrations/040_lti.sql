-- LTI 1.3 (issue 57): assessd is the tool, learning platforms (LMSs) launch
-- it. An organization registers its platforms; users and course contexts
-- launched from one are matched to assessd's users and classes.

-- The tool's own signing keys (deep-linking responses, client assertions)
-- rotate like the OIDC provider's, in a ring of their own (decision 0200).
ALTER TABLE signing_keys ADD COLUMN purpose text NOT NULL DEFAULT 'oidc';

CREATE TABLE lti_platforms (
  id               text PRIMARY KEY,
  org_id           text NOT NULL REFERENCES orgs (id),
  name             text NOT NULL,
  issuer           text NOT NULL,
  client_id        text NOT NULL,
  deployment_ids   text[] NOT NULL DEFAULT '{}',
  auth_login_url   text NOT NULL,
  access_token_url text NOT NULL,
  jwks_url         text NOT NULL,
  created_by       text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS lti_platforms_org ON lti_platforms (org_id, id);
-- A login initiation names its platform by issuer (and client id) before
-- any organization is known, so the pair is unique across organizations.
CREATE UNIQUE INDEX IF NOT EXISTS lti_platforms_issuer_client ON lti_platforms (issuer, client_id);

-- A platform's user is (issuer, sub), for OIDC says a subject is unique
-- within its issuer; several registrations of one issuer share its users.
CREATE TABLE lti_users (
  org_id     text NOT NULL REFERENCES orgs (id),
  issuer     text NOT NULL,
  subject    text NOT NULL,
  user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, issuer, subject)
);
CREATE INDEX IF NOT EXISTS lti_users_user ON lti_users (user_id);

-- A course context is the class of its launches; LTI makes a context id
-- unique within its deployment.
CREATE TABLE lti_contexts (
  org_id        text NOT NULL REFERENCES orgs (id),
  issuer        text NOT NULL,
  deployment_id text NOT NULL,
  context_id    text NOT NULL,
  class_id      text NOT NULL REFERENCES classes (id) ON DELETE CASCADE,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, issuer, deployment_id, context_id)
);
CREATE INDEX IF NOT EXISTS lti_contexts_class ON lti_contexts (class_id);

ALTER TABLE lti_platforms ENABLE ROW LEVEL SECURITY;
ALTER TABLE lti_users ENABLE ROW LEVEL SECURITY;
ALTER TABLE lti_contexts ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON lti_platforms USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON lti_users USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON lti_contexts USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
GRANT SELECT, INSERT, UPDATE, DELETE ON lti_platforms TO assessd_app;
GRANT SELECT, INSERT, DELETE ON lti_users, lti_contexts TO assessd_app;

-- The registrations of an issuer a login initiation (or a launch that
-- brought no state) may be for, before the organization is known: those
-- with the client id, or every one of the issuer when none is given (the
-- caller refuses more than one). At most two rows: one is the answer, two
-- say it is ambiguous.
CREATE FUNCTION lti_platforms_for_login(p_issuer text, p_client_id text)
  RETURNS TABLE (id text, org_id text, client_id text, auth_login_url text)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    SELECT p.id, p.org_id, p.client_id, p.auth_login_url FROM lti_platforms p
     WHERE p.issuer = p_issuer AND (p_client_id = '' OR p.client_id = p_client_id)
     ORDER BY p.id LIMIT 2;
  END
  $$;
REVOKE ALL ON FUNCTION lti_platforms_for_login(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lti_platforms_for_login(text, text) TO assessd_app;
