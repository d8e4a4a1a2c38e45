-- flowgen runtime store, version 3: flowgen_apply finds the message an
-- ack, a settle or a nack names through its primary key. "NOT m.done"
-- matches the predicate of the partial indexes of ready messages, so while
-- the table was young (no statistics, few pages) the planner chose
-- flowgen_messages_held for these lookups, on (stream, id) with holder and
-- visible_at in between: a walk through every ready message of the stream
-- for each ack, 35 buffers a call under a backlog and 40 % of the
-- function's time. done is never null, so "m.done IS NOT TRUE" means the
-- same and implies no partial index. The function is rewritten in place:
-- its two lookups by key, and nothing else, change.
DO $mig$
DECLARE
    def text := pg_get_functiondef('flowgen_apply(smallint[], bytea[], bytea[], bytea[], bigint[], bigint[], bigint[], text[], text[], bigint)'::regprocedure);
BEGIN
    IF (length(def) - length(replace(def, 'm.token = a[i] AND NOT m.done', ''))) / length('m.token = a[i] AND NOT m.done') <> 2 THEN
        RAISE EXCEPTION 'flowgen_apply is not the function this migration changes';
    END IF;
    EXECUTE replace(def, 'm.token = a[i] AND NOT m.done', 'm.token = a[i] AND m.done IS NOT TRUE');
END
$mig$;
