-- An event's targets are the endpoints subscribed when it is recorded. The
-- statement that inserts them read the endpoints under its snapshot, so an
-- endpoint deleted by a transaction that committed meanwhile still looked
-- subscribed, and its target then failed the foreign key: the change that
-- recorded the event (a submission, a user's creation) failed with it.
-- Locking the endpoints it reads (FOR KEY SHARE, what the foreign key
-- check takes anyway) waits for such a deletion and skips the endpoint it
-- removed; an endpoint deleted later waits for this transaction and
-- cascades its targets away.
CREATE OR REPLACE FUNCTION webhook_event_add(p_id text, p_type text, p_payload text) RETURNS boolean
  LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, public
  AS $$
  DECLARE
    v_region text;
  BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhook_endpoints
                    WHERE org_id = app_org_id() AND enabled AND p_type = ANY (events)) THEN
      RETURN false;
    END IF;
    SELECT ai_region INTO v_region FROM orgs WHERE id = app_org_id();
    INSERT INTO webhook_events (id, org_id, type, payload) VALUES (p_id, app_org_id(), p_type, p_payload);
    INSERT INTO webhook_targets (event_id, endpoint_id, org_id)
      SELECT p_id, e.id, e.org_id FROM webhook_endpoints e
       WHERE e.org_id = app_org_id() AND e.enabled AND p_type = ANY (e.events)
         FOR KEY SHARE;
    PERFORM outbox_add('webhook', p_id, v_region, false);
    RETURN true;
  END
  $$;
