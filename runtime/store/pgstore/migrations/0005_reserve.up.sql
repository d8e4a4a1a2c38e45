-- flowgen runtime store, version 5: the claim is a server-side function.
--
-- Its plan is made once per session and kept (PL/pgSQL's plan cache), not
-- made again for every claim: planning the claim cost more than running it.
--
-- It reads only what it claims, whatever the history beside it: each
-- candidate's lease is looked up by its key (a subplan per row, which the
-- planner cannot turn into a scan of every lease), and the claimed
-- messages come out of the probes that locked them, with no second pass
-- over the messages. Version 2's query joined the picks back to
-- flowgen_messages and anti-joined flowgen_leases, and with 20,000
-- acknowledged messages and 20,000 expired leases beside 16 ready ones the
-- planner chose to scan both tables whole: 10-20 ms a claim, against
-- 0.15 ms now (bench/claim-explain.sql).
--
-- The holder's own messages come first (published for it while it held
-- their job's lease), then the oldest ones open to every worker, each probe
-- reading its own index from where claimable rows start; a message both
-- probes find is claimed once. SKIP LOCKED lets claims run side by side.
-- It locks and writes nothing else: the reservation is written by the
-- client, with the transaction's other writes.
CREATE FUNCTION flowgen_reserve(p_stream text, p_now bigint, p_owner text, p_max bigint)
RETURNS TABLE (id bytea, job bytea, payload bytea, visible_at bigint, attempt integer, token bigint,
               reason text, lease_owner text, lease_token bigint, lease_expires bigint)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH mine AS MATERIALIZED (
        SELECT f.id, f.job, f.payload, f.visible_at, f.attempt, f.token, f.reason FROM flowgen_messages f
        WHERE f.stream = p_stream AND f.holder = p_owner AND NOT f.done AND f.visible_at <= p_now
        AND (SELECT l.owner <> p_owner AND l.expires > p_now FROM flowgen_leases l WHERE l.job = f.job) IS NOT TRUE
        ORDER BY f.visible_at, f.id LIMIT p_max
        FOR UPDATE SKIP LOCKED
    ), others AS MATERIALIZED (
        SELECT f.id, f.job, f.payload, f.visible_at, f.attempt, f.token, f.reason FROM flowgen_messages f
        WHERE f.stream = p_stream AND NOT f.done AND f.open_at <= p_now
        AND (SELECT l.owner <> p_owner AND l.expires > p_now FROM flowgen_leases l WHERE l.job = f.job) IS NOT TRUE
        AND f.id <> ALL (ARRAY(SELECT mine.id FROM mine))
        ORDER BY f.open_at, f.id LIMIT (SELECT p_max - count(*) FROM mine)
        FOR UPDATE SKIP LOCKED
    )
    SELECT pick.id, pick.job, pick.payload, pick.visible_at, pick.attempt, pick.token, pick.reason,
           l.owner, l.token, l.expires
    FROM (SELECT * FROM mine UNION ALL SELECT * FROM others) pick
        LEFT JOIN LATERAL (SELECT l.owner, l.token, l.expires FROM flowgen_leases l WHERE l.job = pick.job OFFSET 0) l ON true;
END
$fn$;
