// Lance branches and tags as a LanceDB user works with them, on a table
// "items" at the root of a catalog: through flightns (rest), through
// Lance's own directory namespace (dir, the reference), or, for a table
// made by one of those, read with plain LanceDB from its directory
// (plain: no namespace at all).
//
//   node branches.mjs rest <flightns uri>
//   node branches.mjs dir <root directory or s3:// URI> [storage options json]
//   node branches.mjs plain <table directory, or s3://…/<name>.lance> [storage options json]
//   node branches.mjs read <flightns uri>   (only reads "items": final)
//
// Through flightns LanceDB needs nothing but the URI: where the table is,
// and how to reach its storage, come from the catalog (credentials from
// the environment). The other two modes take the storage options of an
// s3:// root (aws_endpoint, aws_region, keys…) as Lance's own users give them.
//
// Prints {"ok": bool, "failures": [...], "steps": [...], "final": {...}}:
// each step names what was done and what LanceDB saw after it (versions
// and rows of main and of the branch), and final what a reader sees at
// the end (branches, tags, rows of each), so two runs can be compared.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { lancedb, connect, connectDir, emit, row, rowsOf, errorText } from "./lib.mjs";

const [mode, where, options] = process.argv.slice(2);
const storageOptions = options ? JSON.parse(options) : undefined;
const report = { ok: false, failures: [], steps: [] };

// seen is what a reader of the table observes: its branches (by name,
// with the version they fork from), its tags (name -> [branch, version])
// and the rows of main and of every branch at their latest version.
async function seen(t) {
  const out = { main: { version: await t.version(), rows: await rowsOf(t) }, branches: {}, tags: {} };
  const branches = await t.branches();
  for (const [name, c] of Object.entries(await branches.list())) {
    const b = await branches.checkout(name);
    out.branches[name] = { parent: c.parentVersion, version: await b.version(), rows: await rowsOf(b) };
  }
  for (const [name, c] of Object.entries(await (await t.tags()).list())) {
    out.tags[name] = [c.branch ?? "main", c.version];
  }
  return out;
}

async function step(name, fn) {
  const value = await fn();
  report.steps.push({ step: name, value });
}

try {
  if (mode === "read") {
    report.final = await seen(await (await connect(where)).openTable("items"));
    report.ok = true;
  } else if (mode === "plain") {
    // LanceDB's listing database opens <db>/<name>.lance: a table
    // directory is linked as t.lance into a fresh directory; an s3:// table
    // is given as <db>/<name>.lance.
    if (where.startsWith("s3://")) {
      const m = where.match(/^(.*)\/([^/]+)\.lance\/?$/);
      if (!m) throw new Error(`${where} is not <db>/<name>.lance`);
      report.final = await seen(await (await lancedb.connect(m[1], { storageOptions })).openTable(m[2]));
    } else {
      const db = fs.mkdtempSync(path.join(os.tmpdir(), "flightns-plain-"));
      fs.symlinkSync(where, path.join(db, "t.lance"));
      report.final = await seen(await (await lancedb.connect(db)).openTable("t"));
      fs.rmSync(db, { recursive: true });
    }
    report.ok = true;
  } else {
    const open = () => (mode === "dir" ? connectDir(where, storageOptions) : connect(where));
    const db = await open();
    const t = await db.createTable("items", [row(1), row(2)]);
    await t.add([row(3)]);
    const branches = await t.branches();
    await (await t.tags()).create("two", 2);

    // A branch from main's latest; commits on it; main untouched.
    const dev = await branches.create("dev");
    await step("create dev", async () => ({ branch: dev.currentBranch(), version: await dev.version(), rows: await rowsOf(dev) }));
    await dev.add([row(10)]);
    await dev.add([row(11)]);
    await step("two adds on dev", async () => ({ version: await dev.version(), rows: await rowsOf(dev),
      versions: (await dev.listVersions()).map((v) => v.version) }));
    await t.add([row(4)]);
    await t.checkoutLatest();
    await step("an add on main", async () => ({ version: await t.version(), rows: await rowsOf(t),
      versions: (await t.listVersions()).map((v) => v.version), devRows: await rowsOf(await branches.checkout("dev")) }));

    // A branch from a version of main (the tagged one) and one from a
    // version of dev.
    const old = await branches.create("old", "main", 2);
    await old.add([row(20)]);
    await step("old from main@2", async () => ({ version: await old.version(), rows: await rowsOf(old) }));
    const sub = await branches.create("team/sub", "dev", 3);
    await step("team/sub from dev@3", async () => ({ version: await sub.version(), rows: await rowsOf(sub) }));

    // Checkouts of a branch's versions, and tags on them.
    const devAt = await branches.checkout("dev", 4);
    await step("checkout dev@4", async () => ({ version: await devAt.version(), rows: await rowsOf(devAt) }));
    await (await dev.tags()).create("dev-head", await dev.version());
    await step("tag on dev", async () => ({ tag: await (await t.tags()).getVersion("dev-head") }));

    // Delete a branch (Lance removes its files), then make it again.
    await branches.delete("old");
    const again = await branches.create("old", "main", 1);
    await again.add([row(30)]);
    await step("old deleted and made again from main@1", async () => ({ version: await again.version(), rows: await rowsOf(again),
      versions: (await again.listVersions()).map((v) => v.version) }));

    // Restore on main: version 1's content as the newest.
    await t.checkout(1);
    await t.restore();
    await step("restore main@1", async () => ({ version: await t.version(), rows: await rowsOf(t) }));
    // Statistics, as LanceDB computes them from the data (the Go test
    // compares the catalog's GetTableStats with these).
    const statsOf = async (table) => {
      const s = await table.stats();
      const f = s.fragmentStats;
      return { rows: s.numRows, indices: s.numIndices, fragments: f.numFragments, small: f.numSmallFragments,
        lengths: [f.lengths.min, f.lengths.max, f.lengths.mean, f.lengths.p25, f.lengths.p50, f.lengths.p75, f.lengths.p99] };
    };
    await step("stats", async () => ({ main: await statsOf(t), dev: await statsOf(await branches.checkout("dev")) }));

    // A second connection sees the same.
    // (Lance's directory namespace hands the tables it opens no storage
    // options of its own: on S3 they go with openTable.)
    const db2 = await open();
    report.final = await seen(await db2.openTable("items", [], storageOptions && { storageOptions }));
    report.ok = true;
  }
} catch (e) {
  report.failures.push(`unexpected error: ${errorText(e)}`);
}
emit(report);
