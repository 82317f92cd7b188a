// The plain check: LanceDB alone, without flightns, opens table
// directories that flightns catalogued and reads every version.
//
//   node plain.mjs <spec.json>
//
// spec.json is {"tables": {<id>: {"dir": <table directory>, "versions": [n, ...]}}}.
// LanceDB's listing database opens <db>/<name>.lance; a table directory of
// flightns is named <hash>_<id>, so each is linked as t.lance into a fresh
// directory, and lancedb.connect(that directory) opens it.
// Prints {"ok": bool, "failures": [...], "tables": {<id>: [{version, rows}]}}.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { lancedb, emit, rowsOf, errorText } from "./lib.mjs";

const spec = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const report = { ok: false, failures: [], tables: {} };
try {
  for (const [id, { dir, versions }] of Object.entries(spec.tables)) {
    const db = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "flightns-plain-")));
    fs.symlinkSync(dir, path.join(db, "t.lance"));
    const conn = await lancedb.connect(db);
    const t = await conn.openTable("t");
    const seen = [];
    const listed = (await t.listVersions()).map((v) => v.version);
    for (const v of versions) {
      if (!listed.includes(v)) report.failures.push(`${id}: version ${v} is not listed (listed: ${listed})`);
      await t.checkout(v);
      seen.push({ version: v, rows: await rowsOf(t) });
    }
    report.tables[id] = seen;
    report.listed ??= {};
    report.listed[id] = listed;
    fs.rmSync(db, { recursive: true });
  }
  report.ok = report.failures.length === 0;
} catch (e) {
  report.failures.push(`unexpected error: ${errorText(e)}`);
}
emit(report);
