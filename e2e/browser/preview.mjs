// Opens a hutch preview in the system's headless Chromium and reports, as
// one JSON line on stdout, what the page shows once its WebSocket has
// echoed and its event stream has counted to at least 3:
//
//   node preview.mjs <signed preview URL> [screenshot.png]
//
// The page is internal/router/testdata/previewapp's. CHROMIUM overrides
// /usr/bin/chromium. Playwright never downloads a browser here.
import { chromium } from 'playwright-core';

const [url, screenshot] = process.argv.slice(2);
if (!url) {
  console.error('usage: node preview.mjs <url> [screenshot.png]');
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
  const resp = await page.goto(url, { timeout: 30000 });
  await page.waitForFunction(() => {
    const echo = document.getElementById('echo')?.textContent ?? '';
    const count = Number(document.getElementById('count')?.textContent ?? '0');
    return echo.startsWith('echo:') && count >= 3;
  }, null, { timeout: 20000 });
  if (screenshot) {
    await page.screenshot({ path: screenshot });
  }
  const cookies = await page.context().cookies();
  console.log(JSON.stringify({
    status: resp.status(),
    url: page.url(),
    echo: await page.textContent('#echo'),
    count: Number(await page.textContent('#count')),
    cookies: cookies.map((c) => ({ name: c.name, domain: c.domain, httpOnly: c.httpOnly, sameSite: c.sameSite })),
  }));
} finally {
  await browser.close();
}
