-- psql 15.18 \d trades, query 7 (psql -E)
SELECT c.oid::pg_catalog.regclass
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhparent AND i.inhrelid = '{trades_oid}'
  AND c.relkind != 'p' AND c.relkind != 'I'
ORDER BY inhseqno;
