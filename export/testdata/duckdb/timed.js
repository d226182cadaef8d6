// timed.js times SQL queries in one in-memory DuckDB, through DuckDB's
// Node API, for archive/bench_test.go (DuckDB on the archive's Parquet).
//
//   node timed.js REPS '["SELECT ...", ...]'
//
// Each query runs REPS times, one after another; the first run of each is
// the process's first look at the files (DuckDB keeps no Parquet metadata
// between runs unless told to: enable_object_cache is off). It prints one
// JSON object: per query the milliseconds of each run and the rows of the
// last one (every value as DuckDB prints it).
'use strict';

const { DuckDBInstance } = require('@duckdb/node-api');

async function main() {
  const reps = Number(process.argv[2]);
  const queries = JSON.parse(process.argv[3]);
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const results = [];
  for (const sql of queries) {
    const ms = [];
    let rows;
    for (let i = 0; i < reps; i++) {
      const t = process.hrtime.bigint();
      const reader = await con.runAndReadAll(sql);
      ms.push(Number(process.hrtime.bigint() - t) / 1e6);
      rows = reader.getRows().map((row) => row.map(String));
    }
    results.push({ ms, rows });
  }
  con.closeSync();
  db.closeSync();
  process.stdout.write(JSON.stringify({ results }) + '\n');
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + '\n');
  process.exit(1);
});
