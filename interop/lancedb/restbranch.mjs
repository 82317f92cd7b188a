// Restore and branches made by the catalog (flightns's RestoreTable,
// CreateTableBranch, DeleteTableBranch over REST), or by LanceDB itself
// through Lance's own directory namespace (the reference): LanceDB then
// reads and writes the table the same way in both.
//
//   node restbranch.mjs rest <flightns uri>
//   node restbranch.mjs dir <root directory>
//   node restbranch.mjs view <table directory>   (Lance's directory namespace reads it)
//
// Prints {"ok", "failures", "steps": [{step, value}], "final"}.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { lancedb, connect, connectDir, emit, row, rowsOf, errorText } from "./lib.mjs";

const [mode, where] = process.argv.slice(2);
const report = { ok: false, failures: [], steps: [] };

async function step(name, fn) {
  report.steps.push({ step: name, value: await fn() });
}

// seen is what a reader observes: branches (with their parent), tags, and
// the rows of main and of every branch.
async function seen(t) {
  await t.checkoutLatest();
  const out = { main: { version: await t.version(), rows: await rowsOf(t) }, branches: {}, tags: {} };
  const branches = await t.branches();
  for (const [name, c] of Object.entries(await branches.list())) {
    const b = await branches.checkout(name);
    out.branches[name] = { parent: c.parentBranch ?? "main", from: c.parentVersion, version: await b.version(), rows: await rowsOf(b) };
  }
  for (const [name, c] of Object.entries(await (await t.tags()).list())) out.tags[name] = [c.branch ?? "main", c.version];
  return out;
}

// The catalog's operations (rest), or LanceDB's own (dir). A refusal is
// reported as "refused", whoever refuses.
async function call(route, body) {
  const r = await fetch(`${where}/v1/table/items/${route}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  if (r.status !== 200) return { refused: (await r.json()).code };
  return "done";
}
async function refusedBy(fn) {
  try { await fn(); return "done"; } catch (e) { return { refused: true, why: String(e.message).slice(0, 80) }; }
}
const ops = {
  async restore(t, version, branch) {
    if (mode === "rest") return call("restore", branch ? { version, branch } : { version });
    const at = branch ? await (await t.branches()).checkout(branch, version) : (await t.checkout(version), t);
    await at.restore();
    return "done";
  },
  async createBranch(t, name, from, version) {
    if (mode === "rest") return call("branches/create", { name, from_branch: from, from_version: version });
    await (await t.branches()).create(name, from, version);
    return "done";
  },
  async deleteBranch(t, name) {
    if (mode === "rest") return call("branches/delete", { name });
    return refusedBy(() => t.branches().then((b) => b.delete(name)));
  },
};
const outcome = (o) => (o === "done" ? "done" : "refused");

try {
  if (mode === "view") {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "flightns-view-"));
    fs.symlinkSync(where, path.join(root, "items.lance"));
    report.final = await seen(await (await connectDir(root)).openTable("items"));
    fs.rmSync(root, { recursive: true });
  } else {
    const db = mode === "rest" ? await connect(where) : await connectDir(where);
    const t = await db.createTable("items", [row(1), row(2)]);
    await t.add([row(3)]);
    await t.add([row(4)]);
    // Restore main@1: checkout, add and countRows behave as after restore().
    await step("restore main@1", async () => ({ outcome: outcome(await ops.restore(t, 1)) }));
    await t.checkoutLatest();
    await step("after the restore", async () => ({ version: await t.version(), count: await t.countRows(), rows: await rowsOf(t),
      versions: (await t.listVersions()).map((v) => v.version) }));
    await t.add([row(5)]);
    await step("an add after it", async () => ({ version: await t.version(), count: await t.countRows(), rows: await rowsOf(t) }));
    await t.checkout(4);
    await step("checkout the restored version", async () => ({ version: await t.version(), count: await t.countRows(), rows: await rowsOf(t) }));
    await t.checkout(3);
    await step("checkout the version before", async () => ({ count: await t.countRows(), rows: await rowsOf(t) }));
    await t.checkoutLatest();

    // Branches made by the catalog, read and written by LanceDB.
    await step("create dev from main@2", async () => ({ outcome: outcome(await ops.createBranch(t, "dev", "main", 2)) }));
    const br = await t.branches();
    const dev = await br.checkout("dev");
    await step("dev", async () => ({ version: await dev.version(), rows: await rowsOf(dev) }));
    await dev.add([row(10)]);
    await step("an add on dev", async () => ({ version: await dev.version(), count: await dev.countRows(), rows: await rowsOf(dev) }));
    await step("create team/sub from dev@3", async () => ({ outcome: outcome(await ops.createBranch(t, "team/sub", "dev", 3)) }));
    const sub = await br.checkout("team/sub");
    await sub.add([row(11)]);
    await step("an add on team/sub", async () => ({ version: await sub.version(), rows: await rowsOf(sub) }));
    await step("restore dev@2", async () => ({ outcome: outcome(await ops.restore(t, 2, "dev")) }));
    const dev2 = await br.checkout("dev");
    await step("dev after its restore", async () => ({ version: await dev2.version(), rows: await rowsOf(dev2) }));

    // Deleting refuses while a branch forks from it or a tag points into it.
    await (await dev2.tags()).create("devtag", 3);
    await step("delete dev with a tag and a child", async () => ({ outcome: outcome(await ops.deleteBranch(t, "dev")) }));
    await (await t.tags()).delete("devtag");
    await step("delete dev with a child", async () => ({ outcome: outcome(await ops.deleteBranch(t, "dev")) }));
    await step("delete team/sub", async () => ({ outcome: outcome(await ops.deleteBranch(t, "team/sub")) }));
    await step("delete dev", async () => ({ outcome: outcome(await ops.deleteBranch(t, "dev")), branches: Object.keys(await br.list()) }));
    await step("delete dev again", async () => ({ outcome: outcome(await ops.deleteBranch(t, "dev")) }));
    await step("create dev again from main@1", async () => ({ outcome: outcome(await ops.createBranch(t, "dev", "main", 1)) }));
    const again = await br.checkout("dev");
    await again.add([row(12)]);
    await step("dev made again", async () => ({ version: await again.version(), rows: await rowsOf(again),
      versions: (await again.listVersions()).map((v) => v.version) }));
    report.final = await seen(await (await (mode === "rest" ? connect(where) : connectDir(where))).openTable("items"));
  }
  report.ok = true;
} catch (e) {
  report.failures.push(`unexpected error: ${errorText(e)}`);
}
emit(report);
