// bench/e2b: the E2B SDK through hutch's translation layer beside hutch's
// own API doing the same, in one run, interleaved so that drift touches
// both alike. It starts its own hutch serve (loopback, a temporary data
// directory) and prints Markdown tables.
//
//	node bench/e2b/bench.mjs --hutch bin/hutch [--runs 200] [--creates 50]
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { Sandbox } from 'e2b'

const { values: opts } = parseArgs({
  options: {
    hutch: { type: 'string', default: 'bin/hutch' },
    runs: { type: 'string', default: '200' },
    creates: { type: 'string', default: '50' },
  },
})
const runs = Number(opts.runs)
const creates = Number(opts.creates)

function freePort () {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    }).on('error', reject)
  })
}

const data = mkdtempSync(join(tmpdir(), 'hutch-bench-e2b-'))
const port = await freePort()
const base = `http://127.0.0.1:${port}`
const server = spawn(opts.hutch, ['serve', '--listen', `127.0.0.1:${port}`, '--data', join(data, 'data')], {
  stdio: ['ignore', 'ignore', process.env.BENCH_STDERR ? 'inherit' : 'ignore'], env: { ...process.env, HUTCH_LOG_LEVEL: 'warn' },
})
let key
for (let i = 0; ; i++) {
  try {
    key = readFileSync(join(data, 'data', 'admin.key'), 'utf8').trim()
    if ((await fetch(base + '/v1/info', { headers: { Authorization: `Bearer ${key}` } })).ok) break
  } catch {}
  if (i > 300) throw new Error('hutch serve did not start')
  await new Promise(resolve => setTimeout(resolve, 100))
}
process.env.E2B_API_URL = base + '/e2b'
process.env.E2B_SANDBOX_URL = base + '/e2b/envd'
process.env.E2B_API_KEY = key

async function hutch (method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: body && JSON.stringify(body),
  })
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
  return res.status === 204 ? undefined : res.json()
}

const ms = () => Number(process.hrtime.bigint()) / 1e6
async function timed (fn) {
  const start = ms()
  const v = await fn()
  return [ms() - start, v]
}

function stats (xs) {
  const s = [...xs].sort((a, b) => a - b)
  const q = p => s[Math.min(s.length - 1, Math.floor(p * s.length))]
  return { p50: q(0.5), p95: q(0.95), mean: s.reduce((a, b) => a + b, 0) / s.length }
}

// Each set of calls runs in a rotating order, so that what one leaves
// behind (a warm pool refilling after a destroy) falls on each alike.
async function rotate (fns, i) {
  const out = new Array(fns.length)
  for (let k = 0; k < fns.length; k++) {
    const j = (i + k) % fns.length
    out[j] = await timed(fns[j])
  }
  return out
}

