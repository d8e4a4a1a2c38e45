-- Back to version 3's flowgen_apply: operation 7 publishes every message
-- ready for its first reservation.
DO $mig$
DECLARE
    def text := pg_get_functiondef('flowgen_apply(smallint[], bytea[], bytea[], bytea[], bigint[], bigint[], bigint[], text[], text[], bigint)'::regprocedure);
    cols text := '(stream, id, job, payload, visible_at, holder, open_at, attempt, token)';
    vals text := 'VALUES (t[i], k[i], k2[i], coalesce(v[i], ''''::bytea), a[i], u[i], b[i], c[i], c[i])';
    raise text := 'IF NOT FOUND AND c[i] > 0 THEN RAISE EXCEPTION ''message % on %: already published'', k[i], t[i] USING ERRCODE = ''FGC01''; END IF; ';
BEGIN
    IF position(cols IN def) = 0 OR position(vals IN def) = 0 OR position(raise IN def) = 0 THEN
        RAISE EXCEPTION 'flowgen_apply is not the function this migration changes';
    END IF;
    def := replace(def, cols, '(stream, id, job, payload, visible_at, holder, open_at)');
    def := replace(def, vals, 'VALUES (t[i], k[i], k2[i], coalesce(v[i], ''''::bytea), a[i], u[i], b[i])');
    EXECUTE replace(def, raise, '');
END
$mig$;
