// The headless Chromium every browser test runs in, and pages that record what went wrong.
import { chromium } from 'playwright-core';

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}

// A new page whose console errors and warnings, page errors, failed requests (other than blob:
// URLs) and HTTP errors are pushed onto `problems`.
export async function watchedPage(browser, problems, contextOptions) {
  const context = await browser.newContext(contextOptions);
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => { if (!r.url().startsWith('blob:')) problems.push(`request failed: ${r.url()}`); });
  page.on('response', (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`); });
  return page;
}

// Drops files on the page as a user would: `files` lists [name, content (a string or bytes),
// MIME type (optional)].
export async function dropFiles(page, files) {
  await page.evaluate((files) => {
    const dt = new DataTransfer();
    for (const [name, b64, type] of files) {
      dt.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], name, type ? { type } : {}));
    }
    for (const kind of ['dragover', 'drop']) {
      document.querySelector('.page').dispatchEvent(new DragEvent(kind, { bubbles: true, cancelable: true, dataTransfer: dt }));
    }
  }, files.map(([name, content, type]) => [name, Buffer.from(content).toString('base64'), type]));
}

// Drops a file the page fetches from `url` (large files: no huge evaluate() argument).
export async function dropFromDisk(page, url, name) {
  await page.evaluate(async ([url, name]) => {
    const dt = new DataTransfer();
    dt.items.add(new File([await (await fetch(url)).blob()], name));
    for (const kind of ['dragover', 'drop']) {
      document.querySelector('.page').dispatchEvent(new DragEvent(kind, { bubbles: true, cancelable: true, dataTransfer: dt }));
    }
  }, [url, name]);
}
