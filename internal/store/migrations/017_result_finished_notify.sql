-- A result that leaves grading is announced on the channel
-- assessd_results, its id the payload, when the change commits: requests
-- that wait for it (GET /results/{id}?wait=..., decision 0135) wake at
-- once instead of polling. A trigger rather than the finishing code, so
-- that every way a result is finished announces it.
CREATE FUNCTION announce_result_finished() RETURNS trigger
  LANGUAGE plpgsql SET search_path = pg_catalog, public
  AS $$
  BEGIN
    PERFORM pg_notify('assessd_results', NEW.id);
    RETURN NULL;
  END
  $$;

CREATE TRIGGER result_finished AFTER UPDATE OF status ON results
  FOR EACH ROW WHEN (OLD.status = 'grading' AND NEW.status <> 'grading')
  EXECUTE FUNCTION announce_result_finished();
