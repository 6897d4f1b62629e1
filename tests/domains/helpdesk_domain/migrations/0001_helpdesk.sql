CREATE TABLE helpdesk_tickets (
    ticket_id integer PRIMARY KEY,
    requester text    NOT NULL,
    service   text    NOT NULL,
    title     text    NOT NULL,
    status    text    NOT NULL DEFAULT 'open'
);

CREATE TABLE helpdesk_services (
    name     text    PRIMARY KEY,
    status   text    NOT NULL,
    restarts integer NOT NULL DEFAULT 0
);

CREATE TABLE helpdesk_restarts (
    idempotency_key text PRIMARY KEY,
    service         text    NOT NULL REFERENCES helpdesk_services (name),
    ticket_id       integer NOT NULL REFERENCES helpdesk_tickets (ticket_id)
);
