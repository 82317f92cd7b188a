// Probes what a caller may do: one read (listNamespaces) and one write
// (createNamespace), each reported with its error, if any. The auth test
// runs it with FLIGHTNS_TOKEN set to tokens of different roles.
//
//   node probe.mjs <flightns uri> <namespace to create>
import { connect, emit } from "./lib.mjs";

const [uri, name] = process.argv.slice(2);
const out = {};
try {
  const db = await connect(uri);
  for (const [what, fn] of [
    ["read", () => db.listNamespaces([])],
    ["write", () => db.createNamespace([name])],
  ]) {
    try {
      await fn();
      out[what] = "ok";
    } catch (e) {
      out[what] = String(e);
    }
  }
} catch (e) {
  out.connect = String(e);
}
emit(out);
