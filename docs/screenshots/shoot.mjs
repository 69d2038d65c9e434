// Screenshots and axe-core over the site's main pages, in headless Chromium through the
// Chrome DevTools Protocol. Run by run.sh:
//   node --experimental-websocket shoot.mjs BASE_URL OUT_DIR AXE_JS CHROMIUM
// Writes OUT_DIR/<page>-1280.webp of the pages in PHOTOGRAPHED and OUT_DIR/axe.md (every page, both
// widths); exits 1 on any serious or critical violation, or on a page wider than its viewport.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [base, out, axePath, chromiumPath] = process.argv.slice(2);
if (!chromiumPath) {
  console.error("usage: shoot.mjs BASE_URL OUT_DIR AXE_JS CHROMIUM");
  process.exit(2);
}
const axeSource = readFileSync(axePath, "utf8");
const TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"];
const IMPACTS = ["critical", "serious", "moderate", "minor"];
// Viewport clips: enough to show each page's head and first tables, small enough to commit
// (WebP at this quality is about a fifth of the PNG's size, the text still sharp).
const QUALITY = 70;
// The answers of five engineer-typed queries of the relevance test (bench/web/relevance.md): a filter
// query, a typo, a model, a common name with a loose axis, and a dtype; only the answer is shown.
const QUERIES = [
  { name: "search", query: "gqa decode gpu:h200 batch_size=16" },
  { name: "search-typo", query: "rmsnrom hiden 4096" },
  { name: "search-model", query: "llama 3.1 8b gemm h200" },
  { name: "search-common-name", query: "attention decode h200 batch 64" },
  { name: "search-dtype", query: "fp16 matmul h100" },
];
const ANSWER_HEIGHT = { 1280: 1100, 400: 1600 };
// Operation pages of three op types under the H200 filter, each led by a Verified H200 run of our
// coverage lane (issue 32); at 1280 px only.
const VERIFIED_H200 = [
  { name: "verified-h200-mla-decode", slug: "mla-paged-decode-h16-ckv512-kpe64-ps1" },
  { name: "verified-h200-moe", slug: "moe-fp8-block-scale-ds-routing-topk8-ng8-kg4-e32-h7168-i2048" },
  { name: "verified-h200-ragged-prefill", slug: "gqa-ragged-prefill-causal-h32-kv8-d128" },
];
// Photographed (at 1280 px only, to keep the tree small: issue 35): the ranked answer of the first
// query and the three Verified H200 operation pages. Every other page, and every page at 400 px, is
// checked by axe only; the earlier shots of every page at both widths are in git history at commit
// bef9f60 (docs/screenshots/README.md).
const PHOTOGRAPHED = new Set(["search", ...VERIFIED_H200.map((o) => o.name)]);
const SHOT_WIDTH = 1280;
const WIDTHS = [
  { width: 1280, maxHeight: 1800, mobile: false },
  { width: 400, maxHeight: 2200, mobile: true },
];

async function json(path) {
  const response = await fetch(base + path);
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}

// The pages, picked from the API so the script follows the catalog it serves.
async function pages() {
  const query = QUERIES[0].query;
  const search = await json(`/api/v1/search?q=${encodeURIComponent(query)}`);
  const operation = search.answer?.operation?.slug;
  const [first, second] = (search.answer?.cohorts?.[0]?.fastest ?? []).map((r) => r.runId);
  if (!operation || !first || !second) throw new Error(`the search for "${query}" gave no ranked answer with a #2`);
  const models = await json("/api/v1/models");
  const model = models.models.find((m) => m.measured > 0) ?? models.models[0];
  if (!model) throw new Error("no model page to show");
  const native = await json(`/api/v1/search?q=kernelindex-native`);
  const source = (native.results ?? []).find((r) => r.kind === "implementation" && r.href.startsWith("/implementations/kernelindex-native"))?.href;
  if (!source) throw new Error("the search for kernelindex-native found no implementation page");
  return [
    { name: "home", path: "/" },
    ...QUERIES.map((q) => ({ name: q.name, path: `/?q=${encodeURIComponent(q.query)}`, answer: q.name !== "search" })),
    { name: "operation", path: `/operations/${operation}` },
    { name: "dossier", path: `/runs/${first}` },
    ...VERIFIED_H200.map((o) => ({ name: o.name, path: `/operations/${o.slug}?gpu=nvidia-h200`, widths: [1280] })),
    { name: "gpu", path: "/gpus/nvidia-h200" },
    { name: "model", path: model.href },
    { name: "source", path: source },
    // Never photographed.
    { name: "compare", path: `/compare?run=${first}&run=${second}` },
    { name: "records", path: "/records" },
    { name: "resolve", path: "/resolve" },
    { name: "docs", path: "/docs" },
    { name: "gpus", path: "/gpus" },
    { name: "models", path: "/models" },
    { name: "operations", path: "/operations" },
    { name: "diff", path: `${source}/diff` },
    { name: "compare-empty", path: "/compare" },
    { name: "verifications", path: "/verifications" },
  ];
}

