DROP TABLE flowgen_messages;
DROP TABLE flowgen_leases;
DROP TABLE flowgen_counters;
DROP TABLE flowgen_kv;
