// query.js runs SQL queries in an in-memory DuckDB, through DuckDB's own
// Node API (the version package-lock.json pins), for export/duckdb_test.go.
//
//   node query.js '["SELECT ...", "SELECT ..."]'
//
// It prints one JSON object: the DuckDB version, then per query the
// column names, the column types as DuckDB names them, and the rows, or
// the error DuckDB gave.
// Values are written so that nothing is lost on the way to Go: BIGINT and
// HUGEINT as decimal strings, DOUBLE as the 16 hex digits of its IEEE 754
// bits (so -0, subnormals and infinities come back exact), NULL as null,
// VARCHAR and BOOLEAN as they are, anything else as DuckDB prints it.
'use strict';

const { DuckDBInstance, DuckDBTypeId, version } = require('@duckdb/node-api');

function encode(type, v) {
  if (v === null) {
    return null;
  }
  switch (type.typeId) {
    case DuckDBTypeId.DOUBLE: {
      const b = new DataView(new ArrayBuffer(8));
      b.setFloat64(0, v);
      return b.getBigUint64(0).toString(16).padStart(16, '0');
    }
    case DuckDBTypeId.BIGINT:
    case DuckDBTypeId.HUGEINT:
    case DuckDBTypeId.UBIGINT:
      return v.toString();
    case DuckDBTypeId.VARCHAR:
    case DuckDBTypeId.BOOLEAN:
      return v;
    default:
      return String(v);
  }
}

async function main() {
  const queries = JSON.parse(process.argv[2]);
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const results = [];
  for (const sql of queries) {
    let reader;
    try {
      reader = await con.runAndReadAll(sql);
    } catch (err) {
      results.push({ error: String(err && err.message ? err.message : err) });
      continue;
    }
    const types = reader.columnTypes();
    results.push({
      columns: reader.columnNames(),
      types: types.map(String),
      rows: reader.getRows().map((row) => row.map((v, i) => encode(types[i], v))),
    });
  }
  con.closeSync();
  db.closeSync();
  process.stdout.write(JSON.stringify({ version: version(), results }) + '\n');
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + '\n');
  process.exit(1);
});
