-- Fast paths (issue 17): authentication lookups with cached plans, and the
-- results summary kept up to date on write.

-- The authentication lookups become PL/pgSQL. A SQL-language function that
-- cannot be inlined (SECURITY DEFINER, SET search_path) is planned anew on
-- every call, while PL/pgSQL keeps its statements' plans for the session
-- (decision 0115). Same names, arguments and results as before.
CREATE OR REPLACE FUNCTION api_key_for_auth(p_key_id text)
  RETURNS TABLE (org_id text, user_id text, role text, secret_hash bytea, last_used_at timestamptz)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    SELECT k.org_id, k.user_id, u.role, k.secret_hash, k.last_used_at
      FROM api_keys k JOIN users u ON u.id = k.user_id
     WHERE k.id = p_key_id AND k.revoked_at IS NULL;
  END
  $$;

CREATE OR REPLACE FUNCTION oauth_client_for_auth(p_id text)
  RETURNS TABLE (id text, org_id text, name text, description text, redirect_uris text[], secret_hash bytea, scopes text[])
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    SELECT c.id, c.org_id, c.name, c.description, c.redirect_uris, c.secret_hash, c.scopes
      FROM oauth_clients c WHERE c.id = p_id;
  END
  $$;

CREATE OR REPLACE FUNCTION oauth_token_for_auth(p_hash bytea)
  RETURNS TABLE (token_id text, org_id text, grant_id text, kind text, expires_at timestamptz,
                 used_at timestamptz, revoked_at timestamptz, user_id text, client_id text,
                 scopes text[], auth_time timestamptz, grant_revoked_at timestamptz, role text)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    SELECT t.id, t.org_id, t.grant_id, t.kind, t.expires_at, t.used_at, t.revoked_at,
           g.user_id, g.client_id, g.scopes, g.auth_time, g.revoked_at, u.role
      FROM oauth_tokens t
      JOIN oauth_grants g ON g.id = t.grant_id
      JOIN users u ON u.id = g.user_id
     WHERE t.token_hash = p_hash;
  END
  $$;

CREATE OR REPLACE FUNCTION browser_session_for_auth(p_hash bytea)
  RETURNS TABLE (org_id text, user_id text, csrf_token text, expires_at timestamptz)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    SELECT s.org_id, s.user_id, s.csrf_token, s.expires_at FROM browser_sessions s WHERE s.id_hash = p_hash;
  END
  $$;

CREATE OR REPLACE FUNCTION service_account_key_for_auth(p_key_id text)
  RETURNS TABLE (org_id text, service_account_id text, public_key_pem text, role text)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    SELECT k.org_id, k.service_account_id, k.public_key_pem, a.role
      FROM service_account_keys k JOIN service_accounts a ON a.id = k.service_account_id
     WHERE k.id = p_key_id AND k.revoked_at IS NULL AND a.disabled_at IS NULL;
  END
  $$;

CREATE OR REPLACE FUNCTION service_account_for_auth(p_id text)
  RETURNS TABLE (org_id text, role text)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY
    SELECT a.org_id, a.role FROM service_accounts a WHERE a.id = p_id AND a.disabled_at IS NULL;
  END
  $$;

-- The results summary's aggregates (decision 0117), kept by triggers in the
-- transaction of every write to results and result_answers, whatever code
-- path writes them: the summary reads these few rows instead of every
-- result and answer of the exam. Each result counts in one of 16 shards
-- (by its id), so that concurrent submissions to one exam seldom wait for
-- each other's row locks; the summary adds the shards up.
--
-- result_score_counts: how many results of an exam have each status, score
-- and maximum; count, mean, median, deviation, extremes and histogram all
-- follow from it.
CREATE TABLE result_score_counts (
  org_id     text NOT NULL REFERENCES orgs (id),
  exam_id    text NOT NULL REFERENCES exams (id) ON DELETE CASCADE,
  shard      smallint NOT NULL,
  status     text NOT NULL,
  score      double precision NOT NULL,
  max_score  double precision NOT NULL,
  n          bigint NOT NULL,
  PRIMARY KEY (exam_id, shard, status, score, max_score)
);
CREATE INDEX result_score_counts_org ON result_score_counts (org_id, exam_id);

-- question_score_sums: per question (and answered position) the sums over
-- the answers of graded results of x = the answer's score, y = the rest of
-- the result's score, and the fraction earned, from which the mean, the
-- difficulty and Pearson's r follow. numeric, so that adding and later
-- subtracting a result's terms leaves no rounding residue.
CREATE TABLE question_score_sums (
  org_id       text NOT NULL REFERENCES orgs (id),
  exam_id      text NOT NULL REFERENCES exams (id) ON DELETE CASCADE,
  question_id  text NOT NULL,
  position     integer NOT NULL,
  shard        smallint NOT NULL,
  n            bigint NOT NULL,
  sum_x        numeric NOT NULL,
  sum_xx       numeric NOT NULL,
  sum_y        numeric NOT NULL,
  sum_yy       numeric NOT NULL,
  sum_xy       numeric NOT NULL,
  sum_fraction numeric NOT NULL,
  PRIMARY KEY (exam_id, question_id, position, shard)
);
CREATE INDEX question_score_sums_org ON question_score_sums (org_id, exam_id);

