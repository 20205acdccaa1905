import { defineConfig } from 'vite'
import react from '@vitejs/plugin-react'

// hutch serves the dev sandbox at /dev/ and strips that prefix before a
// request reaches this server; HUTCH_APP_BASE says which prefix it is.
const base = normalizeBase(process.env.HUTCH_APP_BASE)

export default defineConfig({
  base,
  plugins: [react(), hutchBase(base)],
  server: {
    host: '127.0.0.1',
    port: Number(process.env.PORT) || 5173,
    strictPort: true,
    // The app is reached through hutch's public host name.
    allowedHosts: true,
  },
  preview: {
    host: '127.0.0.1',
    port: Number(process.env.PORT) || 4173,
    strictPort: true,
    allowedHosts: true,
  },
})

function normalizeBase(b) {
  if (!b || b === '/') return '/'
  return '/' + b.replace(/^\/+|\/+$/g, '') + '/'
}

// hutchBase puts the stripped prefix back on every request, HTTP and the
// HMR WebSocket alike, so Vite sees the URLs it expects for its base.
function hutchBase(base) {
  const prefix = base.slice(0, -1) // "/dev"; "" for "/"
  const restore = (req) => {
    if (!prefix) return
    const fwd = String(req.headers['x-forwarded-prefix'] || '').replace(/\/+$/, '')
    const has = req.url === prefix || req.url.startsWith(base)
    if (fwd === prefix || !has) req.url = prefix + (req.url.startsWith('/') ? '' : '/') + req.url
  }
  return {
    name: 'hutch-base',
    configureServer(server) {
      server.middlewares.use((req, _res, next) => {
        restore(req)
        next()
      })
      server.httpServer?.prependListener('upgrade', restore)
    },
  }
}
