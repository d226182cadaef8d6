// Runs one parameterised query through node-postgres (extended protocol:
// Parse, Bind, Describe portal, Execute, Sync) and prints the result as
// JSON, for sql/pgwire/node_test.go.
//
// Input, as the JSON first argument: {host, port, password, sql, params}.
// Timestamps (OID 1114) are kept as the server's text, so the test sees
// every nanosecond digit; node-postgres would otherwise make a Date, which
// has milliseconds.
'use strict';

const pg = require('pg');

pg.types.setTypeParser(1114, (text) => text);

async function main() {
  const input = JSON.parse(process.argv[2]);
  const client = new pg.Client({
    host: input.host,
    port: input.port,
    user: 'u',
    database: 'db',
    password: input.password,
    connectionTimeoutMillis: 10000,
    query_timeout: 20000,
  });
  await client.connect();
  try {
    const res = await client.query(input.sql, input.params);
    const out = {
      version: require('pg/package.json').version,
      command: res.command,
      rowCount: res.rowCount,
      fields: res.fields.map((f) => ({ name: f.name, oid: f.dataTypeID })),
      rows: res.rows,
    };
    try {
      await client.query('SELECT * FORM trades');
    } catch (e) {
      out.error = { code: e.code, position: e.position, message: e.message };
    }
    process.stdout.write(JSON.stringify(out) + '\n');
  } finally {
    await client.end();
  }
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack || e) + '\n');
  process.exit(1);
});
