-- Back to version 2's flowgen_apply.
CREATE OR REPLACE FUNCTION flowgen_apply(
    op smallint[], k bytea[], k2 bytea[], v bytea[],
    a bigint[], b bigint[], c bigint[], t text[], u text[], now bigint
) RETURNS TABLE (at integer, value bigint, applied boolean, data bytea)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_variable
DECLARE
    i integer;
    cur bigint;
    ok boolean;
    have bytea;
    lease record;
BEGIN
    FOR i IN 1 .. coalesce(array_length(op, 1), 0) LOOP
        CASE op[i]
        WHEN 1 THEN
            INSERT INTO flowgen_kv AS kv (k, v) VALUES (k[i], v[i])
            ON CONFLICT ON CONSTRAINT flowgen_kv_pkey DO UPDATE SET v = EXCLUDED.v;
        WHEN 2 THEN
            INSERT INTO flowgen_kv AS kv (k, v) VALUES (k[i], v[i])
            ON CONFLICT ON CONSTRAINT flowgen_kv_pkey DO NOTHING;
            IF NOT FOUND THEN
                SELECT kv.v INTO have FROM flowgen_kv kv WHERE kv.k = k[i];
                IF have IS DISTINCT FROM v[i] THEN
                    RAISE EXCEPTION 'put-once %: value differs', k[i] USING ERRCODE = 'FGC01';
                END IF;
            END IF;
        WHEN 3 THEN
            DELETE FROM flowgen_kv kv WHERE kv.k = k[i];
        WHEN 4, 5 THEN
            -- An increment that could start a counter is one atomic
            -- upsert that applies only in range; any other locks the row
            -- and checks first.
            IF a[i] BETWEEN 0 AND b[i] THEN
                INSERT INTO flowgen_counters AS ct (k, v) VALUES (k[i], a[i])
                ON CONFLICT ON CONSTRAINT flowgen_counters_pkey DO UPDATE SET v = ct.v + EXCLUDED.v
                WHERE ct.v + EXCLUDED.v BETWEEN 0 AND b[i]
                RETURNING ct.v INTO cur;
                ok := FOUND;
            ELSE
                SELECT ct.v INTO cur FROM flowgen_counters ct WHERE ct.k = k[i] FOR UPDATE;
                cur := coalesce(cur, 0);
                ok := cur + a[i] BETWEEN 0 AND b[i];
                IF ok THEN
                    UPDATE flowgen_counters ct SET v = ct.v + a[i] WHERE ct.k = k[i] RETURNING ct.v INTO cur;
                END IF;
            END IF;
            IF NOT ok THEN
                SELECT ct.v INTO cur FROM flowgen_counters ct WHERE ct.k = k[i];
                cur := coalesce(cur, 0);
                IF op[i] = 5 THEN
                    RAISE EXCEPTION 'add % to % (%, max %): out of range', a[i], k[i], cur, b[i] USING ERRCODE = 'FGO01';
                END IF;
            END IF;
            IF op[i] = 4 THEN
                at := i; value := cur; applied := ok; data := NULL; RETURN NEXT;
            END IF;
        WHEN 6 THEN
            INSERT INTO flowgen_counters AS ct (k, v) VALUES (k[i], a[i])
            ON CONFLICT ON CONSTRAINT flowgen_counters_pkey DO UPDATE SET v = ct.v + EXCLUDED.v
            RETURNING ct.v INTO cur;
            IF cur < 0 THEN
                RAISE EXCEPTION 'collate %: semaphore at %', k[i], cur USING ERRCODE = 'FGO01';
            END IF;
            IF cur = b[i] THEN
                INSERT INTO flowgen_counters AS ct (k, v) VALUES (k2[i], c[i])
                ON CONFLICT ON CONSTRAINT flowgen_counters_pkey DO UPDATE SET v = ct.v + EXCLUDED.v;
            END IF;
            at := i; value := cur; applied := cur = b[i]; data := NULL; RETURN NEXT;
        WHEN 7 THEN
            INSERT INTO flowgen_messages AS m (stream, id, job, payload, visible_at, holder, open_at)
            VALUES (t[i], k[i], k2[i], coalesce(v[i], ''::bytea), a[i], u[i], b[i])
            ON CONFLICT ON CONSTRAINT flowgen_messages_pkey DO NOTHING;
            -- Only a message open to every worker now is news to idle ones:
            -- one published under a lease is for its holder, who is at work.
            -- Each notifying commit takes PostgreSQL's one notification
            -- queue lock through its commit, so notifying less is what lets
            -- commits of many workers proceed side by side.
            IF FOUND AND b[i] <= now THEN
                PERFORM pg_notify('flowgen_messages', t[i]);
            END IF;
        WHEN 8 THEN
            SELECT l.owner, l.token, l.expires INTO lease FROM flowgen_leases l WHERE l.job = k[i] FOR SHARE;
            IF NOT FOUND OR lease.owner <> t[i] OR lease.token <> a[i] OR lease.expires <= now THEN
                RAISE EXCEPTION 'lease % of % for %: fenced', a[i], k[i], t[i] USING ERRCODE = 'FGF01';
            END IF;
        WHEN 9, 11 THEN
            UPDATE flowgen_messages m SET done = true, payload = NULL
            WHERE m.stream = t[i] AND m.id = k[i] AND m.token = a[i] AND NOT m.done;
            IF op[i] = 9 THEN
                at := i; value := 0; applied := FOUND; data := NULL; RETURN NEXT;
            END IF;
        WHEN 10 THEN
            UPDATE flowgen_messages m SET token = m.token + 1, visible_at = b[i], open_at = b[i]
            WHERE m.stream = t[i] AND m.id = k[i] AND m.token = a[i] AND NOT m.done;
            at := i; value := 0; applied := FOUND; data := NULL; RETURN NEXT;
        WHEN 12 THEN
            SELECT kv.v INTO have FROM flowgen_kv kv WHERE kv.k = k[i];
            at := i; value := 0; applied := FOUND; data := have; RETURN NEXT;
        WHEN 13 THEN
            SELECT ct.v INTO cur FROM flowgen_counters ct WHERE ct.k = k[i];
            at := i; value := coalesce(cur, 0); applied := FOUND; data := NULL; RETURN NEXT;
        ELSE
            RAISE EXCEPTION 'flowgen_apply: unknown operation %', op[i];
        END CASE;
    END LOOP;
END
$fn$;
