-- OAuth 2.0 / OpenID Connect provider: clients, authorization requests,
-- grants and tokens, signing keys, browser sessions and service accounts.
-- Secrets (client secrets, codes, tokens, session ids) are stored only as
-- SHA-256 hashes.

-- Clients are registered by one organization (their developer) and may be
-- authorized by users of any organization.
CREATE TABLE oauth_clients (
  id             text PRIMARY KEY,
  org_id         text NOT NULL REFERENCES orgs (id),
  name           text NOT NULL,
  description    text NOT NULL DEFAULT '',
  redirect_uris  text[] NOT NULL CHECK (cardinality(redirect_uris) > 0),
  secret_hash    bytea,              -- NULL for public clients (PKCE, no secret)
  scopes         text[] NOT NULL DEFAULT '{}',  -- scopes the client may request; empty: any
  created_by     text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_clients_org ON oauth_clients (org_id, id);

-- An organization's admin allows a client to receive audit-logs:write for
-- that organization's users.
CREATE TABLE oauth_client_audit_allowances (
  org_id      text NOT NULL REFERENCES orgs (id),
  client_id   text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  allowed_by  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, client_id)
);

-- A grant is one user's authorization of one client: the code, and every
-- access and refresh token descending from it. Revoking the grant revokes
-- them all.
CREATE TABLE oauth_grants (
  id          text PRIMARY KEY,
  org_id      text NOT NULL REFERENCES orgs (id),
  user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  client_id   text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  scopes      text[] NOT NULL,
  auth_time   timestamptz NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX oauth_grants_user ON oauth_grants (org_id, user_id, client_id);

CREATE TABLE oauth_tokens (
  id          text PRIMARY KEY,
  org_id      text NOT NULL REFERENCES orgs (id),
  grant_id    text NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
  kind        text NOT NULL CHECK (kind IN ('access', 'refresh')),
  token_hash  bytea NOT NULL UNIQUE,
  expires_at  timestamptz NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  used_at     timestamptz,           -- a refresh token is single-use (rotation)
  revoked_at  timestamptz
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);

-- Authorization requests live from /oauth/authorize until their code is
-- exchanged (or they expire). They exist before the user is known, so they
-- are not tenant rows until login fills in org_id and user_id.
CREATE TABLE oauth_auth_requests (
  id                     text PRIMARY KEY,
  client_id              text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  redirect_uri           text NOT NULL,
  scopes                 text[] NOT NULL,
  state                  text NOT NULL DEFAULT '',
  nonce                  text NOT NULL DEFAULT '',
  response_type          text NOT NULL,
  response_mode          text NOT NULL DEFAULT '',
  code_challenge         text NOT NULL DEFAULT '',
  code_challenge_method  text NOT NULL DEFAULT '',
  org_id                 text REFERENCES orgs (id) ON DELETE CASCADE,
  user_id                text REFERENCES users (id) ON DELETE CASCADE,
  auth_time              timestamptz,
  done                   boolean NOT NULL DEFAULT false,
  code_hash              bytea UNIQUE,
  grant_id               text,        -- the grant the code produced, revoked if the code is replayed
  code_used_at           timestamptz,
  created_at             timestamptz NOT NULL DEFAULT now(),
  expires_at             timestamptz NOT NULL
);

-- Signed-in browser sessions of the login, consent and account pages.
CREATE TABLE browser_sessions (
  id_hash     bytea PRIMARY KEY,
  org_id      text NOT NULL REFERENCES orgs (id),
  user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  csrf_token  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);

-- Token signing keys (RS256). The newest active key signs; retired keys
-- stay published in the JWKS until every token they signed has expired.
CREATE TABLE signing_keys (
  id           text PRIMARY KEY,
  algorithm    text NOT NULL,
  private_der  bytea NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  retired_at   timestamptz,
  expires_at   timestamptz
);

-- Service accounts are non-human callers of one organization. They sign
-- JWT assertions with a registered key (RFC 7523) to obtain access tokens.
CREATE TABLE service_accounts (
  id          text PRIMARY KEY,
  org_id      text NOT NULL REFERENCES orgs (id),
  name        text NOT NULL,
  role        text NOT NULL CHECK (role IN ('admin', 'teacher', 'student')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  disabled_at timestamptz
);

CREATE TABLE service_account_keys (
  id                  text PRIMARY KEY,
  org_id              text NOT NULL REFERENCES orgs (id),
  service_account_id  text NOT NULL REFERENCES service_accounts (id) ON DELETE CASCADE,
  public_key_pem      text NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  revoked_at          timestamptz
);

ALTER TABLE oauth_clients ENABLE ROW LEVEL SECURITY;
ALTER TABLE oauth_client_audit_allowances ENABLE ROW LEVEL SECURITY;
ALTER TABLE oauth_grants ENABLE ROW LEVEL SECURITY;
ALTER TABLE oauth_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE browser_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE service_accounts ENABLE ROW LEVEL SECURITY;
ALTER TABLE service_account_keys ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant ON oauth_clients USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON oauth_client_audit_allowances USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON oauth_grants USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON oauth_tokens USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON browser_sessions USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON service_accounts USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON service_account_keys USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());

GRANT SELECT, INSERT, UPDATE, DELETE ON oauth_clients, oauth_client_audit_allowances, oauth_grants,
  oauth_tokens, oauth_auth_requests, browser_sessions, signing_keys, service_accounts,
  service_account_keys TO assessd_app;

-- The provider runs before the tenant is known (a client id in
-- /oauth/authorize, a bearer token, a session cookie, a login email, a JWT
-- assertion). These narrow SECURITY DEFINER lookups are its only reads
-- across tenants; each answers for one secret or id.
CREATE FUNCTION oauth_client_for_auth(p_id text)
  RETURNS TABLE (id text, org_id text, name text, description text, redirect_uris text[], secret_hash bytea, scopes text[])
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$ SELECT id, org_id, name, description, redirect_uris, secret_hash, scopes FROM oauth_clients WHERE id = p_id $$;

CREATE FUNCTION oauth_token_for_auth(p_hash bytea)
  RETURNS TABLE (token_id text, org_id text, grant_id text, kind text, expires_at timestamptz,
                 used_at timestamptz, revoked_at timestamptz, user_id text, client_id text,
                 scopes text[], auth_time timestamptz, grant_revoked_at timestamptz, role text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT t.id, t.org_id, t.grant_id, t.kind, t.expires_at, t.used_at, t.revoked_at,
           g.user_id, g.client_id, g.scopes, g.auth_time, g.revoked_at, u.role
      FROM oauth_tokens t
      JOIN oauth_grants g ON g.id = t.grant_id
      JOIN users u ON u.id = g.user_id
     WHERE t.token_hash = p_hash
  $$;

CREATE FUNCTION browser_session_for_auth(p_hash bytea)
  RETURNS TABLE (org_id text, user_id text, csrf_token text, expires_at timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$ SELECT org_id, user_id, csrf_token, expires_at FROM browser_sessions WHERE id_hash = p_hash $$;

CREATE FUNCTION users_for_login(p_email text)
  RETURNS TABLE (user_id text, org_id text, password_hash text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT id, org_id, password_hash FROM users
     WHERE lower(email) = lower(p_email) AND password_hash IS NOT NULL
  $$;

CREATE FUNCTION service_account_key_for_auth(p_key_id text)
  RETURNS TABLE (org_id text, service_account_id text, public_key_pem text, role text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT k.org_id, k.service_account_id, k.public_key_pem, a.role
      FROM service_account_keys k JOIN service_accounts a ON a.id = k.service_account_id
     WHERE k.id = p_key_id AND k.revoked_at IS NULL AND a.disabled_at IS NULL
  $$;

CREATE FUNCTION service_account_for_auth(p_id text)
  RETURNS TABLE (org_id text, role text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$ SELECT org_id, role FROM service_accounts WHERE id = p_id AND disabled_at IS NULL $$;

REVOKE ALL ON FUNCTION oauth_client_for_auth(text), oauth_token_for_auth(bytea),
  browser_session_for_auth(bytea), users_for_login(text), service_account_key_for_auth(text),
  service_account_for_auth(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION oauth_client_for_auth(text), oauth_token_for_auth(bytea),
  browser_session_for_auth(bytea), users_for_login(text), service_account_key_for_auth(text),
  service_account_for_auth(text) TO assessd_app;

-- The provider's token encryption key (AES-256): generated once, shared by
-- every instance.
CREATE TABLE provider_secrets (
  name   text PRIMARY KEY,
  value  bytea NOT NULL
);
GRANT SELECT, INSERT ON provider_secrets TO assessd_app;
