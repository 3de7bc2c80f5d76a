-- A POST or PATCH sent with an Idempotency-Key header runs once: a retry
-- with the same key, from the same caller, for the same request, is
-- answered the first one's response (decision 0178). A row is reserved
-- (status NULL) while the first request runs, completed with its 2xx
-- response, or deleted when it answered anything else (nothing was
-- written). Rows live 24 hours; the sweeper deletes older ones.
CREATE TABLE idempotency_keys (
  org_id       text NOT NULL REFERENCES orgs (id),
  -- The caller: a user, an OAuth app acting for a user, a service
  -- account. Not the credential, so a retry with a refreshed token or a
  -- rotated key is still the same caller.
  principal    text NOT NULL,
  key          text NOT NULL,
  -- Method, path and query of the request that took the key.
  request      text NOT NULL,
  -- SHA-256 of that request's body, known once it was read.
  body_sha256  bytea,
  status       integer,
  content_type text NOT NULL DEFAULT '',
  response     bytea,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, principal, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON idempotency_keys USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
GRANT SELECT, INSERT, UPDATE, DELETE ON idempotency_keys TO assessd_app;

CREATE FUNCTION sweep_idempotency_keys(p_before timestamptz, p_limit integer) RETURNS integer
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    WITH gone AS (
      DELETE FROM idempotency_keys
       WHERE (org_id, principal, key) IN (SELECT org_id, principal, key FROM idempotency_keys
                                          WHERE created_at < p_before ORDER BY created_at LIMIT p_limit)
      RETURNING 1)
    SELECT count(*)::integer FROM gone
  $$;

REVOKE ALL ON FUNCTION sweep_idempotency_keys(timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sweep_idempotency_keys(timestamptz, integer) TO assessd_app;
