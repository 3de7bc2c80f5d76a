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
-- result and answer of the exam.
--
-- result_score_counts: how many results of an exam have each status, score
-- and maximum; count, mean, median, deviation, extremes and histogram all
-- follow from it.
CREATE TABLE result_score_counts (
  org_id     text NOT NULL REFERENCES orgs (id),
  exam_id    text NOT NULL REFERENCES exams (id) ON DELETE CASCADE,
  status     text NOT NULL,
  score      double precision NOT NULL,
  max_score  double precision NOT NULL,
  n          bigint NOT NULL,
  PRIMARY KEY (exam_id, status, score, max_score)
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
  n            bigint NOT NULL,
  sum_x        numeric NOT NULL,
  sum_xx       numeric NOT NULL,
  sum_y        numeric NOT NULL,
  sum_yy       numeric NOT NULL,
  sum_xy       numeric NOT NULL,
  sum_fraction numeric NOT NULL,
  PRIMARY KEY (exam_id, question_id, position)
);
CREATE INDEX question_score_sums_org ON question_score_sums (org_id, exam_id);

ALTER TABLE result_score_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE question_score_sums ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON result_score_counts USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON question_score_sums USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
-- Only the triggers below (SECURITY DEFINER) write them.
GRANT SELECT ON result_score_counts, question_score_sums TO assessd_app;

-- summary_count_result adds sign (1 or -1) times one result to its exam's
-- score counts. Taking away only updates, and not at all once the exam is
-- deleted (its results are being cascaded away, and its counts with them).
CREATE FUNCTION summary_count_result(r results, sign integer) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    IF sign < 0 THEN
      IF NOT EXISTS (SELECT FROM exams e WHERE e.id = r.exam_id) THEN
        RETURN;
      END IF;
      UPDATE result_score_counts SET n = n - 1
       WHERE exam_id = r.exam_id AND status = r.status AND score = r.score AND max_score = r.max_score;
      RETURN;
    END IF;
    INSERT INTO result_score_counts AS c (org_id, exam_id, status, score, max_score, n)
    VALUES (r.org_id, r.exam_id, r.status, r.score, r.max_score, 1)
    ON CONFLICT (exam_id, status, score, max_score) DO UPDATE SET n = c.n + 1;
  END
  $$;

-- summary_add_answers adds sign times the terms of answers (x, fraction)
-- of a graded result whose score is total; taking away only updates, as
-- above.
CREATE FUNCTION summary_add_answers(p_org text, p_exam text, total double precision, sign integer,
                                    question_ids text[], positions integer[], xs double precision[],
                                    fractions double precision[]) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    IF sign < 0 THEN
      IF NOT EXISTS (SELECT FROM exams e WHERE e.id = p_exam) THEN
        RETURN;
      END IF;
      UPDATE question_score_sums s
         SET n = s.n - 1, sum_x = s.sum_x - a.x::numeric, sum_xx = s.sum_xx - a.x::numeric * a.x::numeric,
             sum_y = s.sum_y - (total - a.x)::numeric,
             sum_yy = s.sum_yy - (total - a.x)::numeric * (total - a.x)::numeric,
             sum_xy = s.sum_xy - a.x::numeric * (total - a.x)::numeric,
             sum_fraction = s.sum_fraction - a.fraction::numeric
        FROM unnest(question_ids, positions, xs, fractions) AS a (question_id, position, x, fraction)
       WHERE s.exam_id = p_exam AND s.question_id = a.question_id AND s.position = a.position;
      RETURN;
    END IF;
    -- Sorted, so that concurrent transactions lock the rows in one order.
    INSERT INTO question_score_sums AS s (org_id, exam_id, question_id, position, n, sum_x, sum_xx, sum_y, sum_yy, sum_xy, sum_fraction)
    SELECT p_org, p_exam, a.question_id, a.position, 1, a.x::numeric, a.x::numeric * a.x::numeric,
           (total - a.x)::numeric, (total - a.x)::numeric * (total - a.x)::numeric,
           a.x::numeric * (total - a.x)::numeric, a.fraction::numeric
      FROM unnest(question_ids, positions, xs, fractions) AS a (question_id, position, x, fraction)
     ORDER BY a.question_id, a.position
    ON CONFLICT (exam_id, question_id, position) DO UPDATE
       SET n = s.n + 1, sum_x = s.sum_x + excluded.sum_x, sum_xx = s.sum_xx + excluded.sum_xx,
           sum_y = s.sum_y + excluded.sum_y, sum_yy = s.sum_yy + excluded.sum_yy,
           sum_xy = s.sum_xy + excluded.sum_xy, sum_fraction = s.sum_fraction + excluded.sum_fraction;
  END
  $$;

