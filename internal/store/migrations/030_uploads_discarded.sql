-- A file the student takes back out of an embed draft is deleted at once
-- when nothing names it yet (media.Files.Discard); row-level security
-- keeps the deletion to the organization. Decision 0155.
GRANT DELETE ON media_files TO assessd_app;
