-- Answer files students upload (decision 0121): assessd serves them itself
-- under {base URL}/media/, which always counts as the media CDN. The bytes
-- live here (uploads are small and few, like answer-sheet scans, 007).
CREATE TABLE media_files (
  id           text PRIMARY KEY,
  org_id       text NOT NULL REFERENCES orgs (id),
  name         text NOT NULL,
  content_type text NOT NULL,
  content      bytea NOT NULL,
  uploaded_by  text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX media_files_org ON media_files (org_id, id);

ALTER TABLE media_files ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON media_files USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
GRANT SELECT, INSERT ON media_files TO assessd_app;

-- A file's URL is its capability (its id has 160 random bits), so serving
-- it happens before any tenant is known: this narrow lookup names only the
-- organization, and the bytes are then read under that organization's
-- row-level security.
CREATE FUNCTION media_file_org(p_id text) RETURNS text
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$ SELECT org_id FROM media_files WHERE id = p_id $$;

REVOKE ALL ON FUNCTION media_file_org(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION media_file_org(text) TO assessd_app;
