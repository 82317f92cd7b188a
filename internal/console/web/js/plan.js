// The plan_scan explorer: which partitions of a partitioned table a
// filter keeps (with the residual filter each still needs) and which it
// prunes, as the planner decides at the catalog's current sequence.
import { h, fill, table, idText, hashOf, count, button } from "./dom.js";
import { post, errorBox } from "./api.js";

let filterText = "";

export function planPage(el, id) {
  const idInput = h("input", { class: "mono wide", testid: "plan-id", value: id.join("$"),
    placeholder: "sales$orders", "aria-label": "table id" });
  const filter = h("textarea", { class: "mono", testid: "plan-filter", rows: 3, spellcheck: "false",
    placeholder: "region = 'eu' AND day >= DATE '2024-01-01'", "aria-label": "filter", value: filterText });
  filter.addEventListener("input", () => { filterText = filter.value; });
  const out = h("div", { testid: "plan-out" });
  const form = h("form", { class: "plan-form", onsubmit: (ev) => {
    ev.preventDefault();
    run();
  } },
  h("label", null, h("span", null, "Partitioned table ", h("span", { class: "muted" }, "(levels joined by $)")), idInput),
  h("label", null, h("span", null, "Filter ", h("span", { class: "muted" }, "(SQL; empty: every partition)")), filter),
  h("div", { class: "toolbar" }, h("button", { type: "submit", class: "primary", testid: "plan-run" }, "Plan")));
  filter.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      run();
    }
  });
  fill(el, h("div", { class: "page-head" }, h("h1", null, "plan_scan explorer")),
    h("p", { class: "muted" }, "A partitioned table is a namespace whose partitions are tables; the planner prunes them by a filter on the partition columns."),
    form, out);

  async function run() {
    const levels = idInput.value.split("$").map((x) => x.trim()).filter((x) => x !== "");
    if (levels.length) {
      const want = hashOf("plan", levels);
      if (location.hash !== want) history.replaceState(null, "", want);
    }
    fill(out, h("p", { class: "muted" }, "Planning…"));
    try {
      const r = await post("/api/plan", { id: levels, filter: filter.value });
      const cols = r.partition_columns || [];
      const valueCols = cols.map((c, i) => ({ title: c, class: "mono", cell: (p) => show(p.values ? p.values[i] : null) }));
      fill(out,
        h("p", { testid: "plan-summary" }, `At catalog sequence ${r.seq}: `,
          h("strong", null, `${count(r.kept.length)} kept`), ", ",
          h("strong", null, `${count(r.pruned.length)} pruned`), ` (partition columns: ${cols.join(", ") || "none"})`),
        h("h2", null, "Kept"),
        table([
          { title: "Partition", class: "mono", cell: (p) => idText(Array.isArray(p.id) ? p.id : [String(p.id)]) },
          ...valueCols,
          { title: "Version", class: "mono num", cell: (p) => show(p.version) },
          { title: "Residual filter", class: "mono", cell: (p) => (p.residual ? p.residual : h("span", { class: "muted" }, "none")) },
        ], r.kept, { testid: "plan-kept", empty: "No partition is kept." }),
        h("h2", null, "Pruned"),
        table([
          { title: "Partition", class: "mono", cell: (p) => idText(Array.isArray(p.id) ? p.id : [String(p.id)]) },
          ...valueCols,
        ], r.pruned, { testid: "plan-pruned", empty: "No partition is pruned." }));
    } catch (e) {
      fill(out, errorBox(e, "plan-error"));
    }
  }
  if (id.length) run();
}

function show(v) {
  if (v === null || v === undefined) return h("span", { class: "null" }, "NULL");
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}
