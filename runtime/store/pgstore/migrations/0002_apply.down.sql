DROP FUNCTION flowgen_apply(smallint[], bytea[], bytea[], bytea[], bigint[], bigint[], bigint[], text[], text[], bigint);
DROP INDEX flowgen_messages_open;
DROP INDEX flowgen_messages_held;
ALTER TABLE flowgen_messages DROP COLUMN open_at;
ALTER TABLE flowgen_messages DROP COLUMN holder;
CREATE INDEX flowgen_messages_ready ON flowgen_messages (stream, visible_at, id) WHERE NOT done;
