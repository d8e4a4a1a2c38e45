-- flowgen runtime store, version 6: an acknowledged message keeps the
-- time of its acknowledgement in visible_at (which nothing reads once a
-- message is done), and an index of acknowledged messages by that time
-- lets PurgeAcked delete the oldest in batches without reading the rest.
-- flowgen_apply is rewritten in place: its acknowledgement, and nothing
-- else, changes. Messages acknowledged before this version keep the end of
-- their last reservation, at most one visibility timeout off.
DO $mig$
DECLARE
    def text := pg_get_functiondef('flowgen_apply(smallint[], bytea[], bytea[], bytea[], bigint[], bigint[], bigint[], text[], text[], bigint)'::regprocedure);
BEGIN
    IF (length(def) - length(replace(def, 'SET done = true, payload = NULL', ''))) / length('SET done = true, payload = NULL') <> 1 THEN
        RAISE EXCEPTION 'flowgen_apply is not the function this migration changes';
    END IF;
    EXECUTE replace(def, 'SET done = true, payload = NULL', 'SET done = true, payload = NULL, visible_at = now');
END
$mig$;

CREATE INDEX flowgen_messages_acked ON flowgen_messages (stream, visible_at) WHERE done;
