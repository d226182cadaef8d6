'use strict'
// Writes rows through QuestDB's official Node.js client, as
// ingest/clients_test.go asks, and prints one JSON line saying what happened.
//
// Usage: node questdb.js '<input json>'
//
//	{"conf": "http::addr=127.0.0.1:PORT;...",   the client's own config string
//	 "batches": [[row, ...], ...],              each flushed on its own
//	 "reject": [row, ...]}                      optional: flushed last, expected to fail
//
// A row is {"table", "syms": [[name, value]], "cols": [[name, type, value]],
// "at": "digits" or null (atNow), "unit": "ns"|"us"|"ms"}; type is f (value
// a string Number() reads, so "NaN" and "-Infinity" work), i, b or s.
//
// Output: {"client", "version", "protocolVersion", "batches", "rows",
// "error" (the reject flush's error message, or null), "log"}.

const fs = require('node:fs')
const path = require('node:path')
const { Sender, SenderOptions } = require('@questdb/nodejs-client')

const version = JSON.parse(
  fs.readFileSync(path.join(__dirname, 'node_modules/@questdb/nodejs-client/package.json'), 'utf8')
).version

async function put (sender, row) {
  sender.table(row.table)
  for (const [name, value] of row.syms || []) sender.symbol(name, value)
  for (const [name, type, value] of row.cols || []) {
    switch (type) {
      case 'f': sender.floatColumn(name, Number(value)); break
      case 'i': sender.intColumn(name, value); break
      case 'b': sender.booleanColumn(name, value); break
      case 's': sender.stringColumn(name, value); break
      default: throw new Error(`column ${name}: unknown type ${type}`)
    }
  }
  if (row.at === null || row.at === undefined) {
    await sender.atNow()
  } else {
    await sender.at(BigInt(row.at), row.unit)
  }
}

async function main () {
  const input = JSON.parse(process.argv[2])
  const log = []
  // The client's default logger writes to stdout; keep stdout for the result.
  const opts = await SenderOptions.fromConfig(input.conf, { log: (level, msg) => { if (level === 'warn' || level === 'error') log.push(`${level}: ${msg}`) } })
  const sender = new Sender(opts)
  if (opts.protocol === 'tcp') await sender.connect()
  const out = {
    client: '@questdb/nodejs-client',
    version,
    protocolVersion: opts.protocol_version,
    batches: 0,
    rows: 0,
    error: null
  }
  for (const batch of input.batches) {
    for (const row of batch) {
      await put(sender, row)
      out.rows++
    }
    await sender.flush()
    out.batches++
  }
  if (input.reject) {
    for (const row of input.reject) await put(sender, row)
    try {
      await sender.flush()
    } catch (e) {
      out.error = String(e && e.message)
    }
  }
  await sender.close()
  out.log = log
  console.log(JSON.stringify(out))
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
