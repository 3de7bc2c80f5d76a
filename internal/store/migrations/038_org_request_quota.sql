-- An operator's override of an organization's API request quota (issue 54,
-- decision 0186): requests a minute, NULL for the plan's quota. The bounds
-- are tenancy.MaxRequestsPerMinute's; the check keeps a hand-written
-- UPDATE to them too.
ALTER TABLE orgs ADD COLUMN requests_per_minute integer
  CHECK (requests_per_minute BETWEEN 1 AND 1000000);