function launch() {
  const profile = mkdtempSync(join(tmpdir(), "ki-shots-"));
  const child = spawn(
    chromiumPath,
    [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--hide-scrollbars",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--remote-debugging-port=0",
      `--user-data-dir=${profile}`,
      "about:blank",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const endpoint = new Promise((resolve, reject) => {
    let seen = "";
    child.stderr.on("data", (chunk) => {
      seen += chunk;
      const found = seen.match(/DevTools listening on (ws:\/\/\S+)/);
      if (found) resolve(found[1]);
    });
    child.on("exit", (code) => reject(new Error(`chromium exited (${code}): ${seen}`)));
  });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  // Closed through the protocol when it answers, so that no helper process outlives it.
  const stop = async () => {
    try {
      const browser = await Devtools.connect(await endpoint);
      await Promise.race([browser.send("Browser.close"), exited]);
    } catch {
      child.kill();
    }
    await exited;
    rmSync(profile, { recursive: true, force: true });
  };
  return { endpoint, stop };
}

class Devtools {
  constructor(socket) {
    this.socket = socket;
    this.next = 0;
    this.pending = new Map();
    this.waiters = [];
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.id !== undefined) {
        const call = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (message.error) call.reject(new Error(`${call.method}: ${JSON.stringify(message.error)}`));
        else call.resolve(message.result);
      } else {
        const waiter = this.waiters.findIndex((w) => w.method === message.method);
        if (waiter >= 0) this.waiters.splice(waiter, 1)[0].resolve(message.params);
      }
    };
  }

  static async connect(url) {
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = () => reject(new Error(`cannot connect to ${url}`));
    });
    return new Devtools(socket);
  }

  send(method, params = {}) {
    const id = ++this.next;
    this.socket.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) => this.pending.set(id, { method, resolve, reject }));
  }

  event(method) {
    return new Promise((resolve) => this.waiters.push({ method, resolve }));
  }

  async evaluate(expression) {
    const { result, exceptionDetails } = await this.send("Runtime.evaluate", {
      expression,
      awaitPromise: true,
      returnByValue: true,
    });
    if (exceptionDetails) throw new Error(`${expression.slice(0, 60)}…: ${JSON.stringify(exceptionDetails)}`);
    return result.value;
  }

  async open(url, width, height, mobile) {
    await this.send("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 1, mobile });
    const loaded = this.event("Page.loadEventFired");
    const { errorText } = await this.send("Page.navigate", { url });
    if (errorText) throw new Error(`${url}: ${errorText}`);
    await loaded;
    await this.evaluate("document.fonts.ready.then(() => true)");
  }
}

async function main() {
  const list = await pages();
  const browser = launch();
  try {
    const browserUrl = new URL(await browser.endpoint);
    const targets = await (await fetch(`http://${browserUrl.host}/json/list`)).json();
    const page = await Devtools.connect(targets.find((t) => t.type === "page").webSocketDebuggerUrl);
    await page.send("Page.enable");
    // The pages forbid inline and foreign script (CSP); axe is injected by the protocol.
    await page.send("Page.setBypassCSP", { enabled: true });
    const version = (await page.send("Browser.getVersion")).product;

    const rows = [];
    let failed = false;
    for (const p of list) {
      for (const { width, maxHeight, mobile } of WIDTHS.filter((w) => !p.widths || p.widths.includes(w.width))) {
        const url = base + p.path;
        await page.open(url, width, 900, mobile);
        const layout = await page.evaluate(
          // clientWidth, not innerWidth: a phone zooms out to show a page wider than itself.
          "({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth, height: document.documentElement.scrollHeight })",
        );
        const shot = PHOTOGRAPHED.has(p.name) && width === SHOT_WIDTH;
        const file = `${p.name}-${width}${shot ? ".webp" : ""}`;
        if (shot) {
          const height = Math.min(layout.height, p.answer ? ANSWER_HEIGHT[width] : maxHeight);
          await page.send("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 1, mobile });
          const image = await page.send("Page.captureScreenshot", { format: "webp", quality: QUALITY });
          writeFileSync(join(out, file), Buffer.from(image.data, "base64"));
        }

        await page.evaluate(axeSource + "\ntrue");
        const results = await page.evaluate(
          `axe.run(document, { runOnly: { type: "tag", values: ${JSON.stringify(TAGS)} }, resultTypes: ["violations"] })` +
            `.then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, help: v.help, targets: v.nodes.map((n) => n.target.join(" ")) })))`,
        );
        const overflow = layout.scrollWidth > layout.clientWidth;
        const blocking = results.filter((v) => v.impact === "serious" || v.impact === "critical");
        if (blocking.length > 0 || overflow) failed = true;
        rows.push({ page: p, width, results, overflow, layout, file });
        const summary = results.map((v) => `${v.impact} ${v.id} (${v.nodes}: ${v.targets.slice(0, 3).join("; ")})`).join(", ") || "no violations";
        console.log(`${file}: ${summary}${overflow ? `; page ${layout.scrollWidth} px wide in ${width}` : ""}`);
      }
    }
    writeFileSync(join(out, "axe.md"), report(rows, version));
    page.socket.close();
    return failed;
  } finally {
    await browser.stop();
  }
}

function report(rows, version) {
  const axeVersion = axeSource.match(/axe v([0-9.]+)/)?.[1] ?? "unknown";
  const lines = [
    "# axe-core over the screenshot pages",
    "",
    `axe-core ${axeVersion} in ${version}, rules tagged ${TAGS.join(", ")}; written by \`bash docs/screenshots/run.sh\`.`,
    "A serious or critical violation, or a page wider than its viewport, fails the run.",
    "",
    "| page | path | width | critical | serious | moderate | minor | rules | fits the width | height (px) |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |",
  ];
  for (const r of rows) {
    const count = (impact) => r.results.filter((v) => v.impact === impact).length;
    const rules = r.results.map((v) => `${v.id} (${v.impact}, ${v.nodes} nodes)`).join("; ") || "none";
    const fits = r.overflow ? `no: ${r.layout.scrollWidth} px` : "yes";
    lines.push(
      `| ${r.page.name} | \`${r.page.path}\` | ${r.width} | ${IMPACTS.map(count).join(" | ")} | ${rules} | ${fits} | ${r.layout.height} |`,
    );
  }
  return lines.join("\n") + "\n";
}

main().then(
  (failed) => process.exit(failed ? 1 : 0),
  (error) => {
    console.error(error);
    process.exit(2);
  },
);
