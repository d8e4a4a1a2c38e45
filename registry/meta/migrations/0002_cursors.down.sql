DROP TABLE registry_cursors;
