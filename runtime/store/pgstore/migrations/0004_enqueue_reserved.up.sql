-- flowgen runtime store, version 4: an enqueue may publish its message
-- already reserved. Operation 7 takes c, the message's first attempt and
-- token: 0 publishes a message ready for its first reservation, as
-- before; 1 publishes it reserved once, by its holder u, invisible until
-- a and b (the reservation's visibility). A worker that publishes a job's
-- next step and takes it on in the same transaction (store.Tx's
-- EnqueueReserved) writes one row, not a row and then its reservation.
-- A reserved message whose id is already published is an error (FGC01):
-- its receipt would name somebody else's reservation. The function is
-- rewritten in place; operation 7, and nothing else, changes.
DO $mig$
DECLARE
    def text := pg_get_functiondef('flowgen_apply(smallint[], bytea[], bytea[], bytea[], bigint[], bigint[], bigint[], text[], text[], bigint)'::regprocedure);
    cols text := '(stream, id, job, payload, visible_at, holder, open_at)';
    vals text := 'VALUES (t[i], k[i], k2[i], coalesce(v[i], ''''::bytea), a[i], u[i], b[i])';
    notify text := 'IF FOUND AND b[i] <= now THEN';
BEGIN
    IF position(cols IN def) = 0 OR position(vals IN def) = 0 OR position(notify IN def) = 0
       OR position('attempt, token)' IN def) > 0 THEN
        RAISE EXCEPTION 'flowgen_apply is not the function this migration changes';
    END IF;
    def := replace(def, cols, '(stream, id, job, payload, visible_at, holder, open_at, attempt, token)');
    def := replace(def, vals, 'VALUES (t[i], k[i], k2[i], coalesce(v[i], ''''::bytea), a[i], u[i], b[i], c[i], c[i])');
    def := replace(def, notify, 'IF NOT FOUND AND c[i] > 0 THEN RAISE EXCEPTION ''message % on %: already published'', k[i], t[i] USING ERRCODE = ''FGC01''; END IF; ' || notify);
    EXECUTE def;
END
$mig$;
