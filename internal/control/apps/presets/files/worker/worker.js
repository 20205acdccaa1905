// A background worker: hutch's supervisor keeps it running and restarts it
// when it exits. Replace the heartbeat with real work (a queue, a schedule).
const every = 5000
let beats = 0

function beat() {
  beats++
  console.log(`${new Date().toISOString()} heartbeat ${beats} (role ${process.env.HUTCH_APP_ROLE || 'dev'})`)
}

// The handlers come before the first heartbeat: whoever sees it may stop
// the worker at once, and until then SIGTERM would kill it unheard.
let timer
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    clearInterval(timer)
    console.log(`${new Date().toISOString()} stopping on ${sig}`)
    process.exit(0)
  })
}

beat()
timer = setInterval(beat, every)