const rows = {
  create: { sdk: [], raw: [], hutch: [] },
  run: { sdk: [], hutch: [], processes: [], connect: [] },
}
try {
  // Warm both paths (the server's first sandbox, the SDK's first call).
  const warm = await Sandbox.create()
  await warm.commands.run('echo hi')
  await warm.kill()

  for (let i = 0; i < creates; i++) {
    // The SDK's Sandbox.create, the same request by plain fetch (the
    // translation layer without the SDK's own work), hutch's own create.
    const [[te, sb], [th, own], [tr, raw]] = await rotate([
      () => Sandbox.create(),
      () => hutch('POST', '/v1/sandboxes', {}),
      async () => {
        const res = await fetch(base + '/e2b/v2/sandboxes', {
          method: 'POST', headers: { 'X-API-KEY': key, 'Content-Type': 'application/json' }, body: JSON.stringify({ templateID: 'base', timeout: 300 }),
        })
        return res.json()
      },
    ], i)
    rows.create.sdk.push(te)
    rows.create.hutch.push(th)
    rows.create.raw.push(tr)
    await sb.kill()
    await hutch('DELETE', `/v1/sandboxes/${own.id}`)
    await hutch('DELETE', `/v1/sandboxes/${raw.sandboxID}`)
  }

  const sb = await Sandbox.create({ timeoutMs: 3_600_000 })
  const cmd = ['/bin/bash', '-l', '-c', 'echo hi']
  // hutch's processes API, as E2B's commands work: a background process
  // that outlives its client, started, then its output followed to the
  // exit (Server-Sent Events).
  const viaProcesses = async () => {
    const p = await hutch('POST', `/v1/sandboxes/${sb.sandboxId}/processes`, { cmd })
    const res = await fetch(`${base}/v1/sandboxes/${sb.sandboxId}/processes/${p.pid}/output?follow=true`, {
      headers: { Authorization: `Bearer ${key}`, Accept: 'text/event-stream' },
    })
    const text = await res.text()
    if (!text.includes('event: exit')) throw new Error(`no exit in ${text}`)
    return text
  }
  // The same Start call the SDK makes (Connect, JSON), by plain fetch: the
  // translation layer without the SDK's own work.
  const start = JSON.stringify({ process: { cmd: '/bin/bash', args: ['-l', '-c', 'echo hi'] }, stdin: false })
  const envelope = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), Buffer.from(start)])
  envelope.writeUInt32BE(start.length, 1)
  const viaConnect = async () => {
    const res = await fetch(`${base}/e2b/envd/process.Process/Start`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/connect+json', 'E2b-Sandbox-Id': sb.sandboxId, 'X-Access-Token': sb.envdAccessToken },
      body: envelope,
    })
    const body = Buffer.from(await res.arrayBuffer()).toString()
    if (!body.includes('"end"')) throw new Error(`no end in ${body}`)
    return body
  }
  for (let i = 0; i < runs; i++) {
    const [[te, r], [th, x], [tp], [tc]] = await rotate([
      () => sb.commands.run('echo hi'),
      () => hutch('POST', `/v1/sandboxes/${sb.sandboxId}/exec`, { cmd }),
      viaProcesses,
      viaConnect,
    ], i)
    if (r.stdout !== 'hi\n' || x.stdout !== 'hi\n') throw new Error(`outputs ${JSON.stringify(r.stdout)} ${JSON.stringify(x.stdout)}`)
    rows.run.sdk.push(te)
    rows.run.hutch.push(th)
    rows.run.processes.push(tp)
    rows.run.connect.push(tc)
  }
  await sb.kill()
} finally {
  server.kill('SIGTERM')
  await new Promise(resolve => server.on('exit', resolve))
  rmSync(data, { recursive: true, force: true })
}

const f = x => x.toFixed(2)
const table = [
  ['create', 'hutch API: POST /v1/sandboxes', rows.create.hutch, null, creates],
  ['create', 'E2B API by fetch: POST /e2b/v2/sandboxes', rows.create.raw, rows.create.hutch, creates],
  ['create', 'E2B SDK: Sandbox.create()', rows.create.sdk, rows.create.hutch, creates],
  ['run', "hutch API: POST …/exec ['bash', '-l', '-c', 'echo hi']", rows.run.hutch, null, runs],
  ['run', 'hutch API: POST …/processes, then GET …/output?follow (SSE)', rows.run.processes, rows.run.hutch, runs],
  ['run', 'E2B envd by fetch: process.Process/Start (Connect JSON)', rows.run.connect, rows.run.processes, runs],
  ['run', "E2B SDK: commands.run('echo hi')", rows.run.sdk, rows.run.processes, runs],
]
console.log('| operation | path | n | p50 ms | p95 ms | mean ms | over the row it is beside (p50) |')
console.log('|---|---|---|---|---|---|---|')
for (const [op, label, xs, ref, n] of table) {
  const s = stats(xs)
  const over = ref ? `${f((s.p50 / stats(ref).p50 - 1) * 100)} %` : ''
  console.log(`| ${op} | ${label} | ${n} | ${f(s.p50)} | ${f(s.p95)} | ${f(s.mean)} | ${over} |`)
}
