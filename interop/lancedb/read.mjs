// Reads a table through flightns: its head, its listed versions, its rows.
//
//   node read.mjs <flightns uri> '<namespace json>' <table>
//
// Prints {"ok", "version", "versions", "rows", "count", "error"}.
import { connect, emit, rowsOf, errorText } from "./lib.mjs";

const [uri, ns, name] = process.argv.slice(2);
const out = { ok: false };
try {
  const db = await connect(uri);
  const t = await db.openTable(name, JSON.parse(ns));
  out.version = await t.version();
  out.versions = (await t.listVersions()).map((v) => v.version);
  out.rows = await rowsOf(t);
  out.count = await t.countRows();
  out.ok = true;
} catch (e) {
  out.error = errorText(e);
}
emit(out);
