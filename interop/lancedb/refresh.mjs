// Writes to and reads a table through flightns again and again, pausing
// between rounds, so that the credentials DescribeTable vended come due
// (as the server's expiry and refresh offset say) and Lance asks for new
// ones. Each round adds a row and reads the table.
//
//   node refresh.mjs <flightns uri> '<namespace json>' <table> <rounds> <pause ms>
//
// Prints {"ok", "counts": [rows after each round], "error"}.
import { connect, emit, errorText, row } from "./lib.mjs";

const [uri, ns, name, reads, pause] = process.argv.slice(2);
const out = { ok: false, counts: [] };
try {
  const db = await connect(uri);
  const t = await db.openTable(name, JSON.parse(ns));
  for (let i = 0; i < Number(reads); i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, Number(pause)));
    await t.add([row(1000 + i)]);
    out.counts.push((await t.query().toArray()).length);
  }
  out.ok = true;
} catch (e) {
  out.error = errorText(e);
}
emit(out);
