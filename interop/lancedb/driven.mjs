// A long-lived LanceDB client that the test drives line by line on stdin,
// so that the test can restart flightns or flush Redis between two of its
// writes while the client (and its connection pool and open table) lives on.
//
//   node driven.mjs <flightns uri>
//
// Commands: "create <table>", "add <table> <id>", "read <table>", "quit".
// After each it prints {"cmd", "ok", "version", "versions", "rows", "error"}:
// "read" opens the table afresh and reads every version.
import { connect, emit, rowsOf, row, errorText, stdinLines } from "./lib.mjs";

const db = await connect(process.argv[2]);
const open = {};
emit({ cmd: "ready", ok: true });
for await (const line of stdinLines()) {
  const [cmd, name, arg] = line.trim().split(/\s+/);
  if (cmd === "quit") break;
  const out = { cmd: line.trim(), ok: false };
  try {
    if (cmd === "create") {
      open[name] = await db.createTable(name, [row(0)]);
      out.version = await open[name].version();
    } else if (cmd === "add") {
      await open[name].add([row(Number(arg))]);
      out.version = await open[name].version();
    } else if (cmd === "read") {
      const t = await db.openTable(name);
      out.version = await t.version();
      out.versions = (await t.listVersions()).map((v) => v.version);
      out.rows = await rowsOf(t);
      out.byVersion = {};
      for (const v of out.versions) {
        await t.checkout(v);
        out.byVersion[v] = (await rowsOf(t)).length;
      }
    } else {
      throw new Error(`unknown command ${line}`);
    }
    out.ok = true;
  } catch (e) {
    out.error = errorText(e);
  }
  emit(out);
}
