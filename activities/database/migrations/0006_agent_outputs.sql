-- Large step outputs, kept once here and carried by reference (`OutputRef`) in the
-- run's history, its result and the model calls: a fan-out over hundreds of rows is
-- not copied into history again and again.

CREATE TABLE agent_outputs (
    ref         text PRIMARY KEY,
    tenant      text NOT NULL,
    workflow_id text NOT NULL,
    step_id     text NOT NULL,
    output      jsonb NOT NULL,
    bytes       integer NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX agent_outputs_workflow_idx ON agent_outputs (workflow_id);
