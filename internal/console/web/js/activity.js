// The activity page: the last hour of the server's metrics history as
// uPlot charts, and the latest of each surface's operations, read again
// every 2 seconds while the page is shown.
import { h, fill, table } from "./dom.js";
import { get, errorBox } from "./api.js";

const refreshMs = 2000;

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
  const problem = h("div");
  const grid = h("div", { class: "charts" });
  const ops = h("div", { testid: "ops-wrap" });
  fill(el, h("div", { class: "page-head" }, h("h1", null, "Activity"), status), problem, grid,
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

  let timer = null;
  let stopped = false;
  const resize = () => {
    for (const k of cards) if (k.u) k.u.setSize(size(k.plot));
  };
  window.addEventListener("resize", resize);
  ctx.onLeave(() => {
    stopped = true;
    clearTimeout(timer);
    window.removeEventListener("resize", resize);
    for (const k of cards) if (k.u) k.u.destroy();
  });

  async function tick() {
    try {
      const m = await get("/api/metrics");
      if (stopped) return;
      fill(problem);
      draw(m);
      fill(status, `every ${m.interval_s} s · updated ${new Date().toLocaleTimeString()}`);
    } catch (e) {
      if (stopped) return;
      fill(problem, errorBox(e));
    }
    if (!stopped) timer = setTimeout(tick, refreshMs);
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

  tick();
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
