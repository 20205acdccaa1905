// The unmodified E2B SDK against a real hutch serve: one test per group of
// methods docs/E2B.md marks as working. e2e/e2b_test.go starts the server
// and runs this with E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY set; it
// can also run by hand against any hutch (node --test compat.test.mjs).
import { test, after } from 'node:test'
import { request } from 'node:http'
import assert from 'node:assert/strict'
import {
  Sandbox, CommandExitError, NotFoundError, TimeoutError, FilesystemEventType, FileType,
} from 'e2b'

for (const v of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY']) {
  assert.ok(process.env[v], `${v} must be set`)
}

const made = []
async function create (opts = {}) {
  const sb = await Sandbox.create({ timeoutMs: 300_000, ...opts })
  made.push(sb)
  return sb
}
after(async () => {
  for (const sb of made) await sb.kill().catch(() => {})
})

// until polls fn until it returns a truthy value, for at most ms.
async function until (fn, ms = 10_000) {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

test('Sandbox: create, getInfo, list, connect, setTimeout, getHost, isRunning, kill', async () => {
  const sb = await create({ metadata: { suite: 'e2b-compat', case: 'lifecycle' }, envs: { GREETING: 'hello' } })
  assert.match(sb.sandboxId, /^[0-9a-z]+$/)

  const info = await sb.getInfo()
  assert.equal(info.sandboxId, sb.sandboxId)
  const own = await (await fetch(new URL(`/v1/sandboxes/${sb.sandboxId}`, process.env.E2B_API_URL), {
    headers: { Authorization: `Bearer ${process.env.E2B_API_KEY}` },
  })).json()
  assert.equal(info.templateId, own.template, 'base is the server\'s default template')
  assert.equal(info.state, 'running')
  assert.deepEqual(info.metadata, { suite: 'e2b-compat', case: 'lifecycle' })
  assert.ok(info.endAt > info.startedAt)

  const env = await sb.commands.run('echo $GREETING')
  assert.equal(env.stdout, 'hello\n')

  const page = await Sandbox.list({ query: { metadata: { case: 'lifecycle' } } }).nextItems()
  assert.deepEqual(page.map(s => s.sandboxId), [sb.sandboxId])
  const later = await Sandbox.list({ query: { metadata: { case: 'lifecycle' }, startedAfter: new Date(Date.now() + 60_000) } }).nextItems()
  assert.deepEqual(later, [])

  const again = await Sandbox.connect(sb.sandboxId)
  assert.equal((await again.commands.run('echo connected')).stdout, 'connected\n')

  const before = (await sb.getInfo()).endAt
  await sb.setTimeout(600_000)
  assert.ok((await sb.getInfo()).endAt > before)

  assert.equal(sb.getHost(8080), `8080-${sb.sandboxId}.localhost`)
  assert.equal(await sb.isRunning(), true)
  await sb.kill()
  assert.equal(await sb.isRunning(), false)
  assert.equal(await Sandbox.kill(sb.sandboxId), false)
  await assert.rejects(Sandbox.connect(sb.sandboxId), /not found/i)
})

test('commands.run: output, callbacks, exit codes, envs, cwd, timeout, user', async () => {
  const sb = await create()
  const out = []; const err = []
  const r = await sb.commands.run('for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.05; done', {
    onStdout: d => out.push(d), onStderr: d => err.push(d),
  })
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'out1\nout2\nout3\n')
  assert.equal(r.stderr, 'err1\nerr2\nerr3\n')
  assert.equal(out.join(''), r.stdout)
  assert.equal(err.join(''), r.stderr)

  await assert.rejects(sb.commands.run('echo failing >&2; exit 3'), e => {
    assert.ok(e instanceof CommandExitError)
    assert.equal(e.exitCode, 3)
    assert.equal(e.stderr, 'failing\n')
    return true
  })

  const env = await sb.commands.run('echo "$A $B"', { envs: { A: 'one', B: 'two' } })
  assert.equal(env.stdout, 'one two\n')
  await sb.files.makeDir('/tmp/work')
  assert.equal((await sb.commands.run('pwd', { cwd: '/tmp/work' })).stdout, '/tmp/work\n')
  assert.equal((await sb.commands.run('cat', {})).stdout, '', 'a command gets no input unless asked')

  const started = Date.now()
  await assert.rejects(sb.commands.run('sleep 30; echo late > /tmp/late', { timeoutMs: 1000 }), TimeoutError)
  assert.ok(Date.now() - started < 15_000)
  await new Promise(resolve => setTimeout(resolve, 300))
  const procs = await sb.commands.list()
  assert.ok(!procs.some(p => p.args.join(' ').includes('sleep 30')), 'the command past its timeout was killed')

  assert.equal((await sb.commands.run('id -u', { user: 'root' })).stdout, '0\n')
  assert.notEqual((await sb.commands.run('id -u', { user: 'user' })).stdout, '0\n')
  await assert.rejects(sb.commands.run('id', { user: 'mallory' }), /unknown_user/)
  await assert.rejects(sb.files.write('/etc/hutch-test', 'x', { user: 'root' }), /not root/)
})

