-- Expired OAuth tokens were never deleted: every authorization-code
-- exchange adds two rows and every refresh two more, so the table grew
-- with every sign-in for the life of the deployment. The sweeper that
-- deletes expired auth requests (Provider.SweepExpired) now deletes the
-- tokens expired over a day ago too, in bounded batches, through this
-- function: the tokens of every organization, which row-level security
-- would hide from the sweeper. Past its expiry a token is refused as
-- expired; once deleted it is refused as unknown, with the same answer.
-- Decision 0152.
CREATE INDEX IF NOT EXISTS oauth_tokens_expiry ON oauth_tokens (expires_at);

CREATE FUNCTION sweep_oauth_tokens(p_before timestamptz, p_limit integer) RETURNS integer
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    WITH gone AS (
      DELETE FROM oauth_tokens
       WHERE id IN (SELECT id FROM oauth_tokens WHERE expires_at < p_before ORDER BY expires_at LIMIT p_limit)
      RETURNING 1)
    SELECT count(*)::integer FROM gone
  $$;

REVOKE ALL ON FUNCTION sweep_oauth_tokens(timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sweep_oauth_tokens(timestamptz, integer) TO assessd_app;
