// Maintenance signals (the view table_maintenance): a table's Maintenance
// panel, and the tables under a namespace that need a compaction.
import { h, fill, link, idText, table, kv, nullable, bytes, count, when, badge } from "./dom.js";
import { get, errorBox } from "./api.js";

// needsBadge shows needs_compaction: yes, no, or unknown (the latest
// version's fragments are not read yet).
function needsBadge(v, attrs = {}) {
  const state = v === true ? "true" : v === false ? "false" : "unknown";
  const text = v === true ? "needs compaction" : v === false ? "no" : "not known yet";
  return badge(text, v === true ? "bad" : v === false ? "ok" : "", { data: { needs: state }, ...attrs });
}

// deleted shows deleted rows with their share of the physical rows.
function deleted(m) {
  if (m.deleted_rows === null || m.deleted_rows === undefined) return nullable(null);
  const physical = Number(m.rows) + Number(m.deleted_rows);
  const share = physical > 0 ? ` (${(100 * Number(m.deleted_rows) / physical).toFixed(1)}%)` : "";
  return `${count(m.deleted_rows)}${share}`;
}

function compaction(m) {
  if (m.last_compaction_version === null) return nullable(null);
  return h("span", null, `version ${m.last_compaction_version}, `, nullable(m.last_compaction_at, when));
}

function ruleText(t) {
  return `A version needs a compaction when it has ${t.small_fragments} or more small fragments ` +
    `(under ${count(t.small_fragment_rows)} rows each) or more than ${100 * t.deleted_ratio}% of its rows deleted.`;
}

// maintenancePanel loads a table's signals into a panel: main's as a
// list, every Lance branch's as a table below it.
export function maintenancePanel(id) {
  const el = h("div", { class: "maintenance", testid: "maintenance" }, h("p", { class: "muted" }, "Loading…"));
  get("/api/table/maintenance", { id }).then((r) => {
    const main = r.branches.find((b) => b.branch === "") || null;
    const others = r.branches.filter((b) => b.branch !== "");
    fill(el,
      main === null ? h("p", { class: "muted" }, "No signals for main.") : kv([
        ["Needs compaction", needsBadge(main.needs_compaction, { testid: "maint-needs" })],
        ["Version records", h("span", { class: "mono", testid: "maint-versions" }, count(main.versions))],
        ["Oldest kept version", h("span", { class: "mono", testid: "maint-oldest" }, nullable(main.oldest_version))],
        ["Latest version", h("span", { class: "mono", testid: "maint-latest" }, nullable(main.latest_version))],
        ["Fragments", h("span", { testid: "maint-fragments" }, nullable(main.fragments, count))],
        ["Small fragments", h("span", { testid: "maint-small" }, nullable(main.small_fragments, count))],
        ["Deleted rows", h("span", { testid: "maint-deleted" }, deleted(main))],
        ["Data", h("span", { testid: "maint-bytes" }, nullable(main.bytes, bytes))],
        ["Last cleanup", h("span", { testid: "maint-cleanup" }, nullable(main.last_cleanup_at, when))],
        ["Last compaction", h("span", { testid: "maint-compaction" }, compaction(main))],
      ], { testid: "maint-main" }),
      others.length ? table([
        { title: "Branch", class: "mono", cell: (b) => b.branch },
        { title: "Needs compaction", cell: (b) => needsBadge(b.needs_compaction) },
        { title: "Versions", class: "num", cell: (b) => `${count(b.versions)} (${b.oldest_version}–${b.latest_version})` },
        { title: "Fragments", class: "num", cell: (b) => nullable(b.fragments, count) },
        { title: "Small", class: "num", cell: (b) => nullable(b.small_fragments, count) },
        { title: "Deleted rows", class: "num", cell: deleted },
        { title: "Last compaction", cell: compaction },
      ], others, { testid: "maint-branches", rowAttrs: (b) => ({ data: { branch: b.branch } }) }) : null,
      h("p", { class: "muted" }, ruleText(r.thresholds), " Last cleanup: the last catalog change that removed version records of the table (any branch)."));
  }).catch((e) => fill(el, errorBox(e)));
  return el;
}

// compactionList loads the tables under namespace id (any depth; the
// root: all the caller may read) whose latest version needs a compaction.
export function compactionList(id) {
  const el = h("div", { testid: "ns-compaction" }, h("p", { class: "muted" }, "Loading…"));
  get("/api/maintenance", { id, limit: 100 }).then((r) => {
    fill(el,
      h("p", { class: "muted", testid: "ns-compaction-count", data: { count: r.tables.length } },
        r.tables.length
          ? `${count(r.tables.length)}${r.more ? "+" : ""} ${r.tables.length === 1 ? "table needs" : "tables need"} a compaction. `
          : "No table here needs a compaction. ",
        ruleText(r.thresholds)),
      r.tables.length ? table([
        { title: "Table", cell: (t) => link("table", t.id, idText(t.id), { testid: "compaction-link" }) },
        { title: "Branch", class: "mono", cell: (t) => t.branch || "main" },
        { title: "Fragments", class: "num", cell: (t) => nullable(t.fragments, count) },
        { title: "Small", class: "num", cell: (t) => nullable(t.small_fragments, count) },
        { title: "Deleted rows", class: "num", cell: deleted },
        { title: "Last compaction", cell: compaction },
      ], r.tables, { testid: "compaction-tables",
        rowAttrs: (t) => ({ testid: "compaction-row", data: { table: idText(t.id), branch: t.branch } }) }) : null);
  }).catch((e) => fill(el, errorBox(e)));
  return el;
}
