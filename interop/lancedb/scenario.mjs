// The lifecycle scenario: namespaces (nested), tables, adds, update,
// delete, mergeInsert, createIndex, optimize, checkout, restore,
// listVersions, countRows, renameTable, dropTable, dropNamespace — every
// step through flightns's REST namespace.
//
//   node scenario.mjs <flightns uri>
//
// Prints {"ok": bool, "failures": [...], "tables": {<id>: [{version, rows}]},
// "dropped": [...], ...}: for every surviving table, every version with its
// rows as read through flightns, which the plain check (plain.mjs) must see
// again without flightns.
import { connect, emit, rowsOf, row, errorText } from "./lib.mjs";

const uri = process.argv[2];
const failures = [];
const history = {}; // table id -> [{version, rows}]
const report = { ok: false, failures, tables: history, steps: [] };

function check(what, got, want) {
  const g = JSON.stringify(got);
  const w = JSON.stringify(want);
  if (g !== w) failures.push(`${what}: got ${g}, want ${w}`);
}

// record reads the table's current version and rows and appends them to
// its history (versions must be contiguous: checked by the Go test).
async function record(id, table, step) {
  const version = await table.version();
  const rows = await rowsOf(table);
  (history[id] ??= []).push({ version, rows });
  report.steps.push({ table: id, step, version, rows: rows.length });
  return { version, rows };
}

async function expectError(what, fn, pattern) {
  try {
    await fn();
    failures.push(`${what}: succeeded, want an error matching ${pattern}`);
  } catch (e) {
    if (!pattern.test(String(e))) failures.push(`${what}: error ${String(e)} does not match ${pattern}`);
  }
}

