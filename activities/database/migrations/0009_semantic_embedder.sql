-- Each semantic entry says which embedder wrote its vector (`semantic/identity.py`): an
-- index searches only its own embedder's entries, so vectors of two models are never
-- compared. Entries from before carry '' (unknown) and are never searched: the tier
-- refills as runs finish under the configured embedder.

ALTER TABLE semantic_cache_entries ADD COLUMN embedder text NOT NULL DEFAULT '';

-- One entry per cached path and embedder: another model stores its own vector for a path.
ALTER TABLE semantic_cache_entries DROP CONSTRAINT semantic_cache_entries_tenant_path_key_key;
ALTER TABLE semantic_cache_entries
    ADD CONSTRAINT semantic_cache_entries_tenant_embedder_path_key_key
    UNIQUE (tenant, embedder, path_key);
