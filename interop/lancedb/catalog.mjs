// One LanceDB client's catalog operations, one after another: `count`
// createNamespace calls (children of `namespace`), then `count` createTable
// calls with a one-row batch (in `namespace`), each timed. The benchmark
// runs it against flightns and against Lance's directory namespace.
//
//   node catalog.mjs '<json config>'
//
// config: {"impl": "rest"|"dir", "uri": <flightns uri> | "root": <dir>,
//          "namespace": [...], "prefix": name prefix, "count": n}
// Prints {"ok", "errors", "namespaceMs": [...], "tableMs": [...]}.
import { lancedb, connect, emit, row, errorText } from "./lib.mjs";

const cfg = JSON.parse(process.argv[2]);
const out = { ok: false, errors: [], namespaceMs: [], tableMs: [] };
try {
  const db = cfg.impl === "dir" ? await lancedb.connectNamespace("dir", { root: cfg.root }) : await connect(cfg.uri);
  await db.createNamespace(cfg.namespace);
  for (let i = 0; i < cfg.count; i++) {
    const t0 = performance.now();
    try {
      await db.createNamespace([...cfg.namespace, `${cfg.prefix}ns${i}`]);
    } catch (e) {
      out.errors.push(errorText(e));
    }
    out.namespaceMs.push(performance.now() - t0);
  }
  for (let i = 0; i < cfg.count; i++) {
    const t0 = performance.now();
    try {
      await db.createTable(`${cfg.prefix}t${i}`, [row(i)], cfg.namespace);
    } catch (e) {
      out.errors.push(errorText(e));
    }
    out.tableMs.push(performance.now() - t0);
  }
  out.ok = out.errors.length === 0;
} catch (e) {
  out.errors.push(`unexpected error: ${errorText(e)}`);
}
emit(out);
