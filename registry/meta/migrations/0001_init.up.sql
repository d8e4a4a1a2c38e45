CREATE TABLE registry_versions (
	namespace  text        NOT NULL,
	connector  text        NOT NULL,
	version    text        NOT NULL,
	digest     text        NOT NULL,
	state      text        NOT NULL,
	doc        jsonb       NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (namespace, connector, version)
);
CREATE INDEX registry_versions_state ON registry_versions (state);

CREATE TABLE registry_tokens (
	id   text  PRIMARY KEY,
	hash text  NOT NULL UNIQUE,
	doc  jsonb NOT NULL
);

CREATE TABLE registry_audit (
	seq bigserial   PRIMARY KEY,
	at  timestamptz NOT NULL,
	doc jsonb       NOT NULL
);