test('commands: background, list, connect, sendStdin, closeStdin, kill', async () => {
  const sb = await create()
  const bg = await sb.commands.run('sleep 60', { background: true })
  const listed = await sb.commands.list()
  const mine = listed.find(p => p.pid === bg.pid)
  assert.ok(mine, 'the background command is listed')
  assert.equal(mine.cmd, '/bin/bash')
  assert.deepEqual(mine.args, ['-l', '-c', 'sleep 60'])
  assert.equal(await sb.commands.kill(bg.pid), true)
  await until(async () => !(await sb.commands.list()).some(p => p.pid === bg.pid))
  assert.equal(await sb.commands.kill(bg.pid), false)

  const cat = await sb.commands.run('cat', { background: true, stdin: true })
  await sb.commands.sendStdin(cat.pid, 'line one\n')
  await sb.commands.sendStdin(cat.pid, new TextEncoder().encode('line two\n'))
  await sb.commands.closeStdin(cat.pid)
  const done = await cat.wait()
  assert.equal(done.stdout, 'line one\nline two\n')

  const ticker = await sb.commands.run('for i in $(seq 1 50); do echo tick$i; sleep 0.1; done', { background: true })
  await ticker.disconnect()
  const seen = []
  const rejoined = await sb.commands.connect(ticker.pid, { onStdout: d => seen.push(d) })
  const result = await rejoined.wait()
  assert.equal(result.exitCode, 0)
  assert.match(seen.join(''), /tick50\n$/)
})

test('files: write and read text, bytes, blobs, streams; several at once', async () => {
  const sb = await create()
  const info = await sb.files.write('/tmp/f/a.txt', 'hello')
  assert.equal(info.path, '/tmp/f/a.txt')
  assert.equal(info.name, 'a.txt')
  assert.equal(await sb.files.read('/tmp/f/a.txt'), 'hello')

  const bytes = new Uint8Array(256).map((_, i) => i)
  await sb.files.write('/tmp/f/b.bin', bytes)
  assert.deepEqual(await sb.files.read('/tmp/f/b.bin', { format: 'bytes' }), bytes)
  const blob = await sb.files.read('/tmp/f/b.bin', { format: 'blob' })
  assert.equal(blob.size, 256)

  const big = 'x'.repeat(3 << 20)
  const stream = new ReadableStream({
    start (c) { c.enqueue(new TextEncoder().encode(big)); c.close() },
  })
  await sb.files.write('/tmp/f/stream.txt', stream)
  const rs = await sb.files.read('/tmp/f/stream.txt', { format: 'stream' })
  let n = 0
  for await (const chunk of rs) n += chunk.length
  assert.equal(n, big.length)

  const many = await sb.files.write([
    { path: '/tmp/f/m/one.txt', data: '1' },
    { path: '/tmp/f/m/two.txt', data: '22' },
  ])
  assert.deepEqual(many.map(f => f.path).sort(), ['/tmp/f/m/one.txt', '/tmp/f/m/two.txt'])
  assert.equal(await sb.files.read('/tmp/f/m/two.txt'), '22')
  await assert.rejects(sb.files.read('/tmp/f/none.txt'), NotFoundError)
})

