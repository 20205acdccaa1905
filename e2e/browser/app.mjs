// Drives the system's headless Chromium for hutch's apps end-to-end test
// (e2e/apps_test.go), one command per line on stdin, one JSON line per
// command on stdout:
//
//   goto <url>                  open a page: {status, url}
//   login <key>                 fill and send the /login form: {url}
//   mark                        set a marker on the page's window: {}
//   text <selector> <text…>     wait until the element shows text: {text, marked}
//                               (marked: the marker survived, so no reload)
//   hmr                         whether Vite's HMR socket is connected: {connected}
//   ws <url>                    open a WebSocket from the page: {opened, protocol}
//   quit
//
// CHROMIUM overrides /usr/bin/chromium. Playwright never downloads a browser.
import { chromium } from 'playwright-core';
import readline from 'node:readline';

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = await browser.newPage();
const logs = [];
page.on('console', (m) => logs.push(m.text()));

const commands = {
  async goto(url) {
    const resp = await page.goto(url, { timeout: 60000 });
    return { status: resp.status(), url: page.url() };
  },
  async login(key) {
    await page.fill('input[name=key]', key);
    await Promise.all([page.waitForNavigation({ timeout: 60000 }), page.click('button[type=submit]')]);
    return { url: page.url() };
  },
  async mark() {
    await page.evaluate(() => { window.__hutchMark = 'kept'; });
    return {};
  },
  async text(selector, ...words) {
    const want = words.join(' ');
    await page.waitForFunction(([s, w]) => (document.querySelector(s)?.textContent ?? '') === w,
      [selector, want], { timeout: 60000 });
    return {
      text: await page.textContent(selector),
      marked: await page.evaluate(() => window.__hutchMark === 'kept'),
    };
  },
  async hmr() {
    const connected = logs.some((l) => l.includes('[vite] connected'));
    return { connected };
  },
  async ws(url) {
    return page.evaluate((u) => new Promise((resolve) => {
      const s = new WebSocket(u, 'vite-hmr');
      const t = setTimeout(() => resolve({ opened: false, error: 'timeout' }), 15000);
      s.onopen = () => { clearTimeout(t); resolve({ opened: true, protocol: s.protocol }); s.close(); };
      s.onerror = () => { clearTimeout(t); resolve({ opened: false, error: 'error' }); };
    }), url);
  },
};

const rl = readline.createInterface({ input: process.stdin });
try {
  for await (const line of rl) {
    const [cmd, ...args] = line.trim().split(/\s+/);
    if (cmd === 'quit') break;
    try {
      const out = await commands[cmd](...args);
      console.log(JSON.stringify({ ok: true, ...out }));
    } catch (e) {
      console.log(JSON.stringify({ ok: false, error: String(e), logs: logs.slice(-20) }));
    }
  }
} finally {
  await browser.close();
}