ALTER TABLE result_score_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE question_score_sums ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON result_score_counts USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON question_score_sums USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
-- Only the triggers below (SECURITY DEFINER) write them.
GRANT SELECT ON result_score_counts, question_score_sums TO assessd_app;

CREATE FUNCTION summary_shard(result_id text) RETURNS smallint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT (hashtext(result_id) & 15)::smallint $$;

-- summary_count adds sign (1 or -1) times one result to its exam's score
-- counts. Taking away only updates, and not at all once the exam is
-- deleted: its results are being cascaded away, and its counts with them.
CREATE FUNCTION summary_count(r results, sign integer) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    IF sign < 0 THEN
      UPDATE result_score_counts c SET n = c.n - 1
       WHERE c.exam_id = r.exam_id AND c.shard = summary_shard(r.id) AND c.status = r.status
         AND c.score = r.score AND c.max_score = r.max_score
         AND EXISTS (SELECT FROM exams e WHERE e.id = r.exam_id);
      RETURN;
    END IF;
    INSERT INTO result_score_counts AS c (org_id, exam_id, shard, status, score, max_score, n)
    VALUES (r.org_id, r.exam_id, summary_shard(r.id), r.status, r.score, r.max_score, 1)
    ON CONFLICT (exam_id, shard, status, score, max_score) DO UPDATE SET n = c.n + 1;
  END
  $$;

-- summary_term adds sign times one answer of a graded result whose score
-- is total to its question's sums; taking away as above.
CREATE FUNCTION summary_term(a result_answers, total double precision, sign integer) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  DECLARE
    x numeric := a.score::numeric;
    y numeric := (total - a.score)::numeric;
    f numeric := (CASE WHEN a.max_score > 0 THEN a.score / a.max_score ELSE 0 END)::numeric;
  BEGIN
    IF sign < 0 THEN
      UPDATE question_score_sums s
         SET n = s.n - 1, sum_x = s.sum_x - x, sum_xx = s.sum_xx - x * x, sum_y = s.sum_y - y,
             sum_yy = s.sum_yy - y * y, sum_xy = s.sum_xy - x * y, sum_fraction = s.sum_fraction - f
       WHERE s.exam_id = a.exam_id AND s.question_id = a.question_id AND s.position = a.position
         AND s.shard = summary_shard(a.result_id) AND EXISTS (SELECT FROM exams e WHERE e.id = a.exam_id);
      RETURN;
    END IF;
    INSERT INTO question_score_sums AS s (org_id, exam_id, question_id, position, shard, n, sum_x, sum_xx, sum_y, sum_yy, sum_xy, sum_fraction)
    VALUES (a.org_id, a.exam_id, a.question_id, a.position, summary_shard(a.result_id), 1, x, x * x, y, y * y, x * y, f)
    ON CONFLICT (exam_id, question_id, position, shard) DO UPDATE
       SET n = s.n + 1, sum_x = s.sum_x + x, sum_xx = s.sum_xx + x * x, sum_y = s.sum_y + y,
           sum_yy = s.sum_yy + y * y, sum_xy = s.sum_xy + x * y, sum_fraction = s.sum_fraction + f;
  END
  $$;

-- A result's row changes: its old state leaves the aggregates and its new
-- one enters them, with its answers as they are now (in question order, so
-- that concurrent transactions lock the sums in one order). A deleted
-- result leaves before its answers are cascaded away (BEFORE DELETE).
CREATE FUNCTION summary_on_result() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  DECLARE
    a result_answers;
  BEGIN
    IF TG_OP = 'UPDATE' AND (OLD.status, OLD.score, OLD.max_score) IS NOT DISTINCT FROM (NEW.status, NEW.score, NEW.max_score) THEN
      RETURN NULL;
    END IF;
    PERFORM summary_count(OLD, -1);
    IF OLD.status = 'graded' THEN
      FOR a IN SELECT * FROM result_answers WHERE result_id = OLD.id ORDER BY question_id LOOP
        PERFORM summary_term(a, OLD.score, -1);
      END LOOP;
    END IF;
    IF TG_OP = 'DELETE' THEN
      RETURN OLD;
    END IF;
    PERFORM summary_count(NEW, 1);
    IF NEW.status = 'graded' THEN
      FOR a IN SELECT * FROM result_answers WHERE result_id = NEW.id ORDER BY question_id LOOP
        PERFORM summary_term(a, NEW.score, 1);
      END LOOP;
    END IF;
    RETURN NULL;
  END
  $$;

