-- Actors are a role of the served domain and the subject they act for (any text), no
-- longer a customer id: the subject is recorded as it was given.

ALTER TABLE agent_runs ADD COLUMN actor_subject text;
UPDATE agent_runs SET actor_subject = actor_customer_id::text WHERE actor_customer_id IS NOT NULL;
