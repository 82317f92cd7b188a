// Lance's own cleanup, the reference for flightns's (internal/cleanup's
// differential test): builds a table with plain LanceDB, runs LanceDB's
// cleanup on it, and reads every version of it.
//
//   node cleanup.mjs build <db directory>
//   node cleanup.mjs tag <db directory> <tag> <version>
//   node cleanup.mjs cleanup <db directory> <cutoff ms> <deleteUnverified true|false> [branch ...]
//   node cleanup.mjs read <db directory>
//
// The table is "t" (<db>/t.lance), opened with lancedb.connect(<db>).
// build makes, 25 ms apart so that a cutoff can fall between any two:
//
//   main v1 rows 1-3; v2 add 4,5; v3 add 6; v4 delete id=2 (a deletion
//   file); v5 update id=3 (a deletion file and a new fragment); v6 a
//   scalar index on id; branch "dev" from main v3, dev adds 100; main v7
//   adds 7; main optimize (compaction, index update); dev adds 101; dev
//   optimize; main adds 8; main optimize; a tag "release" on main's latest.
//   The last optimize of each runs until one makes no new version.
//
// Every optimize in build prunes nothing (cleanupOlderThan 1970), so the
// table ends compacted and indexed, and a later optimize only prunes.
// cleanup runs optimize({cleanupOlderThan, deleteUnverified}) on main,
// then on each branch named (a handle from branches().checkout), and
// reports each one's versions before and after and what it pruned.
// read reports every version of main and of every branch (count and rows)
// and the rows at every tag.
//
// Prints one JSON object: {"ok": bool, "failures": [...], ...}.
import { lancedb, emit, row, rowsOf, errorText } from "./lib.mjs";

const [mode, db, ...args] = process.argv.slice(2);
const report = { ok: false, failures: [] };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// settle optimizes a table until an optimize makes no new version (the
// first may leave fragments that the next compacts).
const settle = async (t) => {
  for (let i = 0; i < 5; i++) {
    const before = (await t.listVersions()).length;
    await t.optimize({ cleanupOlderThan: new Date(0) });
    await t.checkoutLatest();
    if ((await t.listVersions()).length === before) return;
  }
  throw new Error("optimize does not settle");
};
const versions = async (t) => (await t.listVersions()).map((v) => [v.version, v.timestamp.getTime()]);

try {
  const conn = await lancedb.connect(db);
  if (mode === "build") {
    const step = async (fn) => {
      await sleep(25);
      await fn();
    };
    const t = await conn.createTable("t", [row(1), row(2), row(3)]);
    await step(() => t.add([row(4), row(5)]));
    await step(() => t.add([row(6)]));
    await step(() => t.delete("id = 2"));
    await step(() => t.update({ where: "id = 3", values: { amount: 333 } }));
    await step(() => t.createIndex("id"));
    let dev;
    await step(async () => { dev = await (await t.branches()).create("dev", "main", 3); });
    await step(() => dev.add([row(100)]));
    await step(() => t.add([row(7)]));
    await step(() => t.optimize({ cleanupOlderThan: new Date(0) }));
    await step(() => dev.add([row(101)]));
    await step(() => settle(dev));
    await step(() => t.add([row(8)]));
    await step(() => settle(t));
    await t.checkoutLatest();
    await (await t.tags()).create("release", await t.version());
    await sleep(25);
    report.main = await versions(t);
    report.branches = { dev: await versions(await (await t.branches()).checkout("dev")) };
  } else if (mode === "tag") {
    const [name, version] = args;
    const t = await conn.openTable("t");
    await (await t.tags()).create(name, Number(version));
  } else if (mode === "cleanup") {
    const [cutoff, deleteUnverified, ...branches] = args;
    const t = await conn.openTable("t");
    const opts = { cleanupOlderThan: new Date(Number(cutoff)), deleteUnverified: deleteUnverified === "true" };
    report.runs = [];
    const run = async (name, table) => {
      const r = { name, before: await versions(table) };
      report.runs.push(r);
      try {
        const stats = await table.optimize(opts);
        r.prune = stats.prune;
        r.compaction = stats.compaction;
      } catch (e) {
        r.error = String(e);
      }
      await table.checkoutLatest();
      r.after = await versions(table);
    };
    await run("main", t);
    for (const b of branches) await run(b, await (await t.branches()).checkout(b));
  } else if (mode === "read") {
    const t = await conn.openTable("t");
    const readAll = async (table, checkout) => {
      const out = [];
      for (const [v] of await versions(table)) {
        const at = await checkout(v);
        out.push({ version: v, count: await at.countRows(), rows: await rowsOf(at) });
      }
      return out;
    };
    report.main = await readAll(t, async (v) => {
      await t.checkout(v);
      return t;
    });
    await t.checkoutLatest();
    const branches = await t.branches();
    report.branches = {};
    for (const [name, c] of Object.entries(await branches.list())) {
      const b = await branches.checkout(name);
      report.branches[name] = { parent: c.parentVersion, versions: await readAll(b, (v) => branches.checkout(name, v)) };
    }
    report.tags = {};
    for (const [name, c] of Object.entries(await (await t.tags()).list())) {
      await t.checkout(name);
      report.tags[name] = { branch: c.branch ?? "main", version: c.version, rows: await rowsOf(t) };
    }
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  report.ok = report.failures.length === 0;
} catch (e) {
  report.failures.push(`unexpected error: ${errorText(e)}`);
}
emit(report);
