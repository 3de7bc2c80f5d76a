-- A request sent with an Idempotency-Key records that it changed data in
-- the same transaction as the change (decision 0179): a key whose request
-- wrote is never taken afresh when its lease ends, since running it again
-- would write twice; its retry is told the answer was lost instead.
ALTER TABLE idempotency_keys ADD COLUMN wrote boolean NOT NULL DEFAULT false;
