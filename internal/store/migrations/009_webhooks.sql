-- Webhooks (decisions 0105-0109): an organization's endpoints, the events
-- recorded in the same transaction as the change they describe, the
-- endpoints each event goes to, and every delivery attempt.
CREATE TABLE webhook_endpoints (
  id              text PRIMARY KEY,
  org_id          text NOT NULL REFERENCES orgs (id),
  url             text NOT NULL,
  events          text[] NOT NULL,
  description     text NOT NULL DEFAULT '',
  enabled         boolean NOT NULL DEFAULT true,
  -- Why the platform disabled the endpoint ('' when enabled or disabled by a person).
  disabled_reason text NOT NULL DEFAULT '',
  -- The signing key, AES-256-GCM sealed (nonce || ciphertext, decision
  -- 0106); during a rotation window the previous key signs too.
  secret          bytea NOT NULL,
  previous_secret bytea,
  previous_until  timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_org ON webhook_endpoints (org_id, id);

-- The message as signed and sent: payload is the exact body, so every
-- attempt carries the same bytes and the same webhook-id.
CREATE TABLE webhook_events (
  id          text PRIMARY KEY,
  org_id      text NOT NULL REFERENCES orgs (id),
  type        text NOT NULL,
  payload     text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- The endpoints an event goes to, fixed when it is recorded; pending until
-- delivered or given up on.
CREATE TABLE webhook_targets (
  event_id     text NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
  endpoint_id  text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  org_id       text NOT NULL REFERENCES orgs (id),
  status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (event_id, endpoint_id)
);
CREATE INDEX webhook_targets_pending ON webhook_targets (event_id) WHERE status = 'pending';

CREATE TABLE webhook_deliveries (
  id               text PRIMARY KEY,
  org_id           text NOT NULL REFERENCES orgs (id),
  endpoint_id      text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id         text NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
  event_type       text NOT NULL,
  attempt          integer NOT NULL,
  succeeded        boolean NOT NULL,
  response_code    integer NOT NULL DEFAULT 0,
  duration_ms      integer NOT NULL,
  response_excerpt text NOT NULL DEFAULT '',
  error            text NOT NULL DEFAULT '',
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (org_id, endpoint_id, id);

ALTER TABLE webhook_endpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_targets ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON webhook_endpoints USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON webhook_events USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON webhook_targets USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
CREATE POLICY tenant ON webhook_deliveries USING (org_id = app_org_id()) WITH CHECK (org_id = app_org_id());
GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_endpoints TO assessd_app;
GRANT SELECT, INSERT ON webhook_events, webhook_deliveries TO assessd_app;
GRANT SELECT, INSERT, UPDATE ON webhook_targets TO assessd_app;

-- webhook_event_add records event p_id of the caller's organization in the
-- caller's transaction, with a target per enabled endpoint subscribed to
-- p_type, and its outbox row on the organization's region. Without a
-- subscriber nothing is written and it returns false. It runs as the
-- caller, under row-level security.
CREATE FUNCTION webhook_event_add(p_id text, p_type text, p_payload text) RETURNS boolean
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
       WHERE e.org_id = app_org_id() AND e.enabled AND p_type = ANY (e.events);
    PERFORM outbox_add('webhook', p_id, v_region, false);
    RETURN true;
  END
  $$;
GRANT EXECUTE ON FUNCTION webhook_event_add(text, text, text) TO assessd_app;

-- The outbox carries webhook events; an event is unfinished while one of
-- its targets is pending.
ALTER TABLE workflow_outbox DROP CONSTRAINT workflow_outbox_kind_check;
ALTER TABLE workflow_outbox ADD CONSTRAINT workflow_outbox_kind_check
  CHECK (kind IN ('grading', 'generation', 'regeneration', 'scanning', 'webhook'));

CREATE OR REPLACE FUNCTION outbox_subject_unfinished(p_kind text, p_subject_id text) RETURNS boolean
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
  AS $$
    SELECT CASE p_kind
             WHEN 'grading' THEN EXISTS (SELECT 1 FROM results r WHERE r.id = p_subject_id AND r.status = 'grading')
             WHEN 'generation' THEN EXISTS (SELECT 1 FROM exam_generations g WHERE g.id = p_subject_id AND g.status = 'running')
             WHEN 'regeneration' THEN EXISTS (SELECT 1 FROM question_regenerations g WHERE g.id = p_subject_id AND g.status = 'running')
             WHEN 'scanning' THEN EXISTS (SELECT 1 FROM answer_sheet_scans s WHERE s.id = p_subject_id AND s.status = 'running')
             WHEN 'webhook' THEN EXISTS (SELECT 1 FROM webhook_targets t WHERE t.event_id = p_subject_id AND t.status = 'pending')
           END
  $$;