-- summary_result_answers adds sign times every current answer of graded
-- result r.
CREATE FUNCTION summary_result_answers(r results, sign integer) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  DECLARE
    q text[]; p integer[]; x double precision[]; f double precision[];
  BEGIN
    SELECT array_agg(a.question_id), array_agg(a.position), array_agg(a.score),
           array_agg(CASE WHEN a.max_score > 0 THEN a.score / a.max_score ELSE 0 END)
      INTO q, p, x, f
      FROM result_answers a WHERE a.result_id = r.id;
    IF q IS NOT NULL THEN
      PERFORM summary_add_answers(r.org_id, r.exam_id, r.score, sign, q, p, x, f);
    END IF;
  END
  $$;

-- A result's row changes: its old state leaves the aggregates and its new
-- one enters them, with its answers as they are now. A deleted result
-- leaves before its answers are cascaded away (BEFORE DELETE).
CREATE FUNCTION summary_on_result() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
      IF TG_OP = 'UPDATE' AND (OLD.status, OLD.score, OLD.max_score) IS NOT DISTINCT FROM (NEW.status, NEW.score, NEW.max_score) THEN
        RETURN NULL;
      END IF;
      PERFORM summary_count_result(OLD, -1);
      IF OLD.status = 'graded' THEN
        PERFORM summary_result_answers(OLD, -1);
      END IF;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
      PERFORM summary_count_result(NEW, 1);
      IF NEW.status = 'graded' THEN
        PERFORM summary_result_answers(NEW, 1);
      END IF;
      RETURN NULL;
    END IF;
    RETURN OLD;
  END
  $$;

-- An answer of a graded result changes (a teacher's correction): its old
-- terms leave and its new ones enter, against the result's current score;
-- the result's own update then moves every answer to the new score. BEFORE,
-- so that a statement inserting a result and its answers together (a
-- writable CTE) counts them once: the result, not yet visible here, counts
-- them when its own trigger runs.
CREATE FUNCTION summary_on_answer() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  DECLARE
    total double precision;
  BEGIN
    IF TG_OP = 'UPDATE' AND (OLD.score, OLD.max_score, OLD.position) IS NOT DISTINCT FROM (NEW.score, NEW.max_score, NEW.position) THEN
      RETURN NEW;
    END IF;
    SELECT r.score INTO total FROM results r
     WHERE r.id = coalesce(NEW.result_id, OLD.result_id) AND r.status = 'graded';
    IF FOUND THEN
      IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM summary_add_answers(OLD.org_id, OLD.exam_id, total, -1, ARRAY[OLD.question_id], ARRAY[OLD.position],
          ARRAY[OLD.score], ARRAY[CASE WHEN OLD.max_score > 0 THEN OLD.score / OLD.max_score ELSE 0 END]);
      END IF;
      IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM summary_add_answers(NEW.org_id, NEW.exam_id, total, 1, ARRAY[NEW.question_id], ARRAY[NEW.position],
          ARRAY[NEW.score], ARRAY[CASE WHEN NEW.max_score > 0 THEN NEW.score / NEW.max_score ELSE 0 END]);
      END IF;
    END IF;
    IF TG_OP = 'DELETE' THEN
      RETURN OLD;
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER summary_after_write AFTER INSERT OR UPDATE ON results
  FOR EACH ROW EXECUTE FUNCTION summary_on_result();
CREATE TRIGGER summary_before_delete BEFORE DELETE ON results
  FOR EACH ROW EXECUTE FUNCTION summary_on_result();
CREATE TRIGGER summary_before_write BEFORE INSERT OR UPDATE OR DELETE ON result_answers
  FOR EACH ROW EXECUTE FUNCTION summary_on_answer();

REVOKE ALL ON FUNCTION summary_count_result(results, integer),
  summary_add_answers(text, text, double precision, integer, text[], integer[], double precision[], double precision[]),
  summary_result_answers(results, integer), summary_on_result(), summary_on_answer() FROM PUBLIC;

-- Backfill from the rows already there.
INSERT INTO result_score_counts (org_id, exam_id, status, score, max_score, n)
SELECT org_id, exam_id, status, score, max_score, count(*)
  FROM results GROUP BY org_id, exam_id, status, score, max_score;

INSERT INTO question_score_sums (org_id, exam_id, question_id, position, n, sum_x, sum_xx, sum_y, sum_yy, sum_xy, sum_fraction)
SELECT a.org_id, a.exam_id, a.question_id, a.position, count(*),
       sum(a.score::numeric), sum(a.score::numeric * a.score::numeric),
       sum((r.score - a.score)::numeric), sum((r.score - a.score)::numeric * (r.score - a.score)::numeric),
       sum(a.score::numeric * (r.score - a.score)::numeric),
       sum((CASE WHEN a.max_score > 0 THEN a.score / a.max_score ELSE 0 END)::numeric)
  FROM result_answers a JOIN results r ON r.id = a.result_id
 WHERE r.status = 'graded'
 GROUP BY a.org_id, a.exam_id, a.question_id, a.position;
