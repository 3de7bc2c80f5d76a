-- answer_files_delete (027) found the files of a deleted answer with a
-- join that PostgreSQL planned as a scan of all the organization's files:
-- 4-6 ms per deleted answer with files at 20,000 files, growing with the
-- organization until deleting a student ran past the statement timeout.
-- It now looks each file up by its primary key, as answer_files_attach
-- (028) does. What it deletes is unchanged. Decision 0156.
CREATE OR REPLACE FUNCTION answer_files_delete() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  DECLARE
    file record;
  BEGIN
    FOR file IN SELECT DISTINCT f.url, substring(f.url FROM '/media/(med_[a-z0-9]{32})/') AS id
                  FROM jsonb_array_elements_text(OLD.files) AS f(url) LOOP
      CONTINUE WHEN file.id IS NULL OR EXISTS (
        SELECT 1 FROM result_answers a WHERE a.files <> '[]'::jsonb AND a.files ? file.url AND a.org_id = OLD.org_id);
      DELETE FROM media_files WHERE id = file.id AND org_id = OLD.org_id;
    END LOOP;
    RETURN NULL;
  END
  $$;
