-- psql 15.18 \d+ big_trades, query 4 (psql -E)
SELECT pg_catalog.pg_get_viewdef('{big_trades_oid}'::pg_catalog.oid, true);
