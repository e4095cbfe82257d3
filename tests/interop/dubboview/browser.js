// The Dubbo web page in Debian's headless Chromium, driven by playwright-core:
// the rendered DOM shows the registry the fixture wrote; a provider added and then removed by
// the fixture appears and disappears without a reload (live refresh); clicking a service shows
// its consumers; a screenshot is taken and checked (PNG decodes, right size, not blank).
// Env: PAGE_URL, CTL (the fixture's command FIFO), FIXTURE_OUT (its stdout), SHOT (PNG path),
// S_P1, S_P2, S_C1, S_I1 (session ids the fixture printed). Prints "PASS name"/"FAIL name: why";
// exits 1 if anything failed.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");
const { PNG } = require("pngjs");

const env = (k) => {
  if (!process.env[k]) throw new Error(`${k} is not set`);
  return process.env[k];
};
const DEMO = "org.apache.dubbo.demo.DemoService";
const ORDER = "org.apache.dubbo.demo.OrderService";
const WIDTH = 1280, HEIGHT = 900;
let failed = 0, passed = 0;

function check(name, ok, why) {
  if (ok) { passed++; console.log(`PASS ${name}`); }
  else { failed++; console.log(`FAIL ${name}: ${why}`); }
}
function same(name, got, want) {
  check(name, JSON.stringify(got) === JSON.stringify(want), `got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

/** Cell texts of every row of a table's body. */
async function rows(page, table) {
  return page.$$eval(`#${table} tbody tr`, trs => trs.map(tr => [...tr.children].map(td => td.textContent.trim())));
}

/** Sends a command to the fixture and waits for the line it answers with. */
async function fixture(cmd, answer) {
  const before = fs.readFileSync(env("FIXTURE_OUT"), "utf8").length;
  fs.appendFileSync(env("CTL"), cmd + "\n");
  for (let i = 0; i < 600; i++) {
    const out = fs.readFileSync(env("FIXTURE_OUT"), "utf8").slice(before);
    const m = out.match(answer);
    if (m) return m;
    await new Promise(r => setTimeout(r, 100));
  }
  throw new Error(`fixture did not answer ${cmd}`);
}

function checkPng(file) {
  const png = PNG.sync.read(fs.readFileSync(file));
  same("screenshot size", [png.width, png.height], [WIDTH, HEIGHT]);
  const counts = new Map();
  let dark = 0;
  for (let i = 0; i < png.data.length; i += 4) {
    const [r, g, b] = [png.data[i], png.data[i + 1], png.data[i + 2]];
    const key = (r << 16) | (g << 8) | b;
    counts.set(key, (counts.get(key) || 0) + 1);
    if (r + g + b < 3 * 110) dark++;
  }
  const pixels = png.width * png.height;
  const top = Math.max(...counts.values());
  check("screenshot not blank", counts.size >= 50 && top / pixels < 0.9,
    `${counts.size} colours, most common covers ${(100 * top / pixels).toFixed(1)}%`);
  // Text and the header bar are dark: a page that rendered nothing has none.
  check("screenshot has text", dark / pixels > 0.02, `dark pixels ${(100 * dark / pixels).toFixed(2)}%`);
}

(async () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "zkr-dubbo-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: WIDTH, height: HEIGHT },
    deviceScaleFactor: 1,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const page = context.pages()[0] || await context.newPage();
    const errors = [];
    page.on("pageerror", e => errors.push(String(e)));
    await page.goto(`${env("PAGE_URL")}?refresh=500#${DEMO}`);
    const p1 = `#providers tbody tr[data-address="10.20.0.11:20880"]`;
    await page.waitForSelector(p1, { timeout: 30000 });

    const services = await rows(page, "services");
    same("services table", services, [
      [DEMO, "-", "-", "2", "1", "demo-provider"],
      ["org.apache.dubbo.demo.GreetingService", "greeting", "1.0.0", "1", "1", "greeting-provider"],
      ["org.apache.dubbo.demo.LegacyService", "-", "-", "no providers", "0", "-"],
      [ORDER, "-", "-", "no providers", "1", "-"],
    ]);
    same("no-provider card", await page.textContent("#n-orphans"), "2");
    same("providers of DemoService", await rows(page, "providers"), [
      ["dubbo", "10.20.0.11:20880", "demo-provider", "-", "-", "sayHello, sayHelloAsync", "100", "2025-11-29T07:06:40Z", env("S_P1")],
      ["dubbo", "10.20.0.12:20880", "demo-provider", "-", "-", "sayHello, sayHelloAsync", "100", "2025-11-29T07:06:42Z", env("S_P2")],
    ]);
    same("consumers of DemoService", await rows(page, "consumers"), [
      ["10.20.0.31", "demo-consumer", "-", "-", "sayHello, sayHelloAsync", "2025-11-29T07:06:43Z", env("S_C1")],
    ]);
    const instances = await rows(page, "instances");
    same("instances", instances.map(r => r.slice(0, 6)), [
      ["demo-provider", "10.20.0.11:20880", "10.20.0.11:20880", "dubbo:20880", "5f1c2b7a9d", "2025-11-29T07:06:40Z"],
      ["demo-provider", "10.20.0.12:20880", "10.20.0.12:20880", "dubbo:20880", "5f1c2b7a9d", "2025-11-29T07:06:42Z"],
    ]);
    same("instance session", instances[0][6], env("S_I1"));

    // Live refresh: the page must update by itself, so mark this document and never reload it.
    await page.evaluate(() => { window.__notReloaded = true; });
    const added = (await fixture("add", /ADDED (0x[0-9a-f]+)/))[1];
    const p3 = `#providers tbody tr[data-address="10.20.0.13:20880"]`;
    let appeared = true;
    await page.waitForSelector(p3, { timeout: 30000 }).catch(() => { appeared = false; });
    check("added provider appears without reload", appeared && await page.evaluate(() => window.__notReloaded === true),
      "row for 10.20.0.13:20880 did not appear in the same document");
    if (appeared) {
      same("added provider row", (await rows(page, "providers"))[2],
        ["dubbo", "10.20.0.13:20880", "demo-provider", "-", "-", "sayHello, sayHelloAsync", "50", "2025-11-29T07:06:44Z", added]);
    }
    await page.waitForFunction(() => document.querySelector("#services tbody tr td:nth-child(4)").textContent === "3",
      null, { timeout: 30000 }).catch(() => {});
    same("provider count follows", (await rows(page, "services"))[0][3], "3");
    same("status says live", (await page.textContent("#status-text")).startsWith("live"), true);
    await page.screenshot({ path: env("SHOT") });
    checkPng(env("SHOT"));

    await fixture("remove", /REMOVED/);
    let gone = true;
    await page.waitForSelector(p3, { state: "detached", timeout: 30000 }).catch(() => { gone = false; });
    check("removed provider disappears without reload", gone && await page.evaluate(() => window.__notReloaded === true),
      "row for 10.20.0.13:20880 is still there");

    // A click selects a service: OrderService has a consumer and no providers.
    await page.click(`#services tbody tr[data-interface="${ORDER}"]`);
    await page.waitForFunction(o => document.querySelector("#providers-of").textContent === "of " + o, ORDER, { timeout: 30000 });
    same("providers of OrderService", await rows(page, "providers"), [["No providers"]]);
    same("consumers of OrderService", (await rows(page, "consumers")).map(r => r.slice(0, 5)),
      [["10.20.0.31", "demo-consumer", "-", "-", "placeOrder, cancel"]]);
    same("no page errors", errors, []);
  } catch (e) {
    check("browser scenario", false, e.stack || String(e));
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  console.log(`browser: ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})();
