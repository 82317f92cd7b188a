// Drives the web console in a real Chromium (Playwright, no test runner)
// against a running flightns, as cmd/flightns's TestConsoleInABrowser
// sets it up: a writer and a reader, LanceDB's table with branches and
// tags, hostile names, a table with many versions, a partitioned table.
//
//   node console.mjs '<config json>'
//
// config: {url, writer: {user, password}, reader: {token, name},
// table: [id], branch, tag, paged: [id], pagedVersions (after every
// commit), during (the versions of the commits the activity page watches),
// fresh: [id] (the table created then), partitioned: [id],
// partitionFilter, hostile: {namespace, table, unicode, property},
// openUrl: a console without authentication, crossSite: {rest, namespace}
// the REST surface of that server and a namespace on it that another
// origin's page tries to drop, screenshots: a directory, or "" for none}.
//
// When it needs changes it prints {"wait": what} and reads one line from
// stdin before it goes on: "commits" (the activity page watching: versions
// of paged, then the table fresh created), "version" (paged's page
// watching: one more version of it), "elsewhere" (a change of another
// table).
// It ends with one JSON line: {"ok", "failures": [...], "checks": {name:
// bool}, "seen": {...}, "dialogs", "csp", "pageErrors"}; the Go test
// asserts on it. Failures are reported in the JSON, never only on stderr.
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import * as readline from "node:readline";
import { chromium } from "playwright-core";

const cfg = JSON.parse(process.argv[2]);
const report = { ok: false, failures: [], checks: {}, seen: {}, dialogs: [], csp: [], pageErrors: [] };
// cspSink is where violations go: report.csp, but the detector's own
// test's list while that runs.
let cspSink = report.csp;
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

function check(name, ok, detail) {
  report.checks[name] = Boolean(ok);
  if (!ok) report.failures.push(`${name}${detail === undefined ? "" : ": " + (typeof detail === "string" ? detail : JSON.stringify(detail))}`);
  return ok;
}

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const stdin = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

// until polls fn (async) until it returns a truthy value or timeout ms
// pass; it returns the last value.
async function until(fn, timeout = 15000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    let v;
    try {
      v = await fn();
    } catch {
      v = undefined;
    }
    if (v || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 150));
  }
}

const hashOf = (page, id = []) => "#/" + [page, ...id.map(encodeURIComponent)].join("/");
const exact = (s) => new RegExp("^" + s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "$");

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-default-apps", "--disable-sync", "--metrics-recording-only", "--no-first-run", "--disable-extensions"],
});
// A new context: a fresh, empty profile (no cookies, no storage).
const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
const page = await context.newPage();
page.setDefaultTimeout(15000);