test('files: list, exists, getInfo, makeDir, rename, remove', async () => {
  const sb = await create()
  await sb.files.write('/tmp/l/a.txt', 'a')
  await sb.files.write('/tmp/l/sub/b.txt', 'bb')
  const one = await sb.files.list('/tmp/l')
  assert.deepEqual(one.map(e => [e.name, e.type]).sort(), [['a.txt', FileType.FILE], ['sub', FileType.DIR]])
  const two = await sb.files.list('/tmp/l', { depth: 2 })
  assert.ok(two.some(e => e.path === '/tmp/l/sub/b.txt'))

  assert.equal(await sb.files.exists('/tmp/l/a.txt'), true)
  assert.equal(await sb.files.exists('/tmp/l/nope'), false)
  const info = await sb.files.getInfo('/tmp/l/sub/b.txt')
  assert.equal(info.size, 2)
  assert.equal(info.type, FileType.FILE)
  assert.match(info.permissions, /^-rw/)

  assert.equal(await sb.files.makeDir('/tmp/l/new/deep'), true)
  assert.equal(await sb.files.makeDir('/tmp/l/new/deep'), false)
  const moved = await sb.files.rename('/tmp/l/a.txt', '/tmp/l/new/a.txt')
  assert.equal(moved.path, '/tmp/l/new/a.txt')
  assert.equal(await sb.files.exists('/tmp/l/a.txt'), false)
  await sb.files.remove('/tmp/l/new')
  assert.equal(await sb.files.exists('/tmp/l/new'), false)
})

test('files.watchDir: create, write, remove', async () => {
  const sb = await create()
  await sb.files.makeDir('/tmp/w')
  const events = []
  const handle = await sb.files.watchDir('/tmp/w', e => events.push(e))
  await sb.files.write('/tmp/w/x.txt', 'one')
  await sb.files.remove('/tmp/w/x.txt')
  await until(() => events.some(e => e.type === FilesystemEventType.REMOVE))
  await handle.stop()
  assert.ok(events.some(e => e.name === 'x.txt' && e.type === FilesystemEventType.CREATE), JSON.stringify(events))
})

test('pty: create, sendInput, resize, connect, kill', async () => {
  const sb = await create()
  let screen = ''
  const decoder = new TextDecoder()
  const term = await sb.pty.create({ cols: 80, rows: 24, onData: d => { screen += decoder.decode(d) } })
  await sb.pty.sendInput(term.pid, new TextEncoder().encode('stty size; echo mark-$((40+2))\n'))
  await until(() => screen.includes('mark-42'))
  assert.match(screen, /24 80/)
  await sb.pty.resize(term.pid, { cols: 100, rows: 30 })
  await term.disconnect()

  let later = ''
  const back = await sb.pty.connect(term.pid, { onData: d => { later += decoder.decode(d) } })
  await sb.pty.sendInput(term.pid, new TextEncoder().encode('stty size\n'))
  await until(() => later.includes('30 100'))
  assert.equal(await sb.pty.kill(term.pid), true)
  const end = await back.wait().catch(e => e)
  assert.ok(end instanceof CommandExitError || end.exitCode !== 0)
})

test('pause and resume: pause, betaPause, connect', async () => {
  const sb = await create()
  await sb.files.write('/tmp/kept.txt', 'kept')
  assert.equal(await sb.pause(), true)
  assert.equal((await sb.getInfo()).state, 'paused')
  assert.equal(await sb.betaPause(), false, 'pausing a paused sandbox')
  const resumed = await Sandbox.connect(sb.sandboxId)
  assert.equal((await resumed.getInfo()).state, 'running')
  assert.equal(await resumed.files.read('/tmp/kept.txt'), 'kept')

  // Without its memory: its files are kept, its processes end.
  await resumed.files.write('/workspace/on-disk.txt', 'on disk')
  await resumed.commands.run('sleep 600', { background: true })
  assert.equal(await resumed.pause({ keepMemory: false }), true)
  assert.equal((await resumed.getInfo()).state, 'paused')
  const restarted = await Sandbox.connect(sb.sandboxId)
  assert.equal(await restarted.files.read('/workspace/on-disk.txt'), 'on disk')
  assert.ok(!(await restarted.commands.list()).some(p => p.args.includes('sleep 600')))
})

test('snapshots and fork', async () => {
  const sb = await create()
  await sb.files.write('/workspace/state.txt', 'from the original')
  const snap = await sb.createSnapshot({ name: 'compat-snap' })
  assert.deepEqual(snap.names, ['compat-snap'])
  const listed = await sb.listSnapshots().nextItems()
  assert.ok(listed.some(s => s.snapshotId === snap.snapshotId))

  const fromSnap = await create({ template: snap.snapshotId })
  assert.equal(await fromSnap.files.read('/workspace/state.txt'), 'from the original')
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true)
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false)

  const [fork] = await sb.fork()
  made.push(fork)
  assert.notEqual(fork.sandboxId, sb.sandboxId)
  assert.equal(await fork.files.read('/workspace/state.txt'), 'from the original')
  await fork.files.write('/workspace/state.txt', 'changed in the fork')
  assert.equal(await sb.files.read('/workspace/state.txt'), 'from the original')
})

