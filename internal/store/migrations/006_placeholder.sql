-- Local placeholder for the migration number another branch owns; never committed.
SELECT 1;
