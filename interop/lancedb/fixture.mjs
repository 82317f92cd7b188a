// Writes the table whose manifests are lancemanifest's test data:
//
//   node fixture.mjs <directory>
//
// Version 1: 3 rows of every type the reader maps (ints, floats, strings,
// a vector, a struct, a list, a timestamp, a date, a boolean); version 2
// adds 2 rows (a second fragment); version 3 deletes 1 row (a deletion
// file); version 4 adds a scalar index; then a branch "dev" with 1 row.
import { lancedb } from "./lib.mjs";
import * as arrow from "apache-arrow";

const [dir] = process.argv.slice(2);
const db = await lancedb.connect(dir);
const schema = new arrow.Schema([
  new arrow.Field("id", new arrow.Int64(), false),
  new arrow.Field("score", new arrow.Float64(), true),
  new arrow.Field("name", new arrow.Utf8(), true),
  new arrow.Field("vec", new arrow.FixedSizeList(4, new arrow.Field("item", new arrow.Float32(), true)), true),
  new arrow.Field("meta", new arrow.Struct([new arrow.Field("k", new arrow.Utf8(), true), new arrow.Field("n", new arrow.Int32(), true)]), true),
  new arrow.Field("tags", new arrow.List(new arrow.Field("item", new arrow.Utf8(), true)), true),
  new arrow.Field("at", new arrow.TimestampMicrosecond("UTC"), true),
  new arrow.Field("day", new arrow.DateDay(), true),
  new arrow.Field("ok", new arrow.Bool(), true),
]);
const rows = (ids) => ids.map((id) => ({
  id: BigInt(id), score: id / 2, name: `n${id}`, vec: [id, id, id, id], meta: { k: `k${id}`, n: id },
  tags: [`t${id}`], at: new Date(Date.UTC(2026, 0, id)), day: new Date(Date.UTC(2026, 0, id)), ok: id % 2 === 0,
}));
const t = await db.createTable("fixture", rows([1, 2, 3]), { schema });
await t.add(rows([4, 5]));
await t.delete("id = 2");
await t.createIndex("id");
const dev = await (await t.branches()).create("dev");
await dev.add(rows([6]));
