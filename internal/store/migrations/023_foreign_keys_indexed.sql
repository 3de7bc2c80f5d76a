-- Deleting a row makes PostgreSQL find the rows that reference it, through
-- every foreign key, with a query on the referencing columns alone. Where
-- no index leads with them, that is a scan of the whole table, of every
-- tenant: deleting one student scanned all results (and their API keys,
-- grants, sessions), and deleting each of a user's or an exam's results
-- scanned every answer-sheet page. Every foreign key now has an index that
-- leads with its columns, but those to tables whose rows are never deleted
-- (orgs, question types, service accounts, webhook events); the schema
-- test TestForeignKeysAreIndexed keeps it so. Decision 0150.
--
-- Where an index led with org_id only to serve lookups that also name a
-- globally unique parent id, it now leads with that id instead: as
-- selective, and no second index to maintain on every insert. Indexes are
-- created IF NOT EXISTS, so an operator with large tables can build them
-- beforehand with CREATE INDEX CONCURRENTLY under these names.

-- Results: by exam (listing, locking before a deletion) and by user.
CREATE INDEX IF NOT EXISTS results_exam ON results (exam_id, id);
DROP INDEX IF EXISTS results_org_exam;
CREATE INDEX IF NOT EXISTS results_user ON results (user_id);
CREATE INDEX IF NOT EXISTS answer_sheet_scan_pages_result ON answer_sheet_scan_pages (result_id) WHERE result_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS answer_sheet_scans_exam ON answer_sheet_scans (exam_id);
CREATE INDEX IF NOT EXISTS exam_generations_exam ON exam_generations (exam_id) WHERE exam_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS question_regenerations_question ON question_regenerations (question_id);

-- Folders: the (org_id, ...) indexes stay for the root level, where the
-- parent is NULL.
CREATE INDEX IF NOT EXISTS folders_parent_id ON folders (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS exams_folder_id ON exams (folder_id) WHERE folder_id IS NOT NULL;

-- A user's credentials and sessions.
DROP INDEX IF EXISTS api_keys_user;
CREATE INDEX IF NOT EXISTS api_keys_user_id ON api_keys (user_id);
DROP INDEX IF EXISTS oauth_grants_user;
CREATE INDEX IF NOT EXISTS oauth_grants_user_client ON oauth_grants (user_id, client_id);
CREATE INDEX IF NOT EXISTS oauth_grants_client ON oauth_grants (client_id);
CREATE INDEX IF NOT EXISTS oauth_auth_requests_user ON oauth_auth_requests (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS oauth_auth_requests_client ON oauth_auth_requests (client_id);
CREATE INDEX IF NOT EXISTS oauth_client_audit_allowances_client ON oauth_client_audit_allowances (client_id);
CREATE INDEX IF NOT EXISTS browser_sessions_user ON browser_sessions (user_id);

-- Webhook endpoints' targets and deliveries.
CREATE INDEX IF NOT EXISTS webhook_targets_endpoint ON webhook_targets (endpoint_id);
DROP INDEX IF EXISTS webhook_deliveries_endpoint;
CREATE INDEX IF NOT EXISTS webhook_deliveries_endpoint_id ON webhook_deliveries (endpoint_id, id);