-- An answer of a graded result changes (a teacher's correction): its old
-- terms leave and its new ones enter, against the result's current score;
-- the result's own update then moves every answer to its new score.
CREATE FUNCTION summary_on_answer() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  DECLARE
    total double precision;
  BEGIN
    IF TG_OP = 'UPDATE' AND (OLD.score, OLD.max_score, OLD.position) IS NOT DISTINCT FROM (NEW.score, NEW.max_score, NEW.position) THEN
      RETURN NEW;
    END IF;
    SELECT r.score INTO total FROM results r WHERE r.id = OLD.result_id AND r.status = 'graded';
    IF FOUND THEN
      PERFORM summary_term(OLD, total, -1);
      IF TG_OP = 'UPDATE' THEN
        PERFORM summary_term(NEW, total, 1);
      END IF;
    END IF;
    IF TG_OP = 'DELETE' THEN
      RETURN OLD;
    END IF;
    RETURN NEW;
  END
  $$;

-- New results count at once; their answers cannot exist before them (the
-- foreign key), so a result's answers count when they are inserted, by the
-- statement: one grouped upsert per statement. A writable CTE inserting
-- results and answers together is counted right too, since both triggers
-- run after the whole statement.
CREATE FUNCTION summary_results_inserted() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    INSERT INTO result_score_counts AS c (org_id, exam_id, shard, status, score, max_score, n)
    SELECT min(r.org_id), r.exam_id, summary_shard(r.id), r.status, r.score, r.max_score, count(*)
      FROM added r
     GROUP BY 2, 3, 4, 5, 6 ORDER BY 2, 3, 4, 5, 6
    ON CONFLICT (exam_id, shard, status, score, max_score) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
  END
  $$;

CREATE FUNCTION summary_answers_inserted() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    INSERT INTO question_score_sums AS s (org_id, exam_id, question_id, position, shard, n, sum_x, sum_xx, sum_y, sum_yy, sum_xy, sum_fraction)
    SELECT min(t.org_id), t.exam_id, t.question_id, t.position, t.shard, count(*),
           sum(t.x), sum(t.x * t.x), sum(t.y), sum(t.y * t.y), sum(t.x * t.y), sum(t.f)
      FROM (SELECT a.org_id, a.exam_id, a.question_id, a.position, summary_shard(a.result_id) AS shard,
                   a.score::numeric AS x, (r.score - a.score)::numeric AS y,
                   (CASE WHEN a.max_score > 0 THEN a.score / a.max_score ELSE 0 END)::numeric AS f
              FROM added a JOIN results r ON r.id = a.result_id AND r.status = 'graded') t
     GROUP BY 2, 3, 4, 5 ORDER BY 2, 3, 4, 5
    ON CONFLICT (exam_id, question_id, position, shard) DO UPDATE
       SET n = s.n + excluded.n, sum_x = s.sum_x + excluded.sum_x, sum_xx = s.sum_xx + excluded.sum_xx,
           sum_y = s.sum_y + excluded.sum_y, sum_yy = s.sum_yy + excluded.sum_yy,
           sum_xy = s.sum_xy + excluded.sum_xy, sum_fraction = s.sum_fraction + excluded.sum_fraction;
    RETURN NULL;
  END
  $$;

CREATE TRIGGER summary_inserted AFTER INSERT ON results
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION summary_results_inserted();
CREATE TRIGGER summary_updated AFTER UPDATE ON results
  FOR EACH ROW EXECUTE FUNCTION summary_on_result();
CREATE TRIGGER summary_deleting BEFORE DELETE ON results
  FOR EACH ROW EXECUTE FUNCTION summary_on_result();
CREATE TRIGGER summary_inserted AFTER INSERT ON result_answers
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION summary_answers_inserted();
CREATE TRIGGER summary_changing BEFORE UPDATE OR DELETE ON result_answers
  FOR EACH ROW EXECUTE FUNCTION summary_on_answer();

REVOKE ALL ON FUNCTION summary_count(results, integer), summary_term(result_answers, double precision, integer),
  summary_on_result(), summary_on_answer(), summary_results_inserted(), summary_answers_inserted() FROM PUBLIC;

-- Backfill from the rows already there.
INSERT INTO result_score_counts (org_id, exam_id, shard, status, score, max_score, n)
SELECT min(org_id), exam_id, summary_shard(id), status, score, max_score, count(*)
  FROM results GROUP BY 2, 3, 4, 5, 6;

INSERT INTO question_score_sums (org_id, exam_id, question_id, position, shard, n, sum_x, sum_xx, sum_y, sum_yy, sum_xy, sum_fraction)
SELECT min(t.org_id), t.exam_id, t.question_id, t.position, t.shard, count(*),
       sum(t.x), sum(t.x * t.x), sum(t.y), sum(t.y * t.y), sum(t.x * t.y), sum(t.f)
  FROM (SELECT a.org_id, a.exam_id, a.question_id, a.position, summary_shard(a.result_id) AS shard,
               a.score::numeric AS x, (r.score - a.score)::numeric AS y,
               (CASE WHEN a.max_score > 0 THEN a.score / a.max_score ELSE 0 END)::numeric AS f
          FROM result_answers a JOIN results r ON r.id = a.result_id AND r.status = 'graded') t
 GROUP BY 2, 3, 4, 5;
