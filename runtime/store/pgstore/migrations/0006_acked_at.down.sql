-- Back to version 5: an acknowledgement leaves visible_at as it was.
DROP INDEX flowgen_messages_acked;

DO $mig$
DECLARE
    def text := pg_get_functiondef('flowgen_apply(smallint[], bytea[], bytea[], bytea[], bigint[], bigint[], bigint[], text[], text[], bigint)'::regprocedure);
BEGIN
    IF (length(def) - length(replace(def, 'SET done = true, payload = NULL, visible_at = now', ''))) / length('SET done = true, payload = NULL, visible_at = now') <> 1 THEN
        RAISE EXCEPTION 'flowgen_apply is not the function this migration changes';
    END IF;
    EXECUTE replace(def, 'SET done = true, payload = NULL, visible_at = now', 'SET done = true, payload = NULL');
END
$mig$;
