'use strict'
// Writes points through InfluxDB's official JavaScript client (WriteApi), as
// ingest/clients_test.go asks, and prints one JSON line saying what happened.
//
// Usage: node influxdb.js '<input json>'
//
//	{"url", "token", "org", "bucket",
//	 "batches": [{"precision": "ns", "points": [point, ...]}, ...],  one WriteApi each, closed (flushed) in turn
//	 "reject": {"precision", "points"}}                             optional: expected to fail
//
// A point is {"measurement", "tags": [[name, value]], "fields": [[name, type,
// value]], "ts": ...}; type is f (value a string Number() reads), i, u
// (value a decimal string), b or s. ts is a string of digits, a number, {"date":
// milliseconds} for a Date, "" for no timestamp (the server's time), or null
// for the client's default (its own clock).
//
// Output: {"client", "version", "batches", "points", "error" (null, or
// {"name", "message", "statusCode", "code", "json"} of the reject batch's
// failure), "log"}.

const fs = require('node:fs')
const path = require('node:path')
const { InfluxDB, Point, setLogger } = require('@influxdata/influxdb-client')

const version = JSON.parse(
  fs.readFileSync(path.join(__dirname, 'node_modules/@influxdata/influxdb-client/package.json'), 'utf8')
).version

function point (p) {
  const pt = new Point(p.measurement)
  for (const [name, value] of p.tags || []) pt.tag(name, value)
  for (const [name, type, value] of p.fields || []) {
    switch (type) {
      case 'f': pt.floatField(name, Number(value)); break
      case 'i': pt.intField(name, value); break
      case 'u': pt.uintField(name, value); break
      case 'b': pt.booleanField(name, value); break
      case 's': pt.stringField(name, value); break
      default: throw new Error(`field ${name}: unknown type ${type}`)
    }
  }
  if (p.ts !== null && p.ts !== undefined) {
    pt.timestamp(typeof p.ts === 'object' ? new Date(p.ts.date) : p.ts)
  }
  return pt
}

async function main () {
  const input = JSON.parse(process.argv[2])
  const log = []
  // The client logs to the console; keep stdout for the result.
  setLogger({
    error: (msg, err) => log.push(`error: ${msg} ${err || ''}`),
    warn: (msg, err) => log.push(`warn: ${msg} ${err || ''}`)
  })
  const influx = new InfluxDB({ url: input.url, token: input.token, timeout: 10000 })
  // No retries and no flush timer: a failure shows at once, and close()
  // sends what is buffered.
  const writeOptions = { maxRetries: 0, flushInterval: 0 }
  const out = { client: '@influxdata/influxdb-client', version, batches: 0, points: 0, error: null }
  for (const batch of input.batches) {
    const w = influx.getWriteApi(input.org, input.bucket, batch.precision, writeOptions)
    for (const p of batch.points) {
      w.writePoint(point(p))
      out.points++
    }
    await w.close()
    out.batches++
  }
  if (input.reject) {
    const w = influx.getWriteApi(input.org, input.bucket, input.reject.precision, writeOptions)
    for (const p of input.reject.points) w.writePoint(point(p))
    try {
      await w.close()
    } catch (e) {
      out.error = { name: e.name, message: e.message, statusCode: e.statusCode, code: e.code, json: e.json }
    }
  }
  out.log = log
  console.log(JSON.stringify(out))
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
