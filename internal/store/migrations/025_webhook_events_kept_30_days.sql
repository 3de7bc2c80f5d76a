-- Webhook events and their delivery attempts were kept forever: one event
-- per graded result, generation, scan or user change of every
-- organization with an endpoint, with its payload, and a row per attempt.
-- They are now kept 30 days, as the delivery log that GET
-- /webhook-endpoints/{id}/deliveries shows and redelivery needs; an event
-- still being delivered stays until it is delivered or given up on (24
-- hours at most). Deleting an event deletes its targets and deliveries.
-- Decision 0153.
CREATE INDEX IF NOT EXISTS webhook_events_created ON webhook_events (created_at);
CREATE INDEX IF NOT EXISTS webhook_deliveries_event ON webhook_deliveries (event_id);

CREATE FUNCTION sweep_webhook_events(p_before timestamptz, p_limit integer) RETURNS integer
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    WITH gone AS (
      DELETE FROM webhook_events
       WHERE id IN (SELECT e.id FROM webhook_events e
                     WHERE e.created_at < p_before
                       AND NOT EXISTS (SELECT 1 FROM webhook_targets t WHERE t.event_id = e.id AND t.status = 'pending')
                     ORDER BY e.created_at LIMIT p_limit)
      RETURNING 1)
    SELECT count(*)::integer FROM gone
  $$;

REVOKE ALL ON FUNCTION sweep_webhook_events(timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sweep_webhook_events(timestamptz, integer) TO assessd_app;
