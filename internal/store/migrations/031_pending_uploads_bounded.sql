-- An uploader's files that no answer names yet are bounded in bytes
-- (media.Files.PendingBytes): each upload sums them, through this index.
-- Decision 0158.
CREATE INDEX IF NOT EXISTS media_files_pending ON media_files (org_id, uploaded_by) WHERE NOT attached;
