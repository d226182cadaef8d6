#!/usr/bin/env python3
"""pandas.read_sql over tickdb-sql, through psycopg2 (the Postgres wire protocol).

    tickdb-sql serve --db ./tickdata &          # 127.0.0.1:8812
    python3 tickdb_sql.py [--host 127.0.0.1] [--port 8812] [--password TOKEN] [--table trades] [--sym AAPL]

Prints one symbol's rows as CSV (ts as integer nanoseconds, then the other
columns) and, after a blank line, the VWAP of every symbol.

Nanoseconds: psycopg2 parses a timestamp into a datetime, which holds
microseconds (and rejects tickdb's nine fractional digits). Select
epoch_ns(ts), the integer tickdb stores, and let pandas make the
timestamps: pandas.to_datetime(ns, unit="ns") keeps every digit.
Debian: apt-get install python3-psycopg2 python3-pandas.
"""

import argparse
import sys
import warnings

import pandas as pd
import psycopg2


# pandas reads through any DB-API connection; it warns that it tests only
# SQLAlchemy's and sqlite3's.
warnings.filterwarnings("ignore", message="pandas only supports SQLAlchemy")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8812)
    ap.add_argument("--password", default="", help="tickdb-sql serve's --token, if set")
    ap.add_argument("--table", default="trades")
    ap.add_argument("--sym", default="AAPL")
    args = ap.parse_args()

    conn = psycopg2.connect(host=args.host, port=args.port, user="tickdb",
                            password=args.password, dbname="tickdb")
    try:
        # One symbol through tickdb's per-symbol index (tickdb_sym), in ts order.
        # The table and symbol are SQL literals here, not parameters: a table
        # function's arguments are constants.
        rows = pd.read_sql(
            "SELECT epoch_ns(ts) AS ts_ns, * EXCLUDE (ts) "
            f"FROM tickdb_sym('{args.table}', '{args.sym}', '-infinity', 'infinity') ORDER BY ts",
            conn)
        rows["ts"] = pd.to_datetime(rows["ts_ns"], unit="ns", utc=True)  # every ns digit kept
        vwap = pd.read_sql(
            f"SELECT sym, sum(price * size) / sum(size) AS vwap, sum(size) AS volume "
            f"FROM {args.table} GROUP BY sym ORDER BY sym", conn)
    finally:
        conn.close()

    sys.stdout.write(rows.drop(columns="ts").to_csv(index=False))
    sys.stdout.write("\n")
    sys.stdout.write(vwap.to_csv(index=False))


if __name__ == "__main__":
    main()
