// One appender: `count` one-row adds to one table, each its own commit.
// The concurrency test and the benchmark run several at once.
//
//   node append.mjs '<json config>'
//
// config: {"impl": "rest"|"dir"|"ddb", "uri": <flightns uri> | "root": <dir, s3:// URI,
//          or for ddb s3+ddb://bucket/prefix?ddbTableName=T>,
//          "storageOptions": {...} (dir on S3: aws_endpoint, aws_region, …;
//          ddb: those and dynamodb_endpoint),
//          "properties": {...} (dir: more namespace properties, such as
//          table_version_tracking_enabled),
//          "namespace": [...], "table": name, "worker": n, "count": n,
//          "startAt": <ms since epoch; the adds start then>, "setup": bool}
// With setup, the script creates the namespace and the table (one row,
// id 0) and exits. Prints {"ok", "worker", "added", "errors", "startMs",
// "endMs", "version", "latMs": [the latency of every add],
// "spans": [[start, end] of every add, ms since the epoch, fractional]}.
import { connect, connectDir, connectDynamo, emit, row, errorText } from "./lib.mjs";

const cfg = JSON.parse(process.argv[2]);
const out = { ok: false, worker: cfg.worker ?? 0, added: 0, errors: [], latMs: [], spans: [] };
try {
  const db = await open(cfg);
  if (cfg.setup) {
    if (cfg.namespace.length > 0) await db.createNamespace(cfg.namespace);
    const t = await db.createTable(cfg.table, [row(0)], cfg.namespace);
    out.version = await t.version();
  } else {
    // (Lance's directory namespace passes no storage options of its own
    // to the tables it opens: they go with each openTable. A plain
    // connection, ddb's, passes its own; repeating them changes nothing.)
    const opened = cfg.storageOptions ? { storageOptions: cfg.storageOptions } : undefined;
    const t = await db.openTable(cfg.table, cfg.namespace, opened);
    const wait = (cfg.startAt ?? 0) - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    out.startMs = Date.now();
    for (let i = 1; i <= cfg.count; i++) {
      const t0 = performance.now();
      try {
        await t.add([row(cfg.worker * 100000 + i)]);
        out.added++;
      } catch (e) {
        out.errors.push(errorText(e));
      }
      const t1 = performance.now();
      out.latMs.push(t1 - t0);
      out.spans.push([performance.timeOrigin + t0, performance.timeOrigin + t1]);
    }
    out.endMs = Date.now();
    out.version = await t.version();
  }
  out.ok = out.errors.length === 0;
} catch (e) {
  out.errors.push(`unexpected error: ${errorText(e)}`);
}
emit(out);

// open connects the way cfg.impl says: flightns's REST namespace, Lance's
// directory namespace, or a plain connection committing through Lance's
// DynamoDB commit store.
async function open(cfg) {
  switch (cfg.impl) {
    case "dir":
      return connectDir(cfg.root, cfg.storageOptions, cfg.properties);
    case "ddb":
      return connectDynamo(cfg.root, cfg.storageOptions);
    case "rest":
      return connect(cfg.uri);
    default:
      throw new Error(`unknown impl ${cfg.impl}`);
  }
}
