-- The semantic tier of the path cache: each stored question, its embedding and the key of
-- the path it produced. Workers keep an in-memory FAISS index per tenant, loaded from here
-- at start and followed by id (`activities/semantic_index.py`); this table is what survives
-- a restart.

CREATE TABLE semantic_cache_entries (
    id         bigserial   PRIMARY KEY,
    tenant     text        NOT NULL,
    question   text        NOT NULL,
    path_key   text        NOT NULL,
    embedding  bytea       NOT NULL,  -- float32 little-endian, L2-normalized
    created_at timestamptz NOT NULL DEFAULT now(),
    -- One entry per cached path: storing the same question again is a no-op.
    UNIQUE (tenant, path_key)
);

CREATE INDEX semantic_cache_entries_tenant_id_idx ON semantic_cache_entries (tenant, id);
CREATE INDEX semantic_cache_entries_path_key_idx ON semantic_cache_entries (path_key);

-- Removals, so that the other workers drop an invalidated entry from their in-memory
-- indexes at their next sync. Rows older than a day are pruned: a worker that has not
-- synced for that long reloads everything instead.
CREATE TABLE semantic_cache_removals (
    seq        bigserial   PRIMARY KEY,
    entry_id   bigint      NOT NULL,
    tenant     text        NOT NULL,
    removed_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX semantic_cache_removals_removed_at_idx ON semantic_cache_removals (removed_at);
