// Tags as LanceDB sees them through flightns: the list, the version of
// one tag, and the rows at that tag, of prod$sales$orders.
//
//   node tags.mjs <flightns uri> <tag>
//
// Prints {"ok": bool, "failures": [...], "tags": {name: version},
// "version": n, "rows": [...]}.
import { connect, emit, rowsOf, errorText } from "./lib.mjs";

const [uri, tag] = process.argv.slice(2);
const report = { ok: false, failures: [], tags: {} };
try {
  const db = await connect(uri);
  const t = await db.openTable("orders", ["prod", "sales"]);
  const tags = await t.tags();
  for (const [name, c] of Object.entries(await tags.list())) report.tags[name] = c.version;
  report.version = await tags.getVersion(tag);
  await t.checkout(tag);
  report.rows = await rowsOf(t);
  report.ok = true;
} catch (e) {
  report.failures.push(`unexpected error: ${errorText(e)}`);
}
emit(report);
