"""Reads the trades table through psycopg2 and pandas.read_sql, for
psycopg_test.go; prints one JSON object.

psycopg2 parses a timestamp's text into a datetime, which has
microseconds only: given the 9 fraction digits the server sends for a
sub-microsecond TIMESTAMP_NS it raises "ValueError: microsecond must be in
0..999999". The typecaster registered below for OID 1114 (timestamp)
makes a pandas.Timestamp (nanosecond precision) from the text instead.
What the default does, and epoch_ns(ts) (a BIGINT), are reported too.
"""
import json
import sys
import warnings

import pandas
import psycopg2
import psycopg2.extensions

TIMESTAMP_OID = 1114


def cast_timestamp(value, cursor):
    return None if value is None else pandas.Timestamp(value)


def main():
    dsn = sys.argv[1]
    out = {}
    with psycopg2.connect(dsn) as conn:
        # The default: datetime.datetime, microseconds.
        with conn.cursor() as cur:
            cur.execute("SELECT ts FROM trades WHERE sym = 'A,\"B\"'")
            out["datetime_whole_second"] = cur.fetchone()[0].isoformat(sep=" ")
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT ts FROM trades WHERE sym = 'AAPL'")
                out["datetime_nanos"] = cur.fetchone()[0].isoformat(sep=" ")
        except ValueError as e:
            out["datetime_nanos_error"] = str(e)
        with conn.cursor() as cur:
            cur.execute("SELECT epoch_ns(ts) AS ns FROM trades WHERE sym = %s", ("AAPL",))
            out["epoch_ns"] = cur.fetchone()[0]

        nanos = psycopg2.extensions.new_type((TIMESTAMP_OID,), "TIMESTAMP_NS", cast_timestamp)
        psycopg2.extensions.register_type(nanos, conn)
        with warnings.catch_warnings():
            # pandas warns that it only tests SQLAlchemy connections.
            warnings.simplefilter("ignore", UserWarning)
            df = pandas.read_sql("SELECT ts, sym FROM trades ORDER BY ts", conn)
    out["dtypes"] = {c: str(t) for c, t in df.dtypes.items()}
    out["ts_ns"] = [int(t.value) for t in df["ts"]]
    out["sym"] = list(df["sym"])
    out["sym_types"] = sorted({type(s).__name__ for s in df["sym"]})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
