DROP TABLE registry_audit;
DROP TABLE registry_tokens;
DROP TABLE registry_versions;
