// A sibling preview's page tries to read a private preview with the
// visitor's cookie, in the system's headless Chromium; reports what it got
// as one JSON line on stdout:
//
//   node sibling.mjs <victim's signed URL> <victim's origin> <attack page URL>
//
// The visitor first opens the victim's signed URL (which leaves the
// cookie) and waits for the page's WebSocket and event stream; follows
// the page's link to /private (a navigation of its own); then types
// <victim's origin>/private; then opens the attack page, served by
// another sandbox's preview under the same preview domain, which fetch()es,
// opens a WebSocket to and iframes the victim's /private. Both pages are
// internal/router/testdata/previewapp's.
//
// RESOLVE is a --host-resolver-rules value (say "MAP *.preview.test
// 127.0.0.1"), so a custom preview domain needs no DNS; INSECURE=1
// accepts a self-signed certificate. CHROMIUM overrides /usr/bin/chromium.
// Playwright never downloads a browser here.
import { chromium } from 'playwright-core';

const [signed, victim, attack] = process.argv.slice(2);
if (!attack) {
  console.error('usage: node sibling.mjs <signed URL> <victim origin> <attack page URL>');
  process.exit(2);
}
const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
if (process.env.RESOLVE) {
  args.push(`--host-resolver-rules=${process.env.RESOLVE}`);
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args,
});
const text = async (frame) => frame.evaluate(() => document.body?.innerText ?? '');
try {
  const context = await browser.newContext({ ignoreHTTPSErrors: process.env.INSECURE === '1' });
  const page = await context.newPage();
  const out = {};

  let resp = await page.goto(signed, { timeout: 30000 });
  await page.waitForFunction(() => {
    const echo = document.getElementById('echo')?.textContent ?? '';
    const count = Number(document.getElementById('count')?.textContent ?? '0');
    return echo !== 'waiting' && count >= 3;
  }, null, { timeout: 20000 }).catch(() => {});
  out.signed = {
    status: resp.status(),
    url: page.url(),
    echo: (await page.textContent('#echo').catch(() => '')) ?? '',
    count: Number((await page.textContent('#count').catch(() => '0')) ?? '0'),
  };

  const [nav] = await Promise.all([page.waitForNavigation({ timeout: 20000 }), page.click('#private')]);
  out.link = { status: nav?.status() ?? 0, text: await text(page.mainFrame()) };

  resp = await page.goto(victim + '/private', { timeout: 20000 });
  out.typed = { status: resp.status(), text: await text(page.mainFrame()) };

  await page.goto(attack, { timeout: 20000 });
  await page.waitForFunction(() => ['fetch', 'forged', 'ws', 'frame'].every(
    (id) => (document.getElementById(id)?.textContent ?? 'waiting') !== 'waiting'), null, { timeout: 20000 });
  const frame = page.frames().find((f) => f !== page.mainFrame() && f.url().startsWith(victim));
  out.attack = {
    fetch: await page.textContent('#fetch'),
    forged: await page.textContent('#forged'),
    ws: await page.textContent('#ws'),
    frameURL: frame?.url() ?? '',
    frame: frame ? await text(frame) : '(no frame)',
  };
  console.log(JSON.stringify(out));
} finally {
  await browser.close();
}
