// The activity page: the catalog's changes as they happen (the change
// feed, newest first), the last hour of the server's metrics history as
// uPlot charts, and the latest of each surface's operations. Nothing is
// read on a timer: the page loads the history once, at a catalog
// sequence, and follows the change feed after it; a change redraws the
// charts once the server has sampled it (a sampling interval later), so
// an idle catalog costs no request at all.
import { h, fill, table, link, idText, when, badge } from "./dom.js";
import { get, errorBox } from "./api.js";
import { follow, liveStatus } from "./changes.js";

// maxChanges bounds the list of changes (the oldest go).
const maxChanges = 200;

// charts: each draws some series of /api/metrics's "series"; span: a line
// joins the samples across those without data (a latency has none when
// nothing happened).
const charts = [
  { key: "commits", title: "Commits and conflicts", unit: "/s",
    series: [["commits_per_s", "commits/s"], ["conflicts_per_s", "conflicts/s"]] },
  { key: "claim", title: "Claim latency", unit: "ms", span: true,
    series: [["claim_p50_ms", "p50"], ["claim_p99_ms", "p99"]] },
  { key: "request", title: "Request latency", unit: "ms", span: true,
    series: [["request_p50_ms", "p50"], ["request_p99_ms", "p99"]] },
  { key: "group", title: "Group commit size", unit: "commits", span: true,
    series: [["group_commit_size", "commits per group"]] },
  { key: "lag", title: "Materializer lag", unit: "seqs",
    series: [["materializer_lag", "lag"]] },
];

const colours = ["#2563eb", "#dc2626", "#059669", "#d97706"];

export function activityPage(el, _id, ctx) {
  const status = h("span", { class: "muted", testid: "activity-updated" }, "Loading…");
  const live = liveStatus();
  const problem = h("div");
  const grid = h("div", { class: "charts" });
  const ops = h("div", { testid: "ops-wrap" });
  const changes = changeList();
  fill(el, h("div", { class: "page-head" }, h("h1", null, "Activity"), live.el, status), problem,
    h("h2", null, "Changes"),
    h("p", { class: "muted" }, "The catalog's changes since this page opened, newest first (the last ", String(maxChanges), ")."),
    changes.el,
    h("h2", null, "The last hour"), grid,
    h("h2", null, "Operations by surface"),
    h("p", { class: "muted" }, "The latest sample of each surface's operations."), ops);

  const cards = charts.map((c) => {
    const latest = h("span", { class: "latest", testid: `chart-${c.key}-latest` });
    const plot = h("div", { class: "plot" });
    const card = h("figure", { class: "chart", testid: `chart-${c.key}` },
      h("figcaption", null, h("span", null, c.title, h("span", { class: "unit" }, c.unit)), latest), plot);
    grid.append(card);
    return { c, card, plot, latest, u: null };
  });

  let stopped = false;
  let stopFeed = () => {};
  const resize = () => {
    for (const k of cards) if (k.u) k.u.setSize(size(k.plot));
  };
  window.addEventListener("resize", resize);
  ctx.onLeave(() => {
    stopped = true;
    stopFeed();
    clearTimeout(redraw.timer);
    window.removeEventListener("resize", resize);
    for (const k of cards) if (k.u) k.u.destroy();
  });

  // load reads the metrics history and draws it; it answers the catalog
  // sequence the history is at (null when it failed).
  async function load() {
    try {
      const m = await get("/api/metrics");
      if (stopped) return null;
      fill(problem);
      draw(m);
      redraw.sampleMs = 1000 * m.interval_s;
      fill(status, `sampled every ${m.interval_s} s · drawn ${new Date().toLocaleTimeString()}`);
      return m.seq;
    } catch (e) {
      if (!stopped) fill(problem, errorBox(e));
      return null;
    }
  }

  // redraw draws the charts again once the server has sampled the
  // changes that arrived: a sampling interval after the first of them,
  // and again as long as more arrived meanwhile.
  const redraw = { timer: null, due: 0, sampleMs: 2000 };
  const afterChange = () => {
    const wait = redraw.sampleMs + 500;
    redraw.due = Date.now() + wait;
    if (redraw.timer === null) redraw.timer = setTimeout(drawAgain, wait);
  };
  async function drawAgain() {
    const started = Date.now();
    await load();
    redraw.timer = null;
    if (!stopped && redraw.due > started) redraw.timer = setTimeout(drawAgain, Math.max(0, redraw.due - Date.now()));
  }

  function draw(m) {
    for (const k of cards) {
      const data = [m.t, ...k.c.series.map(([name]) => m.series[name] || m.t.map(() => null))];
      // What the test and a reader check: the samples and the sum of the
      // first series over the hour.
      const first = data[1].filter((v) => v !== null);
      k.card.dataset.samples = String(m.t.length);
      k.card.dataset.sum = String(first.reduce((a, b) => a + b, 0));
      fill(k.latest, k.c.series.map(([name, label], i) => {
        const v = lastOf(m.series[name] || []);
        return h("span", { class: "latest-value" }, h("i", { class: `swatch swatch-${i}` }), `${label} ${fmt(v)}`);
      }));
      if (!window.uPlot) {
        fill(k.plot, h("p", { class: "muted" }, "uPlot did not load."));
        continue;
      }
      if (!k.u) {
        k.u = new window.uPlot({
          ...size(k.plot),
          cursor: { drag: { x: false, y: false } },
          legend: { show: false },
          scales: { x: { time: true }, y: { range: (_u, lo, hi) => [Math.min(0, lo ?? 0), hi === null || hi === undefined || hi <= 0 ? 1 : hi * 1.1] } },
          axes: [{ stroke: "#667085", grid: { stroke: "#eef0f3" } },
            { stroke: "#667085", grid: { stroke: "#eef0f3" }, size: 50, values: (_u, vals) => vals.map((v) => fmt(v)) }],
          series: [{}, ...k.c.series.map(([, label], i) => ({
            label, stroke: colours[i], width: 1.5, spanGaps: Boolean(k.c.span),
          }))],
        }, data, k.plot);
      } else {
        k.u.setData(data);
      }
    }
    const names = Object.keys(m.ops).sort();
    fill(ops, table([
      { title: "Surface and operation", class: "mono", cell: (n) => n },
      { title: "per s", class: "num", cell: (n) => fmt(lastOf(m.ops[n].per_s)) },
      { title: "p50 ms", class: "num", cell: (n) => fmt(lastOf(m.ops[n].p50_ms)) },
      { title: "p99 ms", class: "num", cell: (n) => fmt(lastOf(m.ops[n].p99_ms)) },
    ], names, { testid: "ops", empty: "No operations in the last hour.",
      rowAttrs: (n) => ({ testid: "op-row", data: { op: n } }) }));
  }

  // The history, then the changes after the sequence it is at.
  load().then((seq) => {
    if (stopped) return;
    if (seq === null) {
      fill(changes.empty, "The changes are not followed: the page could not load.");
      return;
    }
    stopFeed = follow({
      after: seq,
      onEvents: (events) => {
        if (!events.length) return;
        changes.add(events);
        afterChange();
      },
      onStatus: (state, error, wait) => {
        live.onStatus(state, error, wait);
        if (state === "stale") ctx.reload();
        if (state === "refused") fill(problem, errorBox(error));
      },
    });
  });
}

