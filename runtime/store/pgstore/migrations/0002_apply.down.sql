DROP FUNCTION flowgen_apply(smallint[], bytea[], bytea[], bytea[], bigint[], bigint[], bigint[], text[], bigint);