// Whatever the pages do, no dialog may open (an injected alert would),
// no CSP violation may happen, no script may throw.
page.on("dialog", async (d) => {
  report.dialogs.push(`${d.type()}: ${d.message()}`);
  await d.dismiss().catch(() => {});
});
page.on("pageerror", (e) => report.pageErrors.push(String((e && e.stack) || e)));
page.on("console", (m) => {
  if (/Content Security Policy|Refused to (load|execute|apply|connect|frame)/i.test(m.text())) cspSink.push(`console: ${m.text()}`);
});
await page.exposeBinding("__flightnsCSP", (_src, v) => cspSink.push(v));
await page.addInitScript(() => {
  document.addEventListener("securitypolicyviolation", (e) =>
    window.__flightnsCSP(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} ${e.sample || ""}`.trim()));
});

async function shot(name) {
  if (!cfg.screenshots) return;
  await page.waitForTimeout(300); // the last paint
  await page.screenshot({ path: path.join(cfg.screenshots, `${name}.png`), fullPage: true });
}

const testid = (id) => page.getByTestId(id);
const text = async (id) => (await testid(id).first().textContent()) ?? "";
const hash = () => page.evaluate(() => location.hash);
const go = (h) => page.evaluate((x) => { location.hash = x; }, h);
const versionsShown = () => page.locator("[data-testid=version-row]").evaluateAll((rows) => rows.map((r) => Number(r.dataset.version)));

// requests are the console's API calls the page made, in order: {path,
// at}. quietCalls(ms) waits ms and answers the calls made meanwhile, the
// change feed's held stream aside (a live page needs no other).
const requests = [];
page.on("request", (r) => {
  const u = new URL(r.url());
  if (u.pathname.startsWith("/api/")) requests.push({ path: u.pathname, at: Date.now() });
});
async function quietCalls(ms) {
  const from = requests.length;
  await page.waitForTimeout(ms);
  return requests.slice(from);
}

// markPage marks the document; pageNotReloaded says whether the mark is
// still there (a reload or a navigation would make a new document).
const markPage = () => page.evaluate(() => { window.__flightnsMark = 1; });
const pageNotReloaded = () => page.evaluate(() => window.__flightnsMark === 1);

async function login(mode, fields) {
  await testid("login-form").waitFor();
  await testid(`login-mode-${mode}`).click();
  for (const [k, v] of Object.entries(fields)) await testid(`login-${k}`).fill(v);
  await testid("login-submit").click();
}

try {
  // The page, its headers, and the login.
  const resp = await page.goto(cfg.url);
  const hdr = resp.headers();
  report.seen.csp = hdr["content-security-policy"];
  check("csp header", hdr["content-security-policy"] === CSP, hdr["content-security-policy"]);
  check("nosniff, no framing, no referrer", hdr["x-content-type-options"] === "nosniff" &&
    hdr["x-frame-options"] === "DENY" && hdr["referrer-policy"] === "no-referrer", hdr);
  await testid("login-form").waitFor();
  check("login page when not logged in", await testid("page-login").isVisible());
  await shot("login");

  await login("password", { user: cfg.writer.user, password: "not-the-password" });
  await testid("login-error").waitFor();
  report.seen.badLogin = await text("login-error");
  check("a bad password shows the error", /Unauthenticated/.test(report.seen.badLogin) && /code 16/.test(report.seen.badLogin), report.seen.badLogin);

  await login("password", { user: cfg.writer.user, password: cfg.writer.password });
  await testid("principal").waitFor();
  check("logged in as the writer", (await text("principal")) === cfg.writer.user, await text("principal"));

  // The catalog: the root's namespaces (hostile names as text) and tables.
  await testid("ns-link").first().waitFor();
  const names = await testid("ns-link").allTextContents();
  report.seen.rootNamespaces = names;
  for (const n of [cfg.hostile.namespace, cfg.hostile.unicode]) check(`the tree shows ${JSON.stringify(n)} as text`, names.includes(n), names);
  // The tables that need a compaction: the worn one (its statistics come
  // a moment after its commit: reload until they have).
  const wornId = cfg.worn.join("$");
  const due = await until(async () => {
    await testid("ns-compaction-count").waitFor();
    const rows = await page.locator("[data-testid=compaction-row]").evaluateAll((rs) => rs.map((r) => r.dataset.table));
    if (rows.includes(wornId)) return rows;
    await page.reload();
    return null;
  }, 30000);
  report.seen.compactionDue = due;
  check("the catalog lists the table that needs a compaction", due && due.includes(wornId) && !due.includes(cfg.table.join("$")), due);
  await shot("catalog");
  await page.locator(`[data-testid=ns-table][data-name="${cfg.table[0]}"] a`).click();

  // LanceDB's table: versions, the branch graph, tags, verify.
  await until(async () => (await hash()) === hashOf("table", cfg.table));
  await testid("table-name").waitFor();
  check("the table page", (await text("table-name")) === cfg.table[cfg.table.length - 1]);
  await testid("version-row").first().waitFor();
  const versions = await versionsShown();
  report.seen.mainVersions = versions;
  check("main's versions, newest first", versions.length > 1 && versions.every((v, i) => i === 0 || v < versions[i - 1]), versions);
  await page.locator(`[data-testid=graph-lane][data-branch="${cfg.branch}"]`).waitFor();
  const dots = await page.locator(`[data-testid=graph-dot][data-branch="${cfg.branch}"]`).count();
  check(`branch ${cfg.branch} in the graph`, dots > 0, dots);
  const mainDots = await page.locator('[data-testid=graph-dot][data-branch="main"]').count();
  check("main in the graph", mainDots === Math.min(versions.length, 30), mainDots);
  check(`tag ${cfg.tag} in the graph`, (await page.locator(`[data-testid=graph-tag][data-tag="${cfg.tag}"]`).count()) === 1);
  check("the schema", (await page.locator("[data-testid=schema] tbody tr").count()) > 0);
  await testid("maint-versions").waitFor();
  report.seen.maintenance = { versions: await text("maint-versions"), latest: await text("maint-latest"),
    needs: await testid("maint-needs").getAttribute("data-needs"), fragments: await text("maint-fragments") };
  check("the maintenance panel counts main's versions", report.seen.maintenance.versions === String(versions.length) &&
    report.seen.maintenance.latest === String(versions[0]), report.seen.maintenance);
  check("the maintenance panel: no compaction needed", report.seen.maintenance.needs === "false", report.seen.maintenance);
  await testid("verify-run").click();
  await testid("verify-summary").waitFor();
  check("verify says ok", (await testid("verify-summary").getAttribute("data-ok")) === "true", await text("verify-summary"));
  await page.evaluate(() => window.scrollTo(0, 0));
  await shot("table");
  await page.locator(`[data-testid=graph-lane][data-branch="${cfg.branch}"] [data-testid=graph-lane-name]`).click();
  const branchRows = await until(async () => {
    const b = await page.locator("[data-testid=version-row]").evaluateAll((rows) => rows.map((r) => r.dataset.branch));
    return b.length && b.every((x) => x === cfg.branch) ? b : null;
  });
  check("clicking a lane lists its branch's versions", branchRows, branchRows);

  // The worn table's panel: what LanceDB's manifest says.
  await go(hashOf("table", cfg.worn));
  await until(async () => (await text("table-name")) === cfg.worn[cfg.worn.length - 1]);
  await testid("maint-needs").waitFor();
  report.seen.wornMaintenance = { needs: await testid("maint-needs").getAttribute("data-needs"), small: await text("maint-small"),
    fragments: await text("maint-fragments"), deleted: await text("maint-deleted"), versions: await text("maint-versions") };
  check("the maintenance panel of a worn table", report.seen.wornMaintenance.needs === "true" && report.seen.wornMaintenance.small === "12" &&
    report.seen.wornMaintenance.fragments === "12" && report.seen.wornMaintenance.deleted === "24 (20.0%)" &&
    report.seen.wornMaintenance.versions === "1", report.seen.wornMaintenance);
  await shot("maintenance");

  // Hostile names: a namespace, its property, its table, a Unicode path.
  await go("#/ns");
  await testid("ns-link").filter({ hasText: exact(cfg.hostile.namespace) }).click();
  await until(async () => (await text("ns-name")) === cfg.hostile.namespace);
  check("hostile namespace title is text", (await text("ns-name")) === cfg.hostile.namespace, await text("ns-name"));
  check("its route encodes each level", (await hash()) === hashOf("ns", [cfg.hostile.namespace]), await hash());
  check("hostile property value is text", (await text("ns-properties")).includes(cfg.hostile.property), await text("ns-properties"));
  const planted = await page.evaluate(() => ({ img: document.querySelectorAll("img").length, script: document.querySelectorAll("script").length }));
  check("no planted element", planted.img === 0 && planted.script === 2, planted);
  await shot("hostile-namespace");
  await page.locator("[data-testid=table-link]").filter({ hasText: exact(cfg.hostile.table) }).click();
  await until(async () => (await text("table-name")) === cfg.hostile.table);
  check("hostile table title is text", (await text("table-name")) === cfg.hostile.table, await text("table-name"));
  check("hostile table route", (await hash()) === hashOf("table", [cfg.hostile.namespace, cfg.hostile.table]), await hash());
  await go("#/ns");
  const uni = page.locator("[data-testid=ns-node]").filter({ has: page.getByTestId("ns-link").filter({ hasText: exact(cfg.hostile.unicode) }) });
  await uni.getByTestId("ns-toggle").first().click();
  await uni.getByTestId("ns-link").filter({ hasText: exact(cfg.hostile.namespace) }).click();
  await until(async () => (await hash()) === hashOf("ns", [cfg.hostile.unicode, cfg.hostile.namespace]));
  await until(async () => (await testid("crumb").count()) === 3);
  const crumbs = await testid("crumb").allTextContents();
  check("a nested hostile path in the breadcrumb", JSON.stringify(crumbs) === JSON.stringify(["root", cfg.hostile.unicode, cfg.hostile.namespace]), crumbs);

  // SQL: rows, a refused statement, downloads.
  await testid("nav-sql").click();
  const editor = testid("sql-editor");
  await editor.fill("SELECT object_id, object_type FROM __manifest WHERE object_type <> 'table_version' ORDER BY object_id");
  await editor.press("Control+Enter");
  await testid("sql-grid").waitFor();
  const cells = await page.locator("[data-testid=sql-grid] tbody td").allTextContents();
  check("a query's rows", cells.includes(cfg.table.join("$")), cells.slice(0, 20));
  check("hostile names in the grid as text", cells.includes(cfg.hostile.namespace) && cells.includes(`${cfg.hostile.namespace}$${cfg.hostile.table}`), cells);
  report.seen.sqlMeta = await text("sql-meta");
  check("elapsed and rows shown", /ms$/.test(await text("sql-elapsed")) && /^rows 1–/.test(await text("sql-rows")), report.seen.sqlMeta);
  await shot("sql");

  await editor.fill("DROP TABLE namespaces");
  await testid("sql-run").click();
  await testid("sql-error").waitFor();
  const refused = await testid("sql-error").evaluate((el) => ({ type: el.dataset.type, code: el.dataset.code, text: el.textContent }));
  report.seen.refused = refused;
  check("a refused statement's type, code and message", refused.type === "PermissionDenied" && refused.code === "15" &&
    /DROP statements are refused/.test(refused.text), refused);
  await shot("sql-refused");

  await editor.fill("SELECT object_id FROM tables ORDER BY object_id");
  await editor.press("Control+Enter");
  await testid("sql-grid").waitFor();
  const [csv] = await Promise.all([page.waitForEvent("download"), testid("sql-csv").click()]);
  const csvText = fs.readFileSync(await csv.path(), "utf8");
  report.seen.csv = { name: csv.suggestedFilename(), head: csvText.slice(0, 200) };
  check("CSV download", csv.suggestedFilename().endsWith(".csv") && csvText.startsWith("object_id") &&
    csvText.includes(cfg.table.join("$")), report.seen.csv);
  const [arrow] = await Promise.all([page.waitForEvent("download"), testid("sql-arrow").click()]);
  const arrowBytes = fs.readFileSync(await arrow.path());
  report.seen.arrow = { name: arrow.suggestedFilename(), bytes: arrowBytes.length };
  check("Arrow download (an IPC stream)", arrowBytes.length > 8 && arrowBytes.readUInt32LE(0) === 0xffffffff, report.seen.arrow);

  // Activity: the page is live. Commits and a table created while it is
  // open appear in its list of changes, newest first, without a reload;
  // the charts move; and nothing is read on a timer: while the catalog is
  // quiet the page makes no request at all.
  await testid("nav-activity").click();
  const chart = page.locator("[data-testid=chart-commits]");
  await until(async () => (await chart.getAttribute("data-samples")) !== null);
  const sum0 = Number(await chart.getAttribute("data-sum"));
  check("uPlot drew", (await page.locator("[data-testid=chart-commits] canvas").count()) > 0);
  check("the activity page follows the change feed", await until(async () => (await testid("live-status").getAttribute("data-state")) === "live"),
    await testid("live-status").getAttribute("data-state"));
  await markPage();
  const activityCalls = requests.length;
  emit({ wait: "commits" });
  const answer = await stdin.next();
  check("the test committed", !answer.done && answer.value.trim() === "done", answer);
  const changeRows = () => page.locator("[data-testid=change-row]").evaluateAll((rows) =>
    rows.map((r) => ({ type: r.dataset.type, id: r.dataset.id, version: r.dataset.version })));
  const tickerId = cfg.paged.join("$");
  const liveRows = await until(async () => {
    const rows = await changeRows();
    return rows.some((r) => r.type === "table.declared" && r.id === cfg.fresh.join("$")) &&
      rows.filter((r) => r.type === "table.version.created" && r.id === tickerId).length === cfg.during ? rows : null;
  }, 30000);
  report.seen.activityChanges = liveRows || await changeRows();
  check("the commits appear without a reload", liveRows && await pageNotReloaded() &&
    JSON.stringify(liveRows.filter((r) => r.id === tickerId).map((r) => Number(r.version))) ===
      JSON.stringify(Array.from({ length: cfg.during }, (_, i) => cfg.pagedVersions - 1 - i)), report.seen.activityChanges);
  check("the table created appears on top, newest first", liveRows && liveRows[0].type === "table.declared" &&
    liveRows[0].id === cfg.fresh.join("$"), report.seen.activityChanges);
  const sum1 = await until(async () => {
    const v = Number(await chart.getAttribute("data-sum"));
    return v > sum0 ? v : 0;
  }, 30000);
  report.seen.commitsSum = [sum0, sum1];
  check("commits/s rose after the commits", sum1 > sum0, [sum0, sum1]);
  check("the operations table lists version commits",
    await until(async () => (await page.locator('[data-testid=op-row][data-op="rest CreateTableVersion"]').count()) === 1));
  await shot("activity");
  // The charts are drawn again a sampling interval after the last change
  // (and once more if changes came meanwhile): let that pass, then watch.
  await page.waitForTimeout(6000);
  const quietActivity = await quietCalls(5000);
  report.seen.activityQuiet = quietActivity;
  check("the activity page makes no request while the catalog is quiet", quietActivity.length === 0, quietActivity);
  const feeds = requests.slice(activityCalls).filter((r) => r.path === "/api/v1/changes");
  check("the activity page holds one change feed", feeds.length === 0 &&
    requests.slice(0, activityCalls).filter((r) => r.path === "/api/v1/changes").length >= 1 &&
    await pageNotReloaded(), requests.filter((r) => r.path === "/api/v1/changes"));

  // A table's page is live too: a version committed while it is open
  // shows (its latest version, its versions) without a reload, and a
  // change of another table reads nothing. Its first stream breaks at
  // once (an error event, as the server's): the page opens the feed again
  // after a pause, resuming after the sequence it had (Last-Event-ID).
  const feedCalls = [];
  const isFeed = (u) => u.pathname === "/api/v1/changes";
  await page.route(isFeed, async (route) => {
    const r = route.request();
    feedCalls.push({ at: Date.now(), lastEventId: await r.headerValue("last-event-id"), url: r.url(),
      header: await r.headerValue("x-flightns-console") });
    if (feedCalls.length === 1) {
      await route.fulfill({ status: 200, contentType: "text/event-stream",
        body: 'event: error\ndata: {"error":"the stream broke (the test)","code":17}\n\n' });
    } else {
      await route.continue();
    }
  });
  await go(hashOf("table", cfg.paged));
  const first0 = await until(async () => {
    const v = await versionsShown();
    return v.length === 50 ? v : null;
  });
  check("the first page of versions", first0 && first0[0] === cfg.pagedVersions - 1, first0);
  check("the table page follows the change feed", await until(async () => (await testid("live-status").getAttribute("data-state")) === "live"),
    await testid("live-status").getAttribute("data-state"));
  await page.unroute(isFeed);
  report.seen.feedCalls = feedCalls;
  check("a broken feed is opened again after a pause, after the same sequence", feedCalls.length === 2 &&
    /^[0-9]+$/.test(feedCalls[0].lastEventId || "") && feedCalls[1].lastEventId === feedCalls[0].lastEventId &&
    feedCalls[1].at - feedCalls[0].at >= 900 && feedCalls.every((c) => c.header === "1") &&
    new URL(feedCalls[0].url).searchParams.get("table") === cfg.paged.join("$"), feedCalls);
  await markPage();
  emit({ wait: "version" });
  const answered = await stdin.next();
  check("the test committed a version", !answered.done && answered.value.trim() === "done", answered);
  const liveTable = await until(async () => {
    const v = await versionsShown();
    const latest = await text("table-version");
    return v[0] === cfg.pagedVersions && latest === String(cfg.pagedVersions) ? { versions: v.slice(0, 3), latest } : null;
  }, 30000);
  report.seen.liveTable = liveTable || { versions: (await versionsShown()).slice(0, 3), latest: await text("table-version") };
  check("the table page shows the new version without a reload", liveTable && await pageNotReloaded() &&
    await until(async () => (await text("maint-latest")) === String(cfg.pagedVersions)), report.seen.liveTable);
  await page.waitForTimeout(1000); // the redraw's reads end
  const callsBefore = requests.length;
  emit({ wait: "elsewhere" });
  const elsewhere = await stdin.next();
  check("the test changed another table", !elsewhere.done && elsewhere.value.trim() === "done", elsewhere);
  const quietTable = await quietCalls(5000);
  report.seen.tableQuiet = { quiet: quietTable, feeds: requests.slice(callsBefore).filter((r) => r.path === "/api/v1/changes") };
  check("the table page reads nothing on a timer, nor for another table's change", quietTable.length === 0 &&
    report.seen.tableQuiet.feeds.length === 0, report.seen.tableQuiet);

  // A table with more versions than a page: older and newer.
  const first = await versionsShown();
  check("a full first page", first.length === 50 && first[0] === cfg.pagedVersions, first);
  await testid("versions-older").click();
  const older = await until(async () => {
    const v = await versionsShown();
    return v[0] === cfg.pagedVersions - 50 ? v : null;
  });
  check("older versions", older && older.length === cfg.pagedVersions - 50 && older[older.length - 1] === 1, older);
  check("no page older than the oldest", await testid("versions-older").isDisabled());
  await testid("versions-newer").click();
  check("back to the newest", await until(async () => (await versionsShown())[0] === cfg.pagedVersions));

  await testid("nav-sql").click();
  await testid("sql-limit").selectOption("50");
  await testid("sql-editor").fill(`SELECT version FROM table_versions WHERE table_id = '${cfg.paged.join("$")}' ORDER BY version`);
  await testid("sql-run").click();
  await until(async () => /^rows 1–50 \(more follow\)$/.test(await text("sql-rows")));
  await testid("sql-next").click();
  const next = await until(async () => {
    const t = await text("sql-rows");
    return /^rows 51–/.test(t) ? t : null;
  });
  check("the next page of a result", next === `rows 51–${cfg.pagedVersions}`, next);
  check("previous after next", !(await testid("sql-prev").isDisabled()) && (await testid("sql-next").isDisabled()));

  // plan_scan: every partition, then one kept and the others pruned.
  await go(hashOf("plan", cfg.partitioned));
  await testid("plan-summary").waitFor();
  const keptAll = await page.locator("[data-testid=plan-kept] tbody tr").count();
  await testid("plan-filter").fill(cfg.partitionFilter);
  await testid("plan-run").click();
  await until(async () => (await page.locator("[data-testid=plan-pruned] tbody tr:not(:has(td.empty))").count()) > 0);
  const kept = await page.locator("[data-testid=plan-kept] tbody tr").count();
  const pruned = await page.locator("[data-testid=plan-pruned] tbody tr").count();
  report.seen.plan = { keptAll, kept, pruned, summary: await text("plan-summary") };
  check("plan_scan keeps one partition and prunes the others", keptAll === 3 && kept === 1 && pruned === 2, report.seen.plan);
  await shot("plan");

  await testid("nav-health").click();
  await testid("health-ready").waitFor();
  check("health: ready", (await testid("health-ready").getAttribute("data-ready")) === "true");
  const deps = await page.locator("[data-testid=health-checks] tbody tr").evaluateAll((rows) => rows.map((r) => r.dataset.ok));
  check("health: Redis, storage and SQL ok", deps.length === 3 && deps.every((x) => x === "true"), deps);
  await shot("health");

  // Logout, then the reader (with a token): it reads, it cannot change.
  await testid("logout").click();
  await testid("login-form").waitFor();
  const after = await page.evaluate(async () => (await fetch("/api/session", { headers: { "X-Flightns-Console": "1" } })).status);
  check("logged out: the session is gone", after === 401, after);
  await login("token", { token: cfg.reader.token });
  await testid("principal").waitFor();
  check("logged in as the reader", (await text("principal")) === cfg.reader.name, await text("principal"));
  await go("#/ns");
  await testid("ns-link").first().waitFor();
  const mutate = (withHeader) => page.evaluate(async (withIt) => {
    const headers = { "Content-Type": "application/json" };
    if (withIt) headers["X-Flightns-Console"] = "1";
    const r = await fetch("/api/v1/namespace/x/create", { method: "POST", credentials: "same-origin", headers, body: "{}" });
    return { status: r.status, body: await r.text() };
  }, withHeader);
  const denied = await mutate(true);
  report.seen.readerMutation = denied;
  check("a reader's mutation answers 403", denied.status === 403 && /PermissionDenied/.test(denied.body), denied);
  const noHeader = await mutate(false);
  check("a call without the console's header answers 403", noHeader.status === 403 && /cross-site/.test(noHeader.body), noHeader);

  // Without authentication the console is open: no login page, no
  // logout, everyone anonymous.
  if (cfg.openUrl) {
    const open = await browser.newContext();
    const p = await open.newPage();
    p.on("dialog", async (d) => {
      report.dialogs.push(`${d.type()}: ${d.message()}`);
      await d.dismiss().catch(() => {});
    });
    p.on("pageerror", (e) => report.pageErrors.push(String((e && e.stack) || e)));
    await p.goto(cfg.openUrl);
    await p.getByTestId("page-ns").waitFor();
    const who = await p.getByTestId("principal").textContent();
    const seen = { who, logout: await p.getByTestId("logout").isVisible(), login: await p.getByTestId("page-login").count() };
    report.seen.open = seen;
    check("an open console needs no login", who === "open (no authentication)" && !seen.logout && seen.login === 0, seen);
    await open.close();
  }

  // A page of another origin cannot drive REST, even without
  // authentication: served from another loopback port (same-site to
  // 127.0.0.1) and from localhost (cross-site), it tries to drop a
  // namespace with no-cors fetches (a text/plain body, a typeless blob:
  // requests a browser sends without asking first) and with a cors one
  // (application/json: its preflight is refused, so it is never sent).
  // The Go test checks that the namespace survived and that the refused
  // requests reached the server.
  if (cfg.crossSite) {
    const evil = http.createServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      res.end("<!doctype html><title>another origin</title><p>nothing to see</p>");
    });
    await new Promise((resolve) => evil.listen(0, "127.0.0.1", resolve));
    const port = evil.address().port;
    const attempts = [];
    try {
      for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
        const other = await browser.newContext();
        const p = await other.newPage();
        await p.goto(`${origin}/`);
        const sent = await p.evaluate(async ({ rest, ns }) => {
          const url = `${rest}/v1/namespace/${encodeURIComponent(ns)}/drop`;
          const out = [];
          for (const [what, init] of [
            ["no-cors text/plain", { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: '{"behavior": "Cascade"}' }],
            ["no-cors typeless blob", { method: "POST", mode: "no-cors", body: new Blob(['{"behavior": "Cascade"}']) }],
            ["cors application/json", { method: "POST", mode: "cors", headers: { "Content-Type": "application/json" }, body: '{"behavior": "Cascade"}' }],
          ]) {
            try {
              const r = await fetch(url, init);
              out.push({ what, type: r.type, status: r.status });
            } catch (e) {
              out.push({ what, error: String(e) });
            }
          }
          return out;
        }, { rest: cfg.crossSite.rest, ns: cfg.crossSite.namespace });
        attempts.push({ origin, sent });
        await other.close();
      }
    } finally {
      evil.close();
    }
    report.seen.crossSite = attempts;
    check("another origin's no-cors fetches were sent", attempts.length === 2 &&
      attempts.every((a) => a.sent.filter((x) => x.what.startsWith("no-cors")).every((x) => x.type === "opaque")), attempts);
    check("another origin's cors fetch stops at its preflight", attempts.length === 2 &&
      attempts.every((a) => a.sent.some((x) => x.what.startsWith("cors") && x.error)), attempts);
  }

  // The CSP detector works: a style attribute set from script is a
  // violation the page reports (into its own list, not counted).
  const canary = [];
  cspSink = canary;
  await page.evaluate(() => document.body.setAttribute("style", "color: red"));
  await until(async () => canary.length >= 2, 5000); // the event and the console message
  await page.waitForTimeout(300);
  check("the CSP violation detector works", canary.some((x) => /style-src/.test(x)), canary);
} catch (e) {
  report.failures.push(`unexpected error: ${e && e.stack ? e.stack : e}`);
}

check("no dialog opened", report.dialogs.length === 0, report.dialogs);
check("no CSP violation", report.csp.length === 0, report.csp);
check("no script error", report.pageErrors.length === 0, report.pageErrors);
report.ok = report.failures.length === 0;
await browser.close().catch(() => {});
emit(report);
process.exit(0);
