-- Platform core: organizations, users, API keys and the audit log.
--
-- Tenant isolation: every tenant-owned table has org_id and a row-level
-- security policy on the transaction-local setting app.org_id. The
-- application runs as role assessd_app, which owns nothing and cannot bypass
-- RLS, so a query that forgets its org filter still sees only its tenant.

DO $$
BEGIN
  CREATE ROLE assessd_app NOLOGIN NOSUPERUSER NOBYPASSRLS;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
  NULL; -- created by another database of the same cluster
END
$$;

CREATE FUNCTION app_org_id() RETURNS text
  LANGUAGE sql STABLE
  AS $$ SELECT nullif(current_setting('app.org_id', true), '') $$;

CREATE TABLE orgs (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  country     text NOT NULL CHECK (country ~ '^[A-Z]{2}$'),
  plan        text NOT NULL CHECK (plan IN ('free', 'pro', 'enterprise')),
  ai_region   text NOT NULL CHECK (ai_region IN ('global', 'eu')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id             text PRIMARY KEY,
  org_id         text NOT NULL REFERENCES orgs (id),
  email          text NOT NULL,
  name           text NOT NULL,
  role           text NOT NULL CHECK (role IN ('owner', 'admin', 'teacher', 'student')),
  password_hash  text,
  metadata       jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_org_email ON users (org_id, lower(email));
CREATE INDEX users_org_id ON users (org_id, id);

CREATE TABLE api_keys (
  id            text PRIMARY KEY,
  org_id        text NOT NULL REFERENCES orgs (id),
  user_id       text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name          text NOT NULL,
  secret_hash   bytea NOT NULL UNIQUE,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz,
  revoked_at    timestamptz
);
CREATE INDEX api_keys_user ON api_keys (org_id, user_id);

CREATE TABLE audit_logs (
  id              text PRIMARY KEY,
  org_id          text NOT NULL REFERENCES orgs (id),
  action          text NOT NULL CHECK (action ~ '^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$'),
  actor_kind      text NOT NULL CHECK (actor_kind IN ('user', 'service_account', 'system')),
  actor_id        text NOT NULL,
  actor_client_id text NOT NULL DEFAULT '',
  target_type     text NOT NULL,
  target_id       text NOT NULL,
  session         text NOT NULL DEFAULT '',
  reason          text NOT NULL DEFAULT '',
  before          jsonb,
  after           jsonb,
  origin          text NOT NULL CHECK (origin IN ('platform', 'app')),
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_logs_org_id ON audit_logs (org_id, id DESC);
CREATE INDEX audit_logs_org_action ON audit_logs (org_id, action, id DESC);
CREATE INDEX audit_logs_org_target ON audit_logs (org_id, target_id, id DESC);
CREATE INDEX audit_logs_org_actor ON audit_logs (org_id, actor_id, id DESC);

ALTER TABLE orgs ENABLE ROW LEVEL SECURITY;
ALTER TABLE users ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_logs ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant ON orgs USING (id = app_org_id()) WITH CHECK (id = app_org_id());
CREATE POLICY tenant ON users USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON api_keys USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON audit_logs USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());

GRANT EXECUTE ON FUNCTION app_org_id() TO assessd_app;
GRANT SELECT, INSERT, UPDATE ON orgs TO assessd_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON users, api_keys TO assessd_app;
-- The audit log is append-only: no UPDATE or DELETE for the application.
GRANT SELECT, INSERT ON audit_logs TO assessd_app;

-- Authentication happens before the tenant is known. These narrow,
-- privileged lookups are the only way the application reads across tenants.
CREATE FUNCTION api_key_for_auth(p_key_id text)
  RETURNS TABLE (org_id text, user_id text, role text, secret_hash bytea, last_used_at timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT k.org_id, k.user_id, u.role, k.secret_hash, k.last_used_at
      FROM api_keys k JOIN users u ON u.id = k.user_id
     WHERE k.id = p_key_id AND k.revoked_at IS NULL
  $$;

-- The organization of a user or API key, for operator commands that name
-- only the user or key.
CREATE FUNCTION org_of(p_id text) RETURNS text
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT org_id FROM users WHERE id = p_id
    UNION ALL
    SELECT org_id FROM api_keys WHERE id = p_id
  $$;

REVOKE ALL ON FUNCTION api_key_for_auth(text), org_of(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION api_key_for_auth(text), org_of(text) TO assessd_app;
