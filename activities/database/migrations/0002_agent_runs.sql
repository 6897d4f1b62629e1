-- One row per finished agent run: what was asked, how it was routed and planned, what ran.

CREATE TABLE agent_runs (
    workflow_id  text        NOT NULL,
    run_id       text        NOT NULL,
    tenant       text,
    question     text,
    intent       text,
    tier         text,
    confidence   real,
    cache_status text,
    plan         jsonb,
    steps        jsonb,
    timings      jsonb,
    answer       text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow_id, run_id)
);

CREATE INDEX agent_runs_created_idx ON agent_runs (created_at DESC);
CREATE INDEX agent_runs_tenant_created_idx ON agent_runs (tenant, created_at DESC);
