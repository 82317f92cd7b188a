// Routine maintenance through flightns, as LanceDB's docs tell every user
// to run it: one-row adds, a delete, a branch and a tag, then
// table.optimize({cleanupOlderThan}) (compaction, then Lance's cleanup,
// which deletes old manifests straight from storage and makes no request
// about them), then one more add.
//
//   node maintain.mjs <flightns uri> <phase>
//
// phase "build": the table m$events with 30 one-row adds, a delete, a
// branch "dev" from version 10 and a tag "kept" on the latest version;
// prints {"ok", "failures", "version", "tagged"}.
// phase "read": every version LanceDB lists, read ({"versions",
// "rowsAt": {version: rows}, "dev", "tag"}).
// phase "optimize": optimize with the cutoff just before the tagged
// version (Lance refuses by default to prune a tagged version), then
// one add; prints {"ok", "failures", "versions": LanceDB's list of
// versions, "rows", "dev": the branch's rows, "tag": rows at the tag}.
import { connect, emit, row, rowsOf, errorText } from "./lib.mjs";

const [uri, phase] = process.argv.slice(2);
const report = { ok: false, failures: [] };
try {
  const db = await connect(uri);
  if (phase === "build") {
    // The namespace may have been made with retention properties first.
    if (!(await db.listNamespaces()).namespaces.includes("m")) await db.createNamespace(["m"]);
    const t = await db.createTable("events", [row(0)], ["m"]);
    for (let i = 1; i < 30; i++) await t.add([row(i)]);
    await t.delete("id = 5");
    await (await t.branches()).create("dev", "main", 10);
    // The tag's version must be newer than the cleanup's cutoff: a
    // moment passes first, so that the cutoff falls between it and the
    // version before.
    await new Promise((r) => setTimeout(r, 50));
    await t.add([row(100)]);
    report.tagged = await t.version();
    await (await t.tags()).create("kept", report.tagged);
    report.version = await t.version();
    report.ok = true;
  } else if (phase === "read") {
    // Every version LanceDB lists, read: its row count and rows; the
    // branch's rows and the tag's.
    const t = await db.openTable("events", ["m"]);
    report.versions = (await t.listVersions()).map((v) => v.version);
    report.rowsAt = {};
    for (const v of report.versions) {
      await t.checkout(v);
      report.rowsAt[v] = await rowsOf(t);
    }
    await t.checkoutLatest();
    report.dev = await rowsOf(await (await t.branches()).checkout("dev"));
    await t.checkout("kept");
    report.tag = await rowsOf(t);
    report.ok = true;
  } else {
    const t = await db.openTable("events", ["m"]);
    const tags = await t.tags();
    const tagged = await tags.getVersion("kept");
    const at = (await t.listVersions()).find((v) => v.version === tagged);
    await t.optimize({ cleanupOlderThan: new Date(at.timestamp.getTime() - 20) });
    await t.add([row(200)]);
    await t.checkoutLatest();
    report.versions = (await t.listVersions()).map((v) => v.version);
    report.rows = await rowsOf(t);
    report.dev = await rowsOf(await (await t.branches()).checkout("dev"));
    await t.checkout("kept");
    report.tag = await rowsOf(t);
    report.ok = true;
  }
} catch (e) {
  report.failures.push(`unexpected error: ${errorText(e)}`);
}
emit(report);
