-- flowgen runtime store, version 7: an enqueue may publish its message
-- already acknowledged. Operation 7 with c = -1 writes the row of a
-- message published reserved (attempt and token 1) and acknowledged in
-- the same transaction: done, without its payload, acknowledged now, the
-- state version 4's insert and the acknowledgement's update would leave.
-- A worker that publishes its job's next step reserved and runs that step
-- in the same commit (a folding batch's chain) writes the message once
-- and adds nothing to the indexes of ready messages only to remove it.
-- The function is rewritten in place; operation 7, and nothing else,
-- changes.
DO $mig$
DECLARE
    def text := pg_get_functiondef('flowgen_apply(smallint[], bytea[], bytea[], bytea[], bigint[], bigint[], bigint[], text[], text[], bigint)'::regprocedure);
    cols text := '(stream, id, job, payload, visible_at, holder, open_at, attempt, token)';
    vals text := 'VALUES (t[i], k[i], k2[i], coalesce(v[i], ''''::bytea), a[i], u[i], b[i], c[i], c[i])';
    refuse text := 'IF NOT FOUND AND c[i] > 0 THEN';
    notify text := 'IF FOUND AND b[i] <= now THEN';
BEGIN
    IF position(cols IN def) = 0 OR position(vals IN def) = 0 OR position(refuse IN def) = 0
       OR position(notify IN def) = 0 THEN
        RAISE EXCEPTION 'flowgen_apply is not the function this migration changes';
    END IF;
    def := replace(def, cols, '(stream, id, job, payload, visible_at, holder, open_at, attempt, token, done)');
    def := replace(def, vals, 'VALUES (t[i], k[i], k2[i], CASE WHEN c[i] < 0 THEN NULL ELSE coalesce(v[i], ''''::bytea) END, '
        || 'CASE WHEN c[i] < 0 THEN now ELSE a[i] END, u[i], b[i], abs(c[i]), abs(c[i]), c[i] < 0)');
    def := replace(def, refuse, 'IF NOT FOUND AND c[i] <> 0 THEN');
    def := replace(def, notify, 'IF FOUND AND c[i] >= 0 AND b[i] <= now THEN');
    EXECUTE def;
END
$mig$;
