CREATE TABLE registry_cursors (
	name text   PRIMARY KEY,
	seq  bigint NOT NULL
);
