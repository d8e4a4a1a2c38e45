-- The work-stream claim before and after migration 2 (holder and open_at),
-- with EXPLAIN ANALYZE: 50 jobs leased by worker A with 100 ready messages
-- each, 100,001 expired leases of finished jobs, and one free message
-- behind them all, claimed by worker B. Run by bench/claim.sh from the
-- migrations directory; it works in a schema of its own and drops it.
\set ON_ERROR_STOP 1
DROP SCHEMA IF EXISTS zzclaim CASCADE; CREATE SCHEMA zzclaim; SET search_path = zzclaim;
\i 0001_init.up.sql
INSERT INTO flowgen_leases SELECT decode(lpad(to_hex(j),4,'0'),'hex'), 'A', 1, 9000000000000000000 FROM generate_series(1,50) j;
INSERT INTO flowgen_leases SELECT decode(lpad(to_hex(j),8,'0'),'hex'), 'C', 1, 5 FROM generate_series(100000,200000) j;
INSERT INTO flowgen_messages (stream, id, job, payload, visible_at)
  SELECT 'flowgen.work', decode(lpad(to_hex(j*1000+i),8,'0'),'hex'), decode(lpad(to_hex(j),4,'0'),'hex'), '\x00', j*1000+i FROM generate_series(1,50) j, generate_series(1,100) i;
INSERT INTO flowgen_messages (stream, id, job, payload, visible_at) VALUES ('flowgen.work', '\xffffffff', '\xffff', '\x00', 900000);
VACUUM ANALYZE;

\echo BEFORE (migration 1, the claim this session started with)
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
UPDATE flowgen_messages m SET visible_at = 2000000, attempt = m.attempt + 1, token = m.token + 1
FROM (SELECT stream, id FROM flowgen_messages f WHERE stream = 'flowgen.work' AND NOT done AND visible_at <= 1000000
	AND NOT EXISTS (SELECT 1 FROM flowgen_leases l WHERE l.job = f.job AND l.owner <> 'B' AND l.expires > 1000000)
	ORDER BY visible_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) pick
WHERE m.stream = pick.stream AND m.id = pick.id RETURNING m.id;
ROLLBACK;
\i 0002_apply.up.sql
UPDATE flowgen_messages SET holder = 'A', open_at = 9000000000000000000 WHERE job <> '\xffff';
VACUUM ANALYZE flowgen_messages;

\echo AFTER (migration 2, a batch of up to 16; the claim locks, its update waits for the commit)
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
WITH mine AS MATERIALIZED (
	SELECT id FROM flowgen_messages f WHERE stream = 'flowgen.work' AND holder = 'B' AND NOT done AND visible_at <= 1000000
	AND NOT EXISTS (SELECT 1 FROM flowgen_leases l WHERE l.job = f.job AND l.owner <> 'B' AND l.expires > 1000000)
	ORDER BY visible_at, id LIMIT 16 FOR UPDATE SKIP LOCKED
), others AS MATERIALIZED (
	SELECT id FROM flowgen_messages f WHERE stream = 'flowgen.work' AND NOT done AND open_at <= 1000000
	AND NOT EXISTS (SELECT 1 FROM flowgen_leases l WHERE l.job = f.job AND l.owner <> 'B' AND l.expires > 1000000)
	ORDER BY open_at, id LIMIT (SELECT 16 - count(*) FROM mine) FOR UPDATE SKIP LOCKED
)
SELECT m.id FROM (SELECT id FROM mine UNION SELECT id FROM others) pick
	JOIN flowgen_messages m ON m.stream = 'flowgen.work' AND m.id = pick.id;

-- Migration 5 makes the claim a function and reads each candidate's lease
-- by key. With history beside the ready messages (acknowledged messages
-- and expired leases of finished jobs, which the tables keep), migration
-- 2's query above planned whole-table scans of both for its joins.
INSERT INTO flowgen_messages (stream, id, job, payload, visible_at, holder, open_at, done)
  SELECT 'flowgen.work', decode(md5('done' || i), 'hex'), decode(md5('job' || i / 3), 'hex'), NULL, 0, '', 0, true FROM generate_series(1, 20000) i;
INSERT INTO flowgen_leases SELECT decode(md5('job' || i), 'hex'), 'gone', 1, 5 FROM generate_series(1, 20000) i;
INSERT INTO flowgen_messages (stream, id, job, payload, visible_at, holder, open_at)
  SELECT 'flowgen.work', decode(md5('ready' || i), 'hex'), decode(md5('new' || i), 'hex'), '\x00', 0, '', 0 FROM generate_series(1, 16) i;
VACUUM ANALYZE;
\echo BEFORE (migration 2's query, 20,000 acknowledged messages and 20,000 expired leases beside the ready ones)
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
WITH mine AS MATERIALIZED (
	SELECT id, job FROM flowgen_messages f WHERE stream = 'flowgen.work' AND holder = 'B' AND NOT done AND visible_at <= 1000000
	AND NOT EXISTS (SELECT 1 FROM flowgen_leases l WHERE l.job = f.job AND l.owner <> 'B' AND l.expires > 1000000)
	ORDER BY visible_at, id LIMIT 16 FOR UPDATE SKIP LOCKED
), others AS MATERIALIZED (
	SELECT id, job FROM flowgen_messages f WHERE stream = 'flowgen.work' AND NOT done AND open_at <= 1000000
	AND NOT EXISTS (SELECT 1 FROM flowgen_leases l WHERE l.job = f.job AND l.owner <> 'B' AND l.expires > 1000000)
	ORDER BY open_at, id LIMIT (SELECT 16 - count(*) FROM mine) FOR UPDATE SKIP LOCKED
)
SELECT m.id, l.owner FROM (SELECT id, job FROM mine UNION SELECT id, job FROM others) pick
	JOIN flowgen_messages m ON m.stream = 'flowgen.work' AND m.id = pick.id
	LEFT JOIN flowgen_leases l ON l.job = pick.job;
\i 0003_ack_by_key.up.sql
\i 0004_enqueue_reserved.up.sql
\i 0005_reserve.up.sql
\echo AFTER (migration 5: the function, on the same rows; its second call, with its plan made)
SELECT count(*) FROM flowgen_reserve('flowgen.work', 1000000, 'B', 16);
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM flowgen_reserve('flowgen.work', 1000000, 'B', 16);
DROP SCHEMA zzclaim CASCADE;
