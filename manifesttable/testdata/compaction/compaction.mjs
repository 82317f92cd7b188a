// Writes the table whose manifests are manifesttable's compaction test
// data (testdata/compaction/README.md):
//
//   node compaction.mjs <directory>
//
// from a copy in interop/lancedb, where @lancedb/lancedb 0.39.0 resolves. v1: 10
// rows; v2..v12: 11 appends of 10 rows (12 fragments); v13: 24 rows
// deleted (2 of every fragment, a deletion file each); optimize() then
// reserves fragment ids (v14) and compacts (v15, a Rewrite); its cleanup
// of versions older than the epoch prunes nothing.
import * as lancedb from "@lancedb/lancedb";

const [dir] = process.argv.slice(2);
const db = await lancedb.connect(dir);
const rows = (from, n) => Array.from({ length: n }, (_, i) => ({ id: BigInt(from + i), name: `n${from + i}` }));
const t = await db.createTable("c", rows(0, 10));
for (let i = 1; i <= 11; i++) await t.add(rows(i * 10, 10));
await t.delete("id % 10 < 2");
const before = await t.stats();
const out = await t.optimize({ cleanupOlderThan: new Date(0) });
console.log(JSON.stringify({ before, version: await t.version(), stats: await t.stats(), out }, (k, v) => (typeof v === "bigint" ? Number(v) : v)));
