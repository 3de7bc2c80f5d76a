-- Every authorization-code exchange creates a grant, and nothing deleted
-- them: once the sweep of 024 has deleted a grant's last token, the grant
-- can never be used again, yet it stayed, and kept its app listed among
-- the user's connected apps. The token sweep now deletes, with a batch of
-- tokens, the grants that batch left without any. A separate statement, so
-- that it sees the batch's deletions. Decision 0152.
CREATE OR REPLACE FUNCTION sweep_oauth_tokens(p_before timestamptz, p_limit integer) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  DECLARE
    grants text[];
    n integer;
  BEGIN
    WITH gone AS (
      DELETE FROM oauth_tokens
       WHERE id IN (SELECT id FROM oauth_tokens WHERE expires_at < p_before ORDER BY expires_at LIMIT p_limit)
      RETURNING grant_id)
    SELECT count(*)::integer, array_agg(DISTINCT grant_id) INTO n, grants FROM gone;
    DELETE FROM oauth_grants g
     WHERE g.id = ANY (grants)
       AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.grant_id = g.id);
    RETURN n;
  END
  $$;
