-- Where a run's route confidence came from (`schemas/route.py`, `ConfidenceBasis`). From
-- here on `confidence` holds a probability only where one was measured (the router's
-- logprobs) and is NULL where a rule, a missing logprob or the caller decided: a rule's
-- fixed level is never recorded as if measured. Rows from before carry NULL here and their
-- `confidence` as it was written (a rules route's fixed level among them: `tier` tells),
-- left as they are rather than rewritten in a migration that would lock a large table.

ALTER TABLE agent_runs ADD COLUMN confidence_basis text;
