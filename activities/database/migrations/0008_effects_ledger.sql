-- Every side effect a run cleared, refused or had decided, across runs: what approval
-- thresholds and self-service limits count (per actor and per target, in a window), and
-- the audit trail operators list with `agentkeel audit`.

CREATE TABLE agent_effects (
    effect_id      bigserial PRIMARY KEY,
    tenant         text        NOT NULL,
    effect_key     text,
    tool           text        NOT NULL,
    target         text        NOT NULL DEFAULT '',
    amount_cents   bigint      NOT NULL DEFAULT 0,
    status         text        NOT NULL,
    actor_role     text        NOT NULL,
    actor_subject  text,
    actor_name     text,
    actor_identity text        NOT NULL,
    approver       text,
    approved_by    jsonb,
    approval_why   text,
    error_type     text,
    reason         text        NOT NULL DEFAULT '',
    provenance     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    args           jsonb       NOT NULL DEFAULT '{}'::jsonb,
    workflow_id    text        NOT NULL,
    run_id         text        NOT NULL,
    request_id     text,
    step_id        text,
    call_id        text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    settled_at     timestamptz
);

-- One live claim per effect: a second run of the same request finds the first one's.
CREATE UNIQUE INDEX agent_effects_live_key_idx
    ON agent_effects (effect_key) WHERE status IN ('claimed', 'made', 'unknown');

-- The window sums, and the audit's listings.
CREATE INDEX agent_effects_actor_idx ON agent_effects (tenant, actor_identity, created_at);
CREATE INDEX agent_effects_target_idx ON agent_effects (tenant, target, created_at);
CREATE INDEX agent_effects_time_idx ON agent_effects (tenant, created_at DESC);
