-- Who each run acted for, its request id and the approvals it waited for.

ALTER TABLE agent_runs
    ADD COLUMN actor_role        text,
    ADD COLUMN actor_customer_id integer,
    ADD COLUMN actor_name        text,
    ADD COLUMN audience          text NOT NULL DEFAULT 'all',
    ADD COLUMN request_id        text,
    ADD COLUMN approvals         jsonb;

-- Conversation turns are read per tenant, conversation and audience.
CREATE INDEX agent_runs_conversation_audience_idx
    ON agent_runs (tenant, conversation_id, audience, created_at DESC);
