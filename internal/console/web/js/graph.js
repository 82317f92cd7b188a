// The branch graph: main as a line of version dots, each branch on its
// own lane forking from its parent's version, tags as labels on their
// versions. Versions are columns in order (not to scale), so a table
// with 100,000 versions draws the few the page read.
import { s } from "./dom.js";

const step = 34; // px between version columns
const laneH = 38;
const padL = 150; // lane names
const padR = 30;
const padT = 34; // tag labels above main

// branchGraph draws lanes [{key, name, parentKey, parentVersion,
// versions: ascending numbers, more: older versions not read}] and tags
// [{name, branch, version}]; onPick(key) is called when a lane's name is
// clicked.
export function branchGraph({ lanes, tags, onPick }) {
  const cols = [...new Set(lanes.flatMap((l) => [...l.versions, ...(l.parentVersion !== null ? [l.parentVersion] : [])]))]
    .sort((a, b) => a - b);
  const col = new Map(cols.map((v, i) => [v, i]));
  const x = (v) => padL + step / 2 + col.get(v) * step + (lanes.some((l) => l.more) ? step : 0);
  const row = new Map(lanes.map((l, i) => [l.key, i]));
  const y = (key) => padT + row.get(key) * laneH + laneH / 2;
  const width = x(cols[cols.length - 1] ?? 0) + step / 2 + padR;
  const height = padT + lanes.length * laneH + 8;

  const svg = s("svg", { class: "branch-graph", testid: "branch-graph", width, height, viewBox: `0 0 ${width} ${height}`,
    role: "img", "aria-label": "branches and tags over the versions" });
  svg.append(s("title", null, "branches and tags over the versions"));
  if (!cols.length) {
    svg.append(s("text", { x: padL, y: padT + laneH / 2, class: "graph-empty" }, "no versions yet"));
  }

  lanes.forEach((lane, i) => {
    const colour = `lane-${i % 8}`;
    const g = s("g", { class: `lane ${colour}`, testid: "graph-lane", data: { branch: lane.name } });
    const ly = y(lane.key);
    const label = s("text", { x: 8, y: ly + 4, class: "lane-name", testid: "graph-lane-name" }, clip(lane.name, 20));
    label.append(s("title", null, lane.key ? `branch ${lane.name}: show its versions` : "main: show its versions"));
    label.addEventListener("click", () => onPick && onPick(lane.key));
    g.append(label);
    const vs = lane.versions;
    const forked = lane.parentKey !== null && row.has(lane.parentKey) && col.has(lane.parentVersion);
    if (vs.length) {
      const first = x(vs[0]);
      if (lane.more) g.append(s("line", { x1: first - step * 1.5, y1: ly, x2: first, y2: ly, class: "edge more" }));
      g.append(s("line", { x1: first, y1: ly, x2: x(vs[vs.length - 1]), y2: ly, class: "edge" }));
      if (forked) {
        const px = x(lane.parentVersion);
        const py = y(lane.parentKey);
        g.append(s("path", { d: `M ${px} ${py} C ${px} ${ly}, ${px} ${ly}, ${first} ${ly}`, class: "edge fork" }));
      } else if (lane.parentKey !== null) {
        // its parent is not drawn: the fork point as a dangling start
        g.append(s("line", { x1: first - step, y1: ly, x2: first, y2: ly, class: "edge more" }));
      }
    } else if (forked) {
      g.append(s("path", { d: `M ${x(lane.parentVersion)} ${y(lane.parentKey)} L ${x(lane.parentVersion)} ${ly}`, class: "edge fork" }));
    }
    vs.forEach((v, j) => {
      const head = j === vs.length - 1;
      const dot = s("circle", { cx: x(v), cy: ly, r: head ? 6 : 4, class: head ? "dot head" : "dot",
        testid: "graph-dot", data: { branch: lane.name, version: v } });
      dot.append(s("title", null, `${lane.name} version ${v}${head ? " (latest)" : ""}`));
      g.append(dot);
    });
    const last = vs[vs.length - 1];
    if (last !== undefined) g.append(s("text", { x: x(last) + 10, y: ly + 4, class: "head-label" }, `v${last}`));
    svg.append(g);
  });

  // Tags: labels above their version, stacked when several share one.
  const stacked = new Map();
  for (const tag of tags) {
    const key = tag.branch || "";
    if (!row.has(key) || !col.has(tag.version)) continue;
    const at = `${key}@${tag.version}`;
    const n = stacked.get(at) || 0;
    stacked.set(at, n + 1);
    const tx = x(tag.version);
    const ty = y(key) - 10 - n * 12;
    const label = s("text", { x: tx, y: ty, class: "tag-label", "text-anchor": "middle", testid: "graph-tag",
      data: { tag: tag.name, version: tag.version } }, clip(tag.name, 16));
    label.append(s("title", null, `tag ${tag.name}: ${tag.branch || "main"}@${tag.version}`));
    svg.append(label);
  }
  return svg;
}

function clip(text, n) {
  const chars = [...text];
  return chars.length > n ? chars.slice(0, n - 1).join("") + "…" : text;
}
