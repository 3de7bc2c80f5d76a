// Scores QTI 3 items with Citolab's qti-components in Chromium.
// Input (stdin): JSON [{"id", "xml", "response"}]; output (stdout): JSON
// [{"id", "score"}] where score is the SCORE outcome after response
// processing, or {"id", "error"}.
import { chromium } from 'playwright-core';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const bundle = require.resolve('@citolab/qti-components/package.json').replace(/package\.json$/, 'cdn/index.global.js');
const cases = JSON.parse(await new Promise((resolve) => {
  let s = '';
  process.stdin.on('data', (d) => (s += d)).on('end', () => resolve(s));
}));
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  const page = await browser.newPage();
  await page.setContent('<!doctype html><html><body><div id="c"></div></body></html>');
  await page.addScriptTag({ path: bundle });
  const out = [];
  for (const c of cases) {
    out.push(await page.evaluate(async (c) => {
      try {
        const html = QtiComponents.qtiTransformItem().parse(c.xml).html();
        const host = document.getElementById('c');
        host.innerHTML = html;
        const item = host.querySelector('qti-assessment-item');
        await customElements.whenDefined('qti-assessment-item');
        await new Promise((r) => setTimeout(r, 30));
        if (c.response !== null) item.updateResponseVariable('RESPONSE', c.response);
        item.processResponse();
        const score = item.getOutcome('SCORE');
        return { id: c.id, score: score ? Number(score.value) : null };
      } catch (e) {
        return { id: c.id, error: String(e) };
      }
    }, c));
  }
  process.stdout.write(JSON.stringify(out));
} finally {
  await browser.close();
}
