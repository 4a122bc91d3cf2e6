-- Run once by the postgres image when its data volume is new (compose.yaml): the
-- database of the second host. The first, `mammamia`, is POSTGRES_DB.
CREATE DATABASE mammamia_b OWNER mammamia;
