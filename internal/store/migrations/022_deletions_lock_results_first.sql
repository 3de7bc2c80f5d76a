-- Deleting a user cascades to their results one by one, and each result's
-- summary trigger takes its exam shard's lock (021). A correction or a
-- finishing grade locks its result's row, then its shard: a deletion that
-- had taken a shard for one result and then waited for the row of another
-- (being corrected) deadlocked with it. Deleting a user now locks all the
-- results it will cascade to, in id order, before any of them goes: rows
-- first, then shards, as every other writer. (Deleting an exam does the
-- same before it locks the exam's row: DeleteExam.) Decision 0149.
CREATE FUNCTION user_results_lock() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
  BEGIN
    PERFORM 1 FROM results WHERE user_id = OLD.id ORDER BY id FOR UPDATE;
    RETURN OLD;
  END
  $$;

CREATE TRIGGER results_locked BEFORE DELETE ON users
  FOR EACH ROW EXECUTE FUNCTION user_results_lock();

REVOKE ALL ON FUNCTION user_results_lock() FROM PUBLIC;
