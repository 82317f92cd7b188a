// Two replicas of one catalog: LanceDB writes a table through replica A
// (create, then an add), reads it through replica B, adds through B and
// reads it again through A. Each replica must serve what the other
// committed, at its version.
//
//   node replicas.mjs <replica A uri> <replica B uri> '<namespace json>' <table>
//
// Prints {"ok", "wroteA", "readB", "wroteB", "readA", "error"}, each of the
// four {"version", "versions", "rows"} as that replica answered them
// (rows as rowsOf gives them).
import { connect, emit, rowsOf, row, errorText } from "./lib.mjs";

const [uriA, uriB, nsJSON, name] = process.argv.slice(2);
const ns = JSON.parse(nsJSON);
const out = { ok: false };

async function state(table) {
  return {
    version: await table.version(),
    versions: (await table.listVersions()).map((v) => v.version),
    rows: await rowsOf(table),
  };
}

try {
  const a = await connect(uriA);
  const b = await connect(uriB);
  await a.createNamespace(ns);
  const ta = await a.createTable(name, [row(1), row(2)], ns);
  await ta.add([row(3)]);
  out.wroteA = await state(ta);
  const tb = await b.openTable(name, ns);
  out.readB = await state(tb);
  await tb.add([row(4)]);
  out.wroteB = await state(tb);
  out.readA = await state(await a.openTable(name, ns));
  out.ok = true;
} catch (e) {
  out.error = errorText(e);
}
emit(out);
