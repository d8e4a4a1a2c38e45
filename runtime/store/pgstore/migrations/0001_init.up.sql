-- flowgen runtime store, version 1.
CREATE TABLE flowgen_kv (
    k bytea PRIMARY KEY,
    v bytea NOT NULL
);

CREATE TABLE flowgen_counters (
    k bytea PRIMARY KEY,
    v bigint NOT NULL
);

CREATE TABLE flowgen_leases (
    job     bytea PRIMARY KEY,
    owner   text NOT NULL,
    token   bigint NOT NULL,
    expires bigint NOT NULL -- unix nanoseconds; 0 once released
);

CREATE TABLE flowgen_messages (
    stream     text NOT NULL,
    id         bytea NOT NULL,
    job        bytea,
    payload    bytea,
    visible_at bigint NOT NULL, -- unix nanoseconds
    attempt    integer NOT NULL DEFAULT 0,
    token      bigint NOT NULL DEFAULT 0,
    reason     text NOT NULL DEFAULT '',
    done       boolean NOT NULL DEFAULT false,
    PRIMARY KEY (stream, id)
);

CREATE INDEX flowgen_messages_ready ON flowgen_messages (stream, visible_at, id) WHERE NOT done;
