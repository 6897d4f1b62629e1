-- What a run's model calls used (`schemas/usage.py`, `AgentResult.usage`): prompt and
-- completion tokens and their cost by the inference workers' price table, in columns to
-- sum and filter by, and the whole usage (by tier and model, estimated, cached) as JSON.
-- Rows from before hold NULL: their usage was never counted.

ALTER TABLE agent_runs
    ADD COLUMN prompt_tokens integer,
    ADD COLUMN completion_tokens integer,
    ADD COLUMN cost_usd double precision,
    ADD COLUMN usage jsonb;
