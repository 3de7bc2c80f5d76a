-- A student's uploaded answer files (media_files, 011) outlived their
-- answers: deleting a student, or an exam, deleted the results and their
-- answers, but every file stayed, its bytes readable by anyone holding its
-- URL. A deleted answer now takes the uploaded files it references along,
-- unless another answer of the organization still references the same
-- URL. Answers with files are few: the trigger's WHEN skips the others
-- without calling the function, and the partial GIN index serves the check
-- while costing nothing to answers without files. Decision 0154.
CREATE INDEX IF NOT EXISTS result_answers_files ON result_answers USING gin (files) WHERE files <> '[]'::jsonb;

CREATE FUNCTION answer_files_delete() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    DELETE FROM media_files m
     USING (SELECT DISTINCT f.url, substring(f.url FROM '/media/(med_[a-z0-9]{32})/') AS id
              FROM jsonb_array_elements_text(OLD.files) AS f(url)) d
     WHERE m.id = d.id AND m.org_id = OLD.org_id
       AND NOT EXISTS (SELECT 1 FROM result_answers a
                        WHERE a.files <> '[]'::jsonb AND a.files ? d.url AND a.org_id = OLD.org_id);
    RETURN NULL;
  END
  $$;

CREATE TRIGGER answer_files_deleted AFTER DELETE ON result_answers
  FOR EACH ROW WHEN (OLD.files <> '[]'::jsonb) EXECUTE FUNCTION answer_files_delete();

REVOKE ALL ON FUNCTION answer_files_delete() FROM PUBLIC;
