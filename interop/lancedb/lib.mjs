// Shared helpers of the interop scripts. Every script prints exactly one
// JSON object per line on stdout; the Go test (internal/restserver/interop_test.go)
// reads them. Failures are reported in the JSON, never only on stderr.
import * as lancedb from "@lancedb/lancedb";

export { lancedb };

// connect opens a LanceDB connection through flightns's REST namespace.
// FLIGHTNS_TOKEN, when set, travels as `Authorization: Bearer`;
// FLIGHTNS_API_KEY as `x-api-key`.
export async function connect(uri) {
  const headers = {};
  if (process.env.FLIGHTNS_TOKEN) headers.Authorization = `Bearer ${process.env.FLIGHTNS_TOKEN}`;
  if (process.env.FLIGHTNS_API_KEY) headers["x-api-key"] = process.env.FLIGHTNS_API_KEY;
  return lancedb.connectNamespace("rest", { uri, headers });
}

// connectDir opens Lance's own directory namespace at root (a directory,
// or an s3:// URI with storageOptions: aws_endpoint, aws_region, …). On
// S3 Lance needs the options twice: as the namespace's "storage.*"
// properties (its own reads and writes of the root) and as the
// connection's storage options (the tables it opens). properties are
// more of the namespace's own (table_version_tracking_enabled: "true"
// makes every commit a CreateTableVersion of the namespace, in process).
export async function connectDir(root, storageOptions, properties) {
  const extraProperties = { ...properties };
  for (const [k, v] of Object.entries(storageOptions ?? {})) extraProperties[`storage.${k}`] = v;
  const config = Object.keys(extraProperties).length > 0 ? { root, extraProperties } : { root };
  return lancedb.connectNamespace("dir", config, storageOptions ? { storageOptions } : undefined);
}

// connectDynamo opens a plain LanceDB connection (no namespace) on an
// s3+ddb://bucket/prefix?ddbTableName=T URI: Lance writes its tables to
// S3 and commits every version through its DynamoDB commit store, the
// table T (HASH key base_uri, a string; RANGE key version, a number),
// which must exist beforehand. storageOptions reach both: aws_endpoint,
// aws_region, … for S3, dynamodb_endpoint for DynamoDB, the keys and
// region for both.
export async function connectDynamo(uri, storageOptions) {
  return lancedb.connect(uri, { storageOptions });
}

// emit prints one JSON line.
export function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

// rowsOf returns the table's rows as sorted "id:amount" strings: enough to
// tell apart every version of the scenarios (adds, updates, deletes,
// merges).
export async function rowsOf(table) {
  const rows = await table.query().select(["id", "amount"]).toArray();
  return rows.map((r) => `${Number(r.id)}:${Number(r.amount)}`).sort(compareRows);
}

function compareRows(a, b) {
  return Number(a.split(":")[0]) - Number(b.split(":")[0]);
}

// row makes one row of the scenarios' schema.
export function row(id, amount = id * 10) {
  return { id, amount, name: `row-${id}` };
}

// errorText flattens an error for the JSON report.
export function errorText(e) {
  return e && e.stack ? String(e.stack) : String(e);
}

// lines yields stdin line by line (for scripts the test drives step by step).
export async function* stdinLines() {
  let buf = "";
  for await (const chunk of process.stdin) {
    buf += chunk;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      yield buf.slice(0, i);
      buf = buf.slice(i + 1);
    }
  }
}
