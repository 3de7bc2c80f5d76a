-- An upload that no answer ever named (a file removed from an embed
-- draft, a session that expired, a POST /media whose result was never
-- submitted) was kept forever, its bytes readable by its URL. A file is
-- now attached when an answer naming it is stored; one still unattached 7
-- days after its upload is deleted by the sweeper. Attached files go with
-- their answers (027). Files are matched by id, whatever the base URL of
-- the answer's URL, so a changed base URL cannot make a named file look
-- unattached. Decision 0155.
ALTER TABLE media_files ADD COLUMN attached boolean NOT NULL DEFAULT false;

UPDATE media_files m SET attached = true
  FROM (SELECT DISTINCT a.org_id, substring(f.url FROM '/media/(med_[a-z0-9]{32})/') AS id
          FROM result_answers a, jsonb_array_elements_text(a.files) AS f(url)
         WHERE a.files <> '[]'::jsonb) named
 WHERE m.id = named.id AND m.org_id = named.org_id;

CREATE INDEX IF NOT EXISTS media_files_unattached ON media_files (created_at) WHERE NOT attached;

-- One primary-key lookup per file the answer names (at most 20): a
-- set-based UPDATE was planned as a scan of all the organization's files.
CREATE FUNCTION answer_files_attach() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  DECLARE
    file_id text;
  BEGIN
    FOR file_id IN SELECT DISTINCT substring(f.url FROM '/media/(med_[a-z0-9]{32})/')
                     FROM jsonb_array_elements_text(NEW.files) AS f(url) LOOP
      UPDATE media_files SET attached = true WHERE id = file_id AND org_id = NEW.org_id AND NOT attached;
    END LOOP;
    RETURN NULL;
  END
  $$;

CREATE TRIGGER answer_files_attached AFTER INSERT ON result_answers
  FOR EACH ROW WHEN (NEW.files <> '[]'::jsonb) EXECUTE FUNCTION answer_files_attach();

REVOKE ALL ON FUNCTION answer_files_attach() FROM PUBLIC;

-- The NOT attached outside the subquery is checked again on a row that a
-- concurrent submission attached after the subquery read it: that file
-- stays.
CREATE FUNCTION sweep_unattached_media(p_before timestamptz, p_limit integer) RETURNS integer
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    WITH gone AS (
      DELETE FROM media_files
       WHERE id IN (SELECT id FROM media_files WHERE NOT attached AND created_at < p_before ORDER BY created_at LIMIT p_limit)
         AND NOT attached
      RETURNING 1)
    SELECT count(*)::integer FROM gone
  $$;

REVOKE ALL ON FUNCTION sweep_unattached_media(timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sweep_unattached_media(timestamptz, integer) TO assessd_app;
