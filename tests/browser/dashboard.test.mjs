// The dashboard end to end in headless Chromium (Debian's /usr/bin/chromium
// driven by playwright-core; no browser is downloaded). Run by
// tests/dashboard_page.rs inside a network namespace with only loopback up:
// it starts the real `parallax serve` on the fixture config, opens /ui as a
// person would, and checks what they would see. A screenshot of each view
// goes to $PARALLAX_SCREENSHOTS.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const env = (name) => {
  const v = process.env[name];
  assert.ok(v, `${name} is set (tests/dashboard_page.rs sets it)`);
  return v;
};
const BIN = env("PARALLAX_BIN");
const CONFIG = env("PARALLAX_DASHBOARD_CONFIG");
const WORK = env("PARALLAX_WORK_DIR");
const SHOTS = env("PARALLAX_SCREENSHOTS");
const CHROMIUM = process.env.PARALLAX_CHROMIUM || "/usr/bin/chromium";
const PORT = Number(process.env.PARALLAX_PORT || 9931);
const BASE = `http://127.0.0.1:${PORT}`;
const VIEWER = "dash-viewer-token";
const APPROVER = "dash-alice-token";
const SECRET = "AKIAQ7ZKD4EXAMPLE7RT";

let server;
let serverLog = "";
let context;
let page;
const problems = [];

async function until(what, check, ms) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      if (await check()) {
        return;
      }
    } catch {
      // not yet
    }
    if (Date.now() > end) {
      throw new Error(`${what} did not happen within ${ms} ms\n--- server log ---\n${serverLog}`);
    }
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

function evaluate(event, query = "") {
  return fetch(`${BASE}/evaluate${query}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${VIEWER}` },
    body: JSON.stringify(event),
  }).then(async (r) => ({ status: r.status, body: await r.json() }));
}

