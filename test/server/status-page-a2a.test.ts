import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserMissing, launchBrowser, openPage, screenshot, waitForText } from '../support/browser.js';
import { baseConfig } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';

// The status page's A2A agents in a real browser (Debian's chromium, playwright-core), against
// a real gateway process and the mock's A2A agents: each agent's table lists its candidates
// with their card, breaker and recent calls, and follows an agent that stops answering
// without a page reload.

declare const window: Record<string, unknown>;

const missing = browserMissing();
const r = fileResources('switchyard-status-page-a2a-');
let browser: Browser | null = null;

before(async () => {
  if (missing === null) browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

async function text(page: Page, selector: string): Promise<string> {
  return (await page.locator(selector).first().textContent()) ?? '';
}

async function badgeColour(page: Page, selector: string): Promise<string> {
  const cls = (await page.locator(selector).first().getAttribute('class')) ?? '';
  return cls.replace('badge', '').trim();
}

async function send(gatewayUrl: string, agent: string, text: string): Promise<void> {
  const res = await fetch(`${gatewayUrl}/a2a/${agent}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] } },
    }),
  });
  const body = (await res.json()) as Record<string, unknown>;
  assert.ok('result' in body, JSON.stringify(body));
}

describe('the status page in a browser: A2A agents', { skip: missing ?? false }, () => {
  it('lists each agent with its candidates, cards, breakers and calls, and shows a breaker opening live', async () => {
    const [alpha, bravo] = await Promise.all([
      r.startMock({ name: 'alpha', protocol: 'a2a' }),
      r.startMock({ name: 'bravo', protocol: 'a2a' }),
    ]);
    const gw = await r.startGw({
      ...baseConfig({}, {}),
      log: { level: 'info', access: false },
      resilience: { breaker: { failure_threshold: 3, open_base_ms: 60_000 } },
      providers: {
        alpha: { type: 'a2a', base_url: `${alpha.baseUrl}/instant`, timeout_ms: 5000 },
        bravo: { type: 'a2a', base_url: `${bravo.baseUrl}/instant`, timeout_ms: 5000 },
        // Nothing listens on port 9: this agent's card is never read.
        nowhere: { type: 'a2a', base_url: 'http://127.0.0.1:9/agent', timeout_ms: 2000 },
      },
      routing: {
        agents: {
          echo: { policy: 'ordered', candidates: [{ provider: 'bravo' }, { provider: 'alpha' }] },
          lost: { candidates: [{ provider: 'nowhere' }] },
        },
      },
    });
    for (let i = 0; i < 2; i++) await send(gw.url, 'echo', `hi ${i}`);

    const { page, errors } = await openPage(browser as Browser);
    await page.goto(`${gw.adminUrl}/`);
    const row = (agent: string, provider: string): string => `table[data-agent="${agent}"] tr[data-provider="${provider}"]`;
    await waitForText(page, row('echo', 'bravo'), 'serving');
    await waitForText(page, 'table[data-agent="echo"] caption', '2 calls served recently');
    assert.match(
      await text(page, 'table[data-agent="echo"] caption'),
      /^echo — policy ordered, takes new tasks — 2 calls served recently$/,
    );
    assert.equal(await page.locator('#agents-section').isHidden(), false);
    await waitForText(page, '#agents-window', 'task and context ids tracked');
    assert.match(await text(page, `${row('echo', 'bravo')} td[data-card]`), /^read (just now|\d+ s ago)$/);
    assert.equal(await badgeColour(page, `${row('echo', 'bravo')} .badge[data-state="closed"]`), 'green');
    assert.match(await text(page, `${row('echo', 'bravo')} td:nth-child(8)`), /^2$/);
    assert.match(await text(page, `${row('echo', 'alpha')} td:nth-child(8)`), /^0$/);
    await waitForText(page, `${row('lost', 'nowhere')} td[data-card="unread"]`, 'not read: not called');
    assert.match(await text(page, `${row('lost', 'nowhere')} td[data-card]`), /could not connect/);
    assert.ok(!(await page.content()).includes('127.0.0.1:9'), 'the page names no agent address');
    await waitForText(page, '#providers tr[data-provider="alpha"]', 'a2a');
    await page.evaluate(() => {
      window.statusPageMark = true;
    });

    // bravo stops answering: echo's calls fall back to alpha, and bravo's breaker opens.
    await bravo.close();
    for (let i = 0; i < 4; i++) await send(gw.url, 'echo', `again ${i}`);
    await page.waitForSelector(`${row('echo', 'bravo')}[data-breaker="open"]`, { timeout: 10_000 });
    assert.equal(await badgeColour(page, `${row('echo', 'bravo')} .badge[data-state="open"]`), 'red');
    assert.equal(await badgeColour(page, '#providers tr[data-provider="bravo"] .badge[data-state="open"]'), 'red');
    await waitForText(page, 'table[data-agent="echo"] caption', '6 calls served recently');
    await waitForText(page, `${row('echo', 'alpha')} td:nth-child(8)`, '4');
    assert.match(await text(page, `${row('echo', 'alpha')} td:nth-child(9)`), /^67 %$/);

    assert.ok(await page.evaluate(() => window.statusPageMark === true), 'the page was never reloaded');
    await screenshot(page, 'status-page-agents');
    assert.deepEqual(errors, []);
    await page.close();
  });
});
