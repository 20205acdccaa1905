import express from 'express'

const app = express()
const port = Number(process.env.PORT) || 3000

app.use(express.json())

app.get('/', (_req, res) => {
  res.type('html').send(`<!doctype html>
<html lang="en">
  <head><meta charset="utf-8"><title>hutch app</title></head>
  <body>
    <h1 id="title">Hello from hutch</h1>
    <p>Edit <code>server.js</code> and save: the server restarts.</p>
    <p>Health: <a href="api/health">api/health</a></p>
  </body>
</html>
`)
})

app.get('/api/health', (_req, res) => {
  res.json({ ok: true, role: process.env.HUTCH_APP_ROLE || 'dev' })
})

// 127.0.0.1, not "localhost": node resolves that to ::1 first, and hutch
// reaches the app over IPv4.
app.listen(port, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${port}`)
})
