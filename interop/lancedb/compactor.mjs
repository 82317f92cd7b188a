// The reference compaction worker: flightns decides which tables need a
// compaction and leases each as a job (docs/maintenance.md, "Compaction
// handed to engines"); this worker claims jobs and runs LanceDB's
// table.optimize() — Lance's compaction, committed through flightns like
// any write — renewing its lease while it works, then reports the job
// completed or failed.
//
//   node compactor.mjs '<json config>'
//
// config: {"uri": <flightns REST uri>, "worker": <name; default host:pid>,
//          "leaseSeconds": n (default 60), "namespace": [...] (only the
//          tables inside), "pollMs": n (the longest wait between two
//          claims, default 5000), "once": bool (claim until none is due,
//          then stop), "stdinStops": bool (stop when stdin ends, as
//          the tests stop it)}
// FLIGHTNS_TOKEN / FLIGHTNS_API_KEY authenticate, as lib.mjs's connect.
//
// It follows the change feed (GET /v1/changes, Server-Sent Events) and
// claims again whenever a table gets a version or a job ends, or pollMs
// after its last claim; it stops after its current job on SIGTERM or
// SIGINT (or once stdin ends, with stdinStops). Prints one JSON line when it stops:
// {"ok", "worker", "jobs": [{"job_id", "table", "attempt", "outcome":
// "completed"|"failed"|"lost", "version", "startMs", "endMs", "error"}],
// "errors"}.
import os from "node:os";
import { connect, emit, errorText } from "./lib.mjs";

const cfg = JSON.parse(process.argv[2] ?? "{}");
const base = cfg.uri.replace(/\/+$/, "");
const worker = cfg.worker ?? `${os.hostname()}:${process.pid}`;
const leaseSeconds = cfg.leaseSeconds ?? 60;
const pollMs = cfg.pollMs ?? 5000;
const report = { ok: false, worker, jobs: [], errors: [] };

function headers() {
  const h = { "Content-Type": "application/json" };
  if (process.env.FLIGHTNS_TOKEN) h.Authorization = `Bearer ${process.env.FLIGHTNS_TOKEN}`;
  if (process.env.FLIGHTNS_API_KEY) h["x-api-key"] = process.env.FLIGHTNS_API_KEY;
  return h;
}

// call posts body to a compaction route and returns the JSON answer; an
// error answer throws with its code.
async function call(route, body) {
  const res = await fetch(`${base}/v1/compaction/${route}`, { method: "POST", headers: headers(), body: JSON.stringify(body) });
  const text = await res.text();
  const out = text ? JSON.parse(text) : {};
  if (!res.ok) {
    const e = new Error(`${route}: HTTP ${res.status}: ${out.error ?? text}`);
    e.code = out.code;
    throw e;
  }
  return out;
}

// Waking: the feed and the poll timer set `due`; the loop waits on it.
let stopping = false;
let due = true;
let wakeUp = () => {};
function wake() {
  due = true;
  wakeUp();
}
function sleep() {
  if (due || stopping) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(resolve, pollMs);
    wakeUp = () => {
      clearTimeout(t);
      resolve();
    };
  });
}
function stop() {
  stopping = true;
  wakeUp();
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
if (cfg.stdinStops) {
  process.stdin.on("end", stop);
  process.stdin.resume();
}

// follow reads the change feed from its start (a wake-up per message: it
// only needs to know that something changed), resuming after its last id
// when the stream breaks.
const feedAbort = new AbortController();
async function follow() {
  const types = ["table.version.created", "compaction.completed", "compaction.failed", "compaction.expired"];
  const q = new URLSearchParams({ type: types.join(",") });
  if (cfg.namespace?.length) q.set("namespace", cfg.namespace.join("$"));
  let last = "";
  while (!stopping) {
    try {
      const h = headers();
      delete h["Content-Type"];
      if (last) h["Last-Event-ID"] = last;
      const res = await fetch(`${base}/v1/changes?${q}`, { headers: h, signal: feedAbort.signal });
      if (!res.ok) throw new Error(`the change feed: HTTP ${res.status}`);
      const decoder = new TextDecoder();
      let buf = "";
      for await (const chunk of res.body) {
        buf += decoder.decode(chunk, { stream: true });
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const msg = buf.slice(0, i);
          buf = buf.slice(i + 2);
          for (const line of msg.split("\n")) {
            if (line.startsWith("id:")) last = line.slice(3).trim();
          }
          wake();
        }
      }
    } catch (e) {
      if (stopping) return;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

// run compacts one job's table, renewing the lease meanwhile.
async function run(db, job) {
  const entry = { job_id: job.job_id, table: job.id.join("$"), attempt: job.attempt, startMs: Date.now() };
  report.jobs.push(entry);
  let lost = null;
  const beat = setInterval(async () => {
    try {
      await call("heartbeat", { job_id: job.job_id, worker });
    } catch (e) {
      lost = e; // the lease is gone (or unreachable): the completion will tell
    }
  }, Math.max(1000, (leaseSeconds * 1000) / 3));
  try {
    const t = await db.openTable(job.id.at(-1), job.id.slice(0, -1));
    await t.optimize();
    entry.version = await t.version();
    clearInterval(beat);
    await call("complete", { job_id: job.job_id, worker, version: entry.version });
    entry.outcome = "completed";
  } catch (e) {
    clearInterval(beat);
    entry.error = errorText(e);
    if (e.code === 14) {
      entry.outcome = "lost"; // its lease lapsed and another worker has it
    } else {
      entry.outcome = "failed";
      try {
        await call("fail", { job_id: job.job_id, worker, reason: String(e.message ?? e).slice(0, 4000) });
      } catch (e2) {
        if (e2.code === 14) entry.outcome = "lost";
        else report.errors.push(`fail: ${errorText(e2)}`);
      }
    }
  }
  if (lost && entry.outcome !== "completed") entry.lostBeat = String(lost.message);
  entry.endMs = Date.now();
}

try {
  const db = await connect(base);
  const feed = follow();
  while (!stopping) {
    due = false;
    const body = { worker, lease_seconds: leaseSeconds };
    if (cfg.namespace?.length) body.namespace = cfg.namespace;
    let job;
    try {
      job = (await call("claim", body)).job;
    } catch (e) {
      report.errors.push(`claim: ${errorText(e)}`);
    }
    if (job) {
      await run(db, job);
      due = true; // another table may be due
      continue;
    }
    if (cfg.once) break;
    await sleep();
  }
  stopping = true;
  feedAbort.abort();
  await feed;
  report.ok = report.errors.length === 0;
} catch (e) {
  report.errors.push(`unexpected error: ${errorText(e)}`);
}
emit(report);
process.exit(0);