try {
  const db = await connect(uri);

  // Namespaces, nested.
  await db.createNamespace(["prod"]);
  await db.createNamespace(["prod", "sales"]);
  await db.createNamespace(["scratch"]);
  check("root namespaces", (await db.listNamespaces([])).namespaces, ["prod", "scratch"]);
  check("prod namespaces", (await db.listNamespaces(["prod"])).namespaces, ["sales"]);
  check("sales namespaces (a leaf)", (await db.listNamespaces(["prod", "sales"])).namespaces, []);
  await expectError("creating prod twice", () => db.createNamespace(["prod"]), /exist/i);

  // Names the client must encode: a space travels as "+", a plus as %2B.
  await db.createNamespace(["odd name+1"]);
  const odd = await db.createTable("t; x+y z", [row(1)], ["odd name+1"]);
  await odd.add([row(2)]);
  check("tables in a namespace with an odd name", await db.tableNames(["odd name+1"]), ["t; x+y z"]);
  check("rows of a table with an odd name", await rowsOf(await db.openTable("t; x+y z", ["odd name+1"])), ["1:10", "2:20"]);
  await db.dropNamespace(["odd name+1"], { behavior: "cascade" });

  // The main table: every kind of commit.
  const ns = ["prod", "sales"];
  const id = "prod$sales$orders";
  const t = await db.createTable("orders", [row(1), row(2), row(3)], ns);
  await record(id, t, "create");
  await t.add([row(4), row(5)]);
  await record(id, t, "add");
  await t.add([row(6)]);
  await record(id, t, "add");
  await t.update({ where: "id = 2", values: { amount: 99 } });
  await record(id, t, "update");
  await t.delete("id = 3");
  await record(id, t, "delete");
  await t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute([row(5, 55), row(7)]);
  await record(id, t, "mergeInsert");
  await t.createIndex("id");
  await record(id, t, "createIndex");
  check("indices", (await t.listIndices()).map((i) => i.columns), [["id"]]);
  const before = await t.version();
  await t.optimize();
  const after = await t.version();
  if (after <= before) failures.push(`optimize committed nothing (version ${before} -> ${after})`);
  // optimize may commit several versions (compaction, index optimization):
  // record each of them.
  for (let v = before + 1; v <= after; v++) {
    await t.checkout(v);
    await record(id, t, `optimize@${v}`);
  }
  await t.checkoutLatest();
  check("countRows after optimize", await t.countRows(), 6);
  check("countRows with a filter", await t.countRows("amount > 50"), 4);

  // Time travel: checkout an old version, then restore it as the newest.
  await t.checkout(2);
  check("rows at version 2", await rowsOf(t), ["1:10", "2:20", "3:30", "4:40", "5:50"]);
  await t.checkout(3);
  await t.restore();
  const restored = await record(id, t, "restore");
  check("rows after restoring version 3", restored.rows, ["1:10", "2:20", "3:30", "4:40", "5:50", "6:60"]);
  const versions = (await t.listVersions()).map((v) => v.version);
  check("listVersions", versions, history[id].map((h) => h.version));

  // A second connection sees the same head.
  const db2 = await connect(uri);
  const t2 = await db2.openTable("orders", ns);
  check("version seen by a second connection", await t2.version(), restored.version);
  check("rows seen by a second connection", await rowsOf(t2), restored.rows);
  await t2.add([row(8)]);
  await t.checkoutLatest();
  await record(id, t, "add from a second connection");

  // A branch, with a commit on it: on a managed catalog its versions are
  // a chain of their own; on an unmanaged one Lance keeps it itself.
  // Main stays as it was (branches.mjs goes further).
  const dev = await (await t.branches()).create("dev");
  check("the branch's name", dev.currentBranch(), "dev");
  await dev.add([row(50)]);
  check("the branch's rows", await rowsOf(dev), [...history[id].at(-1).rows, "50:500"]);
  await t.checkoutLatest();
  check("main's head after the branch", await t.version(), history[id].at(-1).version);
  check("main's rows after the branch", await rowsOf(t), history[id].at(-1).rows);

  // Tags are Lance's own files: LanceDB makes one here; the Go test reads
  // it through the catalog, makes another and has tags.mjs read it.
  await (await t.tags()).create("first", 1);

  // Creating an existing table is refused; a table with data is not
  // overwritten by a second create.
  await expectError("creating orders again", () => db.createTable("orders", [row(100)], ns), /already exists/i);
  check("rows after the refused create", (await rowsOf(await db.openTable("orders", ns))).length, 7);

  // Rename within a namespace and across namespaces.
  const e = await db.createTable("events", [row(1)], ["prod"]);
  await e.add([row(2)]);
  await db.renameTable("events", "events2", { namespacePath: ["prod"] });
  await db.renameTable("events2", "events3", { namespacePath: ["prod"], newNamespacePath: ["prod", "sales"] });
  check("tables in prod after the renames", await db.tableNames(["prod"]), []);
  check("tables in prod$sales", await db.tableNames(ns), ["events3", "orders"]);
  const e3 = await db.openTable("events3", ns);
  await e3.add([row(3)]);
  const e3head = await e3.version();
  check("events3 head after create, add, add", e3head, 3);
  for (let v = 1; v <= e3head; v++) {
    await e3.checkout(v);
    await record("prod$sales$events3", e3, `events@${v}`);
  }
  await expectError("opening the old name", () => db.openTable("events", ["prod"]), /not found|does not exist/i);

  // Drop a table (its data goes) and namespaces.
  const s = await db.createTable("tmp", [row(1)], ["scratch"]);
  await s.add([row(2)]);
  await db.dropTable("tmp", ["scratch"]);
  report.dropped = ["scratch$tmp"];
  await expectError("opening a dropped table", () => db.openTable("tmp", ["scratch"]), /not found|does not exist/i);
  await expectError("dropping a non-empty namespace", () => db.dropNamespace(["prod"]), /not empty/i);
  await db.dropNamespace(["scratch"]);
  check("root namespaces after the drop", (await db.listNamespaces([])).namespaces, ["prod"]);

  // Many tables in one namespace: tableNames() does not page.
  await db.createNamespace(["many"]);
  const names = [];
  for (let i = 0; i < 12; i++) {
    names.push(`t${String(i).padStart(2, "0")}`);
    await db.createTable(names[i], [row(i)], ["many"]);
  }
  check("tableNames of a namespace with 12 tables", await db.tableNames(["many"]), names);
  const page = await db.listTables(["many"], { limit: 5 });
  check("listTables page 1", page.tables, names.slice(0, 5));
  const page2 = await db.listTables(["many"], { limit: 5, pageToken: page.pageToken });
  check("listTables page 2", page2.tables, names.slice(5, 10));
  await db.dropNamespace(["many"], { behavior: "cascade" });
  check("namespaces after the cascade", (await db.listNamespaces([])).namespaces, ["prod"]);

  report.ok = failures.length === 0;
} catch (e) {
  failures.push(`unexpected error: ${errorText(e)}`);
}
emit(report);
