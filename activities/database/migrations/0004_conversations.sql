-- Conversations and the router cascade in the run records: which conversation a run
-- belongs to (its later turns read it back as context), and why its tier decided.

ALTER TABLE agent_runs ADD COLUMN conversation_id   text;
ALTER TABLE agent_runs ADD COLUMN route_reason      text;
ALTER TABLE agent_runs ADD COLUMN overridden_intent text;

CREATE INDEX agent_runs_conversation_idx
    ON agent_runs (tenant, conversation_id, created_at DESC)
    WHERE conversation_id IS NOT NULL;
