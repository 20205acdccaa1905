// A dependency-free dev server: serves public/, and reloads open pages when
// a file under public/ changes (Server-Sent Events at <base>__reload).
import { createServer } from 'node:http'
import { watch } from 'node:fs'
import { readdir, readFile, realpath, stat } from 'node:fs/promises'
import { extname, join, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = await realpath(fileURLToPath(new URL('./public', import.meta.url)))
const port = Number(process.env.PORT) || 8080
const trimmed = (process.env.HUTCH_APP_BASE || '').replace(/^\/+|\/+$/g, '')
const base = trimmed ? `/${trimmed}/` : '/' // "/dev/" in the dev sandbox
const types = {
  '.html': 'text/html; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png',
  '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.webp': 'image/webp',
  '.ico': 'image/x-icon', '.txt': 'text/plain; charset=utf-8', '.woff2': 'font/woff2',
}
const reloader = `<script>new EventSource(${JSON.stringify(base + '__reload')}).addEventListener('reload', () => location.reload())</script>`
const clients = new Set()

let timer
const changed = () => {
  clearTimeout(timer) // editors write a file in several steps
  timer = setTimeout(() => { for (const res of clients) res.write('event: reload\ndata: {}\n\n') }, 50)
}
try {
  watch(root, { recursive: true }, changed)
} catch {
  // Node before 19.1 watches no tree on Linux: watch each directory, and
  // the ones made later as they appear.
  const watched = new Set()
  const watchTree = async (dir) => {
    if (watched.has(dir)) return
    watched.add(dir)
    watch(dir, (_, name) => {
      changed()
      const p = name && join(dir, String(name))
      if (p) stat(p).then((st) => st.isDirectory() && watchTree(p)).catch(() => {})
    })
    for (const e of await readdir(dir, { withFileTypes: true })) {
      if (e.isDirectory()) await watchTree(join(dir, e.name))
    }
  }
  await watchTree(root)
}
setInterval(() => { for (const res of clients) res.write(': ping\n\n') }, 15000).unref()

// resolve maps a URL path to a file beneath root, or null.
async function resolve(urlPath) {
  let p
  try { p = decodeURIComponent(urlPath) } catch { return null }
  if (p.includes('\0')) return null
  try {
    let file = await realpath(join(root, p))
    if ((await stat(file)).isDirectory()) file = await realpath(join(file, 'index.html'))
    return file === root || file.startsWith(root + sep) ? file : null
  } catch { return null }
}

createServer(async (req, res) => {
  let path = new URL(req.url, 'http://x').pathname
  // hutch strips the base before the request arrives; accept it unstripped too.
  if (base !== '/' && !req.headers['x-forwarded-prefix'] && (path + '/').startsWith(base)) path = path.slice(base.length - 1) || '/'
  if (path === '/__reload') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
    res.write(': connected\n\n')
    clients.add(res)
    req.on('close', () => clients.delete(res))
    return
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain', 'method not allowed\n')
  const file = await resolve(path)
  if (!file) return send(res, 404, 'text/plain; charset=utf-8', 'not found\n')
  let body
  try { body = await readFile(file) } catch { return send(res, 404, 'text/plain; charset=utf-8', 'not found\n') }
  const type = types[extname(file).toLowerCase()] || 'application/octet-stream'
  if (type.startsWith('text/html')) {
    const html = body.toString()
    const at = html.lastIndexOf('</body>')
    body = at < 0 ? html + reloader : html.slice(0, at) + reloader + html.slice(at)
  }
  send(res, 200, type, req.method === 'HEAD' ? '' : body)
}).listen(port, '127.0.0.1', () => console.log(`serving public/ at http://127.0.0.1:${port}${base}`))

function send(res, code, type, body) {
  res.writeHead(code, { 'content-type': type, 'cache-control': 'no-store' })
  res.end(body)
}
