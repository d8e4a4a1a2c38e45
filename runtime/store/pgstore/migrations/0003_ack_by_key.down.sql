-- Back to version 2's flowgen_apply: its two lookups by key say
-- "NOT m.done" again.
DO $mig$
DECLARE
    def text := pg_get_functiondef('flowgen_apply(smallint[], bytea[], bytea[], bytea[], bigint[], bigint[], bigint[], text[], text[], bigint)'::regprocedure);
BEGIN
    IF (length(def) - length(replace(def, 'm.token = a[i] AND m.done IS NOT TRUE', ''))) / length('m.token = a[i] AND m.done IS NOT TRUE') <> 2 THEN
        RAISE EXCEPTION 'flowgen_apply is not the function this migration changes';
    END IF;
    EXECUTE replace(def, 'm.token = a[i] AND m.done IS NOT TRUE', 'm.token = a[i] AND NOT m.done');
END
$mig$;