test('metrics and network', async () => {
  const sb = await create({ allowInternetAccess: false })
  assert.equal((await sb.getInfo()).allowInternetAccess, false)
  const metrics = await sb.getMetrics()
  assert.ok(metrics.length >= 1)
  assert.ok(metrics.at(-1).memUsed > 0)
  assert.ok(metrics.at(-1).timestamp instanceof Date)

  await sb.updateNetwork({ allowOut: ['registry.npmjs.org'], denyOut: ['0.0.0.0/0'] })
  const info = await sb.getInfo()
  assert.deepEqual(info.network.allowOut, ['registry.npmjs.org'])
  await assert.rejects(sb.updateNetwork({ denyOut: ['10.0.0.0/8'] }), /allowlist/)
})

// raw sends a request to the hutch server as if to host (a sandbox's own
// envd host, <port>-<id>.<domain>, which the SDK reaches over HTTPS in
// production; here the same request goes to the server directly).
function raw (host, pathAndQuery, { method = 'GET', headers = {}, body } = {}) {
  const api = new URL(process.env.E2B_API_URL)
  return new Promise((resolve, reject) => {
    const req = request({ host: api.hostname, port: api.port, method, path: pathAndQuery, headers: { ...headers, Host: host } }, res => {
      const chunks = []
      res.on('data', c => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

test('the sandbox\'s own envd host, and URLs signed with its token', async () => {
  const sb = await create()
  await sb.files.write('/workspace/signed.txt', 'signed content')
  const host = sb.getHost(49983)

  const listed = await raw(host, '/process.Process/List', {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Access-Token': sb.envdAccessToken }, body: '{}',
  })
  assert.equal(listed.status, 200, listed.body)

  // The SDK signs; hutch checks the signature on the sandbox's host.
  const down = new URL(await sb.downloadUrl('/workspace/signed.txt'))
  assert.ok(down.searchParams.get('signature'))
  const got = await raw(host, down.pathname + down.search)
  assert.equal(got.status, 200, got.body)
  assert.equal(got.body, 'signed content')

  const timed = new URL(await sb.downloadUrl('/workspace/signed.txt', { useSignatureExpiration: 60 }))
  assert.equal((await raw(host, timed.pathname + timed.search)).body, 'signed content')

  const up = new URL(await sb.uploadUrl('/workspace/uploaded.txt'))
  const form = new FormData()
  form.append('file', new Blob(['uploaded by URL']), 'uploaded.txt')
  const enc = new Response(form)
  const put = await raw(host, up.pathname + up.search, {
    method: 'POST', headers: { 'Content-Type': enc.headers.get('content-type') }, body: Buffer.from(await enc.arrayBuffer()),
  })
  assert.equal(put.status, 200, put.body)
  assert.equal(await sb.files.read('/workspace/uploaded.txt'), 'uploaded by URL')

  // A signature is for its file, its operation and its sandbox only.
  const other = await create()
  const tampered = down.search.replace('signed.txt', 'uploaded.txt')
  for (const [h, q, method] of [[host, tampered, 'GET'], [other.getHost(49983), down.search, 'GET'], [host, down.search, 'POST']]) {
    const res = await raw(h, '/files' + q, { method })
    assert.equal(res.status, 401, `${method} ${h}/files${q}: ${res.status} ${res.body}`)
  }
})

test('envd access: a token is good for its own sandbox only', async () => {
  const a = await create()
  const b = await create()
  const res = await fetch(process.env.E2B_SANDBOX_URL + '/process.Process/List', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': b.sandboxId, 'X-Access-Token': a.envdAccessToken },
    body: '{}',
  })
  assert.equal(res.status, 401)
  const ok = await fetch(process.env.E2B_SANDBOX_URL + '/process.Process/List', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': a.sandboxId, 'X-Access-Token': a.envdAccessToken },
    body: '{}',
  })
  assert.equal(ok.status, 200)
})