async function shot(name) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = spawn(BIN, ["serve", "-c", CONFIG, "--port", String(PORT), "--log-level", "warn"], {
    cwd: WORK,
    stdio: ["ignore", "pipe", "pipe"],
  });
  server.stdout.on("data", (b) => (serverLog += b));
  server.stderr.on("data", (b) => (serverLog += b));
  await until("the server answering /health", async () => (await fetch(`${BASE}/health`)).ok, 90_000);
  // A fresh profile under TMPDIR, which the harness removes afterwards.
  const profile = mkdtempSync(join(tmpdir(), "parallax-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  page = context.pages()[0] || (await context.newPage());
  page.on("response", (r) => {
    if (r.status() >= 400) {
      problems.push(`${r.status()} ${r.request().method()} ${r.url().slice(BASE.length)}`);
    }
  });
  page.on("console", (m) => {
    // A failed load is recorded with its URL above.
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) {
      problems.push(`console: ${m.text()}`);
    }
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()}`));
  page.on("request", (r) => {
    if (!r.url().startsWith(BASE)) {
      problems.push(`request outside the server: ${r.url()}`);
    }
  });
});

after(async () => {
  if (context) {
    await context.close();
  }
  if (server) {
    server.kill("SIGTERM");
  }
});

test("the page is served with a strict CSP and asks for a token", async () => {
  const r = await page.goto(`${BASE}/ui`);
  assert.equal(r.status(), 200);
  const csp = r.headers()["content-security-policy"];
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  await page.waitForSelector("#token");
  assert.equal(await page.isVisible("#tabs"), false, "nothing but the sign-in before a token");
  const data = await fetch(`${BASE}/ui/api/overview`);
  assert.equal(data.status, 401, "the data needs the token");
  await page.fill("#token", "not-the-token");
  await page.click("#login-form button");
  await page.waitForSelector("#login-error:not([hidden])");
  assert.match(await page.textContent("#login-error"), /refused/);
  await page.fill("#token", VIEWER);
  await page.click("#login-form button");
  await page.waitForSelector("#tabs:not([hidden])");
  await page.waitForSelector('#stream-state[data-state="live"]', { timeout: 10_000 });
});

test("a blocked event appears in the live list within a second, with its rule id", async () => {
  const row = 'tr.decision:has(td.rule-ids:text-matches("dangerous-rm-rf-root"))';
  const sent = Date.now();
  const answer = await evaluate({
    stage: "tool.before",
    session_id: "sess-dash-1",
    tool_name: "Bash",
    tool_args: { command: `AWS_ACCESS_KEY_ID=${SECRET} rm -rf /` },
  });
  assert.equal(answer.body.action, "block");
  await page.waitForSelector(row, { timeout: 1000 - (Date.now() - sent) });
  const seen = Date.now() - sent;
  assert.ok(seen < 1000, `seen after ${seen} ms`);
  console.log(`blocked event in the live list ${seen} ms after it was sent`);
  assert.match(await page.textContent(row), /block/);
  // The filters narrow the list.
  await page.selectOption("#f-action", "allow");
  assert.equal(await page.locator(row).count(), 0);
  await page.selectOption("#f-action", "block");
  await page.fill("#f-rule", "rm-rf");
  assert.equal(await page.locator(row).count(), 1);
  await page.fill("#f-rule", "");
  await page.selectOption("#f-action", "");
  await shot("live");
});

test("opening the decision shows its event with the secret masked", async () => {
  await page.click('tr.decision:has(td.rule-ids:text-matches("dangerous-rm-rf-root"))');
  await page.waitForSelector("#decision:not([hidden]) pre.json");
  const panel = await page.textContent("#decision");
  assert.match(panel, /dangerous-rm-rf-root/);
  assert.match(panel, /\[REDACTED\]/, "the secret is masked as in the audit log");
  assert.ok(!panel.includes(SECRET), "the secret itself is nowhere on the page");
  assert.ok(!(await page.content()).includes(SECRET));
  assert.ok((await page.locator("#decision pre.json mark").count()) > 0, "the match is marked");
  await shot("decision");
});

test("rule hits, with the definition from the compiled program", async () => {
  await page.click('#tabs button[data-view="rules"]');
  const row = '#rules tr:has(a:text-is("dangerous-rm-rf-root"))';
  await page.waitForSelector(row);
  assert.match(await page.textContent(row), /most/);
  assert.ok((await page.locator("#rules tr.never").count()) > 0, "rules that never fired stand out");
  await page.waitForSelector("#hits-chart canvas");
  await page.click(`${row} a`);
  await page.waitForSelector("#rule:not([hidden]) table.atoms");
  const def = await page.textContent("#rule");
  assert.match(def, /regex/);
  assert.match(def, /tool\.before/);
  assert.match(def, /command/);
  assert.match(def, /literal|dfa|prefiltered|verified|backtrack/);
  await shot("rules");
});

test("latency per front door from the metrics histogram", async () => {
  await page.click('#tabs button[data-view="latency"]');
  await page.waitForSelector('#latency tr:has(td:text-is("http"))');
  const http = await page.textContent('#latency tr:has(td:text-is("http"))');
  assert.match(http, /http\s*[1-9]/, http);
  await page.waitForSelector("#latency-chart canvas");
  await shot("latency");
});

test("a held call is approved by a click and the waiting caller gets allow", async () => {
  const waiting = evaluate(
    {
      stage: "tool.before",
      session_id: "sess-dash-2",
      tool_name: "Bash",
      tool_args: { command: "deploy --env production" },
    },
    "?wait=60",
  );
  await page.click('#tabs button[data-view="approvals"]');
  await page.waitForSelector(".approval", { timeout: 10_000 });
  assert.match(await page.textContent(".approval"), /deploy-needs-approval/);
  assert.match(await page.textContent(".approval .countdown"), /\d+m \d\ds/);
  // The viewer's token can read but not decide.
  await page.click(".approval button.approve");
  await page.waitForSelector(".approval .result.error");
  await page.fill("#approver-token", APPROVER);
  await page.click("#approver-form button");
  await page.fill(".approval input.comment", "release 42, checked");
  await shot("approvals");
  await page.click(".approval button.approve");
  const answer = await waiting;
  assert.equal(answer.status, 200);
  assert.equal(answer.body.action, "allow", JSON.stringify(answer.body));
  await page.waitForSelector('#history tr:has-text("alice")', { timeout: 5000 });
  assert.match(await page.textContent("#history"), /release 42, checked/);
  await shot("approvals-decided");
});

test("health: backend, fingerprint, counters and a reload", async () => {
  await page.click('#tabs button[data-view="health"]');
  await page.waitForSelector("#health-cards .card");
  const cards = await page.textContent("#health-cards");
  assert.match(cards, /dynamic|baked/);
  assert.match(cards, /[0-9a-f]{32}/);
  assert.match(await page.textContent("#audit-counts"), /lines_written/);
  await page.click("#reload");
  await page.waitForSelector('#reload-state:text-matches("reload")');
  await page.waitForFunction(() => !document.getElementById("reload").disabled);
  await shot("health");
  assert.deepEqual(
    problems,
    ["401 GET /ui/api/overview"],
    "no console error, CSP violation or request elsewhere; the one refusal is the wrong token's",
  );
});
