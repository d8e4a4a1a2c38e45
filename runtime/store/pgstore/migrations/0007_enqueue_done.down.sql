-- Back to version 6: operation 7 publishes a message ready or reserved,
-- never acknowledged.
DO $mig$
DECLARE
    def text := pg_get_functiondef('flowgen_apply(smallint[], bytea[], bytea[], bytea[], bigint[], bigint[], bigint[], text[], text[], bigint)'::regprocedure);
    cols text := '(stream, id, job, payload, visible_at, holder, open_at, attempt, token, done)';
    vals text := 'VALUES (t[i], k[i], k2[i], CASE WHEN c[i] < 0 THEN NULL ELSE coalesce(v[i], ''''::bytea) END, '
        || 'CASE WHEN c[i] < 0 THEN now ELSE a[i] END, u[i], b[i], abs(c[i]), abs(c[i]), c[i] < 0)';
    refuse text := 'IF NOT FOUND AND c[i] <> 0 THEN';
    notify text := 'IF FOUND AND c[i] >= 0 AND b[i] <= now THEN';
BEGIN
    IF position(cols IN def) = 0 OR position(vals IN def) = 0 OR position(refuse IN def) = 0
       OR position(notify IN def) = 0 THEN
        RAISE EXCEPTION 'flowgen_apply is not the function this migration changes';
    END IF;
    def := replace(def, cols, '(stream, id, job, payload, visible_at, holder, open_at, attempt, token)');
    def := replace(def, vals, 'VALUES (t[i], k[i], k2[i], coalesce(v[i], ''''::bytea), a[i], u[i], b[i], c[i], c[i])');
    def := replace(def, refuse, 'IF NOT FOUND AND c[i] > 0 THEN');
    def := replace(def, notify, 'IF FOUND AND b[i] <= now THEN');
    EXECUTE def;
END
$mig$;
