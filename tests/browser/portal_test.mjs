// The web portal in a real browser: headless Chromium driven through
// playwright-core against a taugridd with a few jobs. Pages must load without
// console errors, the jobs must appear, logs must stream; a screenshot of
// each page is kept as a test artifact (and, with SCREENSHOT_DIR, for the docs).
//
//   node tests/browser/portal_test.mjs BIN_DIR ARTIFACT_DIR
//
// Exits 77 (skipped) with the reason when Chromium or playwright-core is missing.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [binDir, artifactDir] = process.argv.slice(2);
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
function skip(why) {
  console.log(`SKIPPED: ${why}`);
  process.exit(77);
}
if (!fs.existsSync(chromiumPath)) skip(`Chromium is not installed (${chromiumPath}); scripts/install-deps installs the Debian package chromium`);
let chromium;
try {
  ({ chromium } = await import("playwright-core"));
} catch (e) {
  skip("playwright-core is not installed; scripts/install-deps runs npm ci in tests/browser");
}

const tau = path.join(binDir, "tau");
const base = fs.mkdtempSync(path.join(os.tmpdir(), "tau-portal-"));
const env = { ...process.env, TAU_HOME: path.join(base, "home"), NO_COLOR: "1", TAU_SERVER: "" };
const work = path.join(base, "work");
fs.mkdirSync(work);
// Two fake H200s (tests/fakes), so the GPU views have something to show.
const fakeNvml = path.join(binDir, "..", "lib", "libtau-fake-nvml.so");
if (fs.existsSync(fakeNvml)) {
  const scenario = path.join(base, "nvml.json");
  fs.writeFileSync(scenario, JSON.stringify({ devices: [
    { uuid: "GPU-0000-aaaa", name: "NVIDIA H200", memory_total_mib: 143771, temperature_c: 41, power_mw: 72000, utilization_gpu: 37 },
    { uuid: "GPU-1111-bbbb", name: "NVIDIA H200", memory_total_mib: 143771, temperature_c: 44, power_mw: 70000, utilization_gpu: 0 }] }));
  Object.assign(env, { TAU_NVML_LIBRARY: fakeNvml, TAU_FAKE_NVML: scenario, TAU_GPU_POLL_INTERVAL: "200ms" });
}
const run = (...args) => execFileSync(tau, args, { env, cwd: work, encoding: "utf8" });
fs.mkdirSync(artifactDir, { recursive: true });
const shots = [artifactDir];
if (process.env.SCREENSHOT_DIR) shots.push(process.env.SCREENSHOT_DIR);

let browser;
let failed = false;
function check(ok, what) {
  if (!ok) {
    console.error(`FAILED: ${what}`);
    failed = true;
  }
}
try {
  run("server", "start");
  fs.writeFileSync(path.join(work, "train.py"), [
    "import json, os, time",
    "for step in range(1, 301):",
    "    print(f'step {step} loss {1 / step:.3f}', flush=True)",
    "    with open(os.environ['TAU_METRICS_FILE'], 'a') as f:",
    "        f.write(json.dumps({'step': step, 'total_steps': 300, 'loss': 1 / step}) + '\\n')",
    "    time.sleep(0.2)",
  ].join("\n") + "\n");
  fs.writeFileSync(path.join(work, "train.yaml"),
    "schema_version: 1\nname: train\nrun:\n  entrypoint: train.py\ncompute:\n  cpus: 100m\n");
  fs.writeFileSync(path.join(work, "hello.yaml"),
    "schema_version: 1\nname: hello\nrun:\n  entrypoint: 'echo hello from the portal test'\ncompute:\n  cpus: 100m\n");
  run("run", "-f", path.join(work, "hello.yaml"));
  const id = run("run", path.join(work, "train.yaml")).trim();
  const login = run("portal", "--no-open").trim();

  browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("console", m => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", e => errors.push(String(e)));
  const shoot = async name => { for (const dir of shots) await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true }); };

  await page.goto(login);
  const cookies = await page.context().cookies();
  const session = cookies.find(c => c.name === "tau_session");
  check(session && session.httpOnly && session.sameSite === "Strict", "the sign-in sets an HttpOnly, SameSite=Strict cookie");
  check(!page.url().includes("token="), "the token leaves the address bar");
  await page.waitForSelector("text=Overview");
  await page.waitForSelector("text=Queue pressure");
  await shoot("overview");

  await page.goto(new URL("/#/jobs", login).href);
  await page.waitForSelector("text=hello");
  await page.waitForSelector(`text=${id}`);
  await shoot("jobs");

  await page.goto(new URL(`/#/jobs/${id}`, login).href);
  await page.waitForFunction(() => (document.getElementById("logs") || {}).textContent?.includes("step 3 loss"), null, { timeout: 30000 });
  const first = await page.textContent("#logs");
  await page.waitForFunction(n => document.getElementById("logs").textContent.length > n, first.length, { timeout: 30000 });
  check(true, "logs stream");
  await page.waitForSelector("text=Attempts");
  await shoot("job");

  await page.goto(new URL("/#/queues", login).href);
  await page.waitForSelector("text=ClusterQueue");
  await shoot("queues");
  await page.goto(new URL("/#/gpus", login).href);
  await page.waitForSelector("h1:has-text('GPUs')");
  if (fs.existsSync(fakeNvml)) await page.waitForSelector("text=GPU-1111-bbbb");
  await shoot("gpus");

  // A narrow window: the page itself does not scroll sideways (tables do).
  await page.setViewportSize({ width: 380, height: 800 });
  await page.goto(new URL("/#/jobs", login).href);
  await page.waitForSelector("text=hello");
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 1, `the page fits a narrow window (overflows by ${overflow}px)`);
  await shoot("jobs-narrow");

  check(errors.length === 0, `no console errors (${errors.join(" | ")})`);
} catch (e) {
  console.error(`FAILED: ${e.stack || e}`);
  failed = true;
  if (browser) {
    const pages = browser.contexts().flatMap(c => c.pages());
    if (pages.length) {
      await pages[0].screenshot({ path: path.join(artifactDir, "failure.png"), fullPage: true }).catch(() => {});
      console.error(`page text: ${(await pages[0].textContent("main").catch(() => "")).slice(0, 2000)}`);
    }
  }
} finally {
  if (browser) await browser.close();
  spawnSync(tau, ["cancel", "train"], { env, cwd: work });
  spawnSync(tau, ["server", "stop"], { env, cwd: work });
  fs.rmSync(base, { recursive: true, force: true });
}
if (failed) process.exit(1);
console.log(`portal browser test passed; screenshots in ${shots.join(", ")}`);
