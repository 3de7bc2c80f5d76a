-- A submission scored from a cached exam paper (decision 0132): every
-- change to an exam's questions advances the exam's paper_version in the
-- changing transaction, and the submission's write checks, in the same
-- implicit transaction, that what it scored with is still current.

ALTER TABLE exams ADD COLUMN paper_version bigint NOT NULL DEFAULT 0;

-- The triggers name their transition table "changed", so one function
-- serves inserts, updates and deletes. Question writers lock the exam row
-- before any question row, so this update never waits in the other order.
CREATE FUNCTION paper_changed() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    UPDATE exams SET paper_version = paper_version + 1 WHERE id IN (SELECT exam_id FROM changed);
    RETURN NULL;
  END
  $$;
REVOKE ALL ON FUNCTION paper_changed() FROM PUBLIC;

CREATE TRIGGER paper_inserted AFTER INSERT ON questions
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION paper_changed();
CREATE TRIGGER paper_updated AFTER UPDATE ON questions
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION paper_changed();
CREATE TRIGGER paper_deleted AFTER DELETE ON questions
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION paper_changed();

-- submission_current raises AS001 unless, for the organization in scope,
-- the exam is at paper version p_version, the user exists, the AI region is
-- p_region and, unless p_events is null, the enabled webhook endpoints
-- receive exactly p_events (as the submission's read reads them: distinct,
-- sorted). Invoker's rights:
-- row-level security scopes every read.
CREATE FUNCTION submission_current(p_exam text, p_version bigint, p_user text, p_region text, p_events text[])
  RETURNS void
  LANGUAGE plpgsql STABLE
  AS $$
  BEGIN
    IF NOT EXISTS (SELECT 1 FROM exams WHERE org_id = app_org_id() AND id = p_exam AND paper_version = p_version)
       OR NOT EXISTS (SELECT 1 FROM users WHERE org_id = app_org_id() AND id = p_user)
       OR (SELECT ai_region FROM orgs WHERE id = app_org_id()) IS DISTINCT FROM p_region
       OR p_events IS NOT NULL AND p_events IS DISTINCT FROM
          (SELECT coalesce(array_agg(DISTINCT t), '{}') FROM webhook_endpoints, unnest(events) AS t
            WHERE org_id = app_org_id() AND enabled)
    THEN
      RAISE EXCEPTION 'the submission''s exam paper changed since it was read' USING ERRCODE = 'AS001';
    END IF;
  END
  $$;
REVOKE ALL ON FUNCTION submission_current(text, bigint, text, text, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION submission_current(text, bigint, text, text, text[]) TO assessd_app;