// lastOf is the newest value of a series, or null when the last sample
// had no data.
function lastOf(xs) {
  return xs.length ? xs[xs.length - 1] : null;
}

function fmt(v) {
  if (v === null || v === undefined) return "–";
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 0.01) return v.toFixed(2);
  return v.toPrecision(2);
}

function size(el) {
  return { width: Math.max(260, el.clientWidth || 400), height: 180 };
}

// changeList is the list of changes, newest first: add(events) puts
// events (CloudEvents, in the feed's order) on top and drops the oldest
// beyond maxChanges.
function changeList() {
  const rows = h("tbody");
  const empty = h("td", { class: "empty", colspan: 6 }, "No change since this page opened.");
  rows.append(h("tr", { testid: "change-none" }, empty));
  const el = h("table", { class: "grid changes", testid: "changes" },
    h("thead", null, h("tr", null, ["Time", "Change", "Object", "Details", "By", "Sequence"].map((t) => h("th", null, t)))),
    rows);
  const add = (events) => {
    const none = rows.querySelector("[data-testid=change-none]");
    if (none) none.remove();
    // Newest first: each event above those before it.
    for (const ce of events) rows.insertBefore(changeRow(ce), rows.firstChild);
    while (rows.childElementCount > maxChanges) rows.lastChild.remove();
  };
  return { el, add, empty };
}

// changeRow shows one event: when, its type, its object (a link to its
// page while it exists), what it did, who did it.
function changeRow(ce) {
  const ev = ce.data || {};
  const id = Array.isArray(ev.id) ? ev.id : [];
  const type = String(ev.type || ce.type || "");
  const gone = /\.(dropped|deregistered)$/.test(type);
  const page = type.startsWith("namespace.") ? "ns" : "table";
  const object = !id.length ? h("span", { class: "mono muted" }, ev.location || "")
    : gone ? h("span", { class: "mono" }, idText(id))
      : link(page, id, idText(id), { class: "mono", testid: "change-link" });
  const details = [];
  if (type === "table.version.created") details.push(`${ev.branch || "main"}@${ev.version}`);
  if (type === "table.versions.deleted") {
    const n = Array.isArray(ev.versions) ? ev.versions.length : 0;
    details.push(`${n} ${n === 1 ? "version" : "versions"} of ${ev.branch || "main"}`);
  }
  if (Array.isArray(ev.from) && ev.from.length) details.push(`from ${idText(ev.from)}`);
  if (ev.txn_id) details.push(`transaction ${ev.txn_id}`);
  return h("tr", { testid: "change-row", data: { type, id: idText(id), seq: ev.seq ?? "", version: ev.version ?? "" } },
    h("td", { class: "mono" }, ev.time ? when(ev.time) : ""),
    h("td", null, badge(type, kindOf(type))),
    h("td", null, object),
    h("td", { class: "mono" }, details.join(" · ")),
    h("td", null, ev.principal || ""),
    h("td", { class: "mono num" }, String(ev.seq ?? "")));
}

function kindOf(type) {
  if (/\.(dropped|deregistered)$|versions\.deleted$/.test(type)) return "bad";
  if (type === "table.version.created") return "branch";
  return "ok";
}
