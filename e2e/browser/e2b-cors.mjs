// A web page of another origin calls hutch's E2B APIs from the system's
// headless Chromium, as the E2B SDK does in a browser: the control API
// with the key in X-API-KEY, then envd's process.Process/List (Connect
// JSON) with the sandbox's token. Reports, as one JSON line on stdout,
// what each answered:
//
//   node e2b-cors.mjs <hutch URL> <key> <page URL>
//
// The page is served from another origin (another loopback port, so the
// browser's Private Network Access rules do not apply), so every call is
// cross-origin and goes through the browser's CORS checks, preflights
// included. CHROMIUM overrides /usr/bin/chromium.
import { chromium } from 'playwright-core';

const [base, key, pageURL] = process.argv.slice(2);
if (!base || !key || !pageURL) {
  console.error('usage: node e2b-cors.mjs <hutch URL> <key> <page URL>');
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage();
  page.on('console', (m) => console.error('console:', m.text()));
  await page.goto(pageURL);
  const out = await page.evaluate(async ([base, key]) => {
    const created = await fetch(base + '/e2b/v2/sandboxes', {
      method: 'POST',
      headers: { 'X-API-KEY': key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ templateID: 'base', timeout: 120 }),
    });
    const sb = await created.json();
    const listed = await fetch(base + '/e2b/envd/process.Process/List', {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json', 'Connect-Protocol-Version': '1',
        'E2b-Sandbox-Id': sb.sandboxID, 'X-Access-Token': sb.envdAccessToken,
      },
      body: '{}',
    });
    const page = await fetch(base + '/e2b/v2/sandboxes?limit=1', { headers: { 'X-API-KEY': key } });
    const killed = await fetch(base + '/e2b/sandboxes/' + sb.sandboxID, { method: 'DELETE', headers: { 'X-API-KEY': key } });
    return {
      origin: location.origin,
      create: created.status,
      list: listed.status,
      listBody: await listed.text(),
      nextToken: page.headers.get('x-next-token'),
      kill: killed.status,
    };
  }, [base, key]);
  console.log(JSON.stringify(out));
} finally {
  await browser.close();
}
