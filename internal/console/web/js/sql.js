// The SQL console: one read-only statement over the catalog's tables
// (__manifest, namespaces, tables, table_versions, dropped), run through the
// server's SQL gate; results a page at a time, or downloaded whole as
// CSV or Arrow.
import { h, fill, button, count } from "./dom.js";
import { post, request, errorBox } from "./api.js";

// The editor's text outlives the page (until the tab is closed).
let text = "SELECT table_id, coalesce(branch, 'main') AS branch, version, committed_at, num_rows\n" +
  "FROM table_versions\nORDER BY committed_at DESC\nLIMIT 100";

const examples = [
  ["Namespaces", "SELECT * FROM namespaces ORDER BY object_id"],
  ["Tables", "SELECT * FROM tables ORDER BY object_id"],
  ["Latest versions", "SELECT table_id, max(version) AS latest, count(*) AS versions\nFROM table_versions WHERE branch IS NULL\nGROUP BY table_id ORDER BY table_id"],
  ["Relations", "SHOW TABLES"],
];

export function sqlPage(el) {
  const editor = h("textarea", { class: "sql-editor mono", testid: "sql-editor", spellcheck: "false",
    "aria-label": "SQL", rows: 8, value: text });
  editor.value = text;
  editor.addEventListener("input", () => { text = editor.value; });
  editor.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      run(0);
    }
  });
  const pageSize = h("select", { testid: "sql-limit", "aria-label": "rows per page" },
    [50, 100, 500, 1000].map((n) => h("option", { value: n, selected: n === 100 ? true : null }, `${n} rows a page`)));
  const runButton = button("Run", () => run(0), { class: "primary", testid: "sql-run", title: "Ctrl+Enter" });
  const meta = h("div", { class: "sql-meta", testid: "sql-meta" });
  const out = h("div", { class: "sql-out", testid: "sql-out" });
  const prev = button("← Previous", () => run(Math.max(0, shown.offset - shown.limit)), { testid: "sql-prev", disabled: true });
  const next = button("Next →", () => run(shown.offset + shown.limit), { testid: "sql-next", disabled: true });
  const csv = button("CSV", () => download("csv"), { testid: "sql-csv", title: "the whole result as CSV" });
  const arrow = button("Arrow", () => download("arrow"), { testid: "sql-arrow", title: "the whole result as an Arrow IPC stream" });
  const downloadStatus = h("span", { class: "muted", testid: "sql-download-status" });

  // shown is the page on screen: its statement (the one the pager and the
  // downloads use, whatever the editor holds since), offset and limit.
  let shown = { sql: null, offset: 0, limit: 100 };

  fill(el,
    h("div", { class: "page-head" }, h("h1", null, "SQL"),
      h("span", { class: "muted" }, "One read-only statement; Ctrl+Enter runs it.")),
    h("div", { class: "examples" }, "Examples: ", examples.map(([name, q]) =>
      button(name, () => { editor.value = text = q; editor.focus(); }, { class: "link" }))),
    editor,
    h("div", { class: "toolbar" }, runButton, pageSize, h("span", { class: "spacer" }), "Download ", csv, arrow, downloadStatus),
    meta, out,
    h("div", { class: "toolbar pager" }, prev, next));
  editor.focus();

  async function run(offset) {
    const sql = offset === 0 ? editor.value : shown.sql;
    if (!sql || !sql.trim()) return;
    const limit = offset === 0 ? Number(pageSize.value) : shown.limit;
    runButton.disabled = prev.disabled = next.disabled = true;
    fill(meta, h("span", { class: "muted" }, "Running…"));
    try {
      const r = await post("/api/sql", { sql, offset, limit });
      shown = { sql, offset: r.offset, limit: r.limit };
      const first = r.rows.length ? r.offset + 1 : r.offset;
      fill(meta,
        h("span", { testid: "sql-rows" }, r.rows.length ? `rows ${count(first)}–${count(r.offset + r.rows.length)}${r.more ? " (more follow)" : ""}` : "no rows"),
        h("span", { testid: "sql-elapsed" }, `${r.elapsed_ms} ms`),
        h("span", null, `${count(r.rows_read)} rows read`));
      fill(out, grid(r));
      prev.disabled = r.offset === 0;
      next.disabled = !r.more;
    } catch (e) {
      fill(meta);
      fill(out, errorBox(e, "sql-error"));
      if (offset === 0) shown = { sql: null, offset: 0, limit };
    } finally {
      runButton.disabled = false;
    }
  }

  async function download(format) {
    const sql = shown.sql || editor.value;
    if (!sql.trim()) return;
    fill(downloadStatus, `preparing ${format}…`);
    try {
      const resp = await request("POST", "/api/sql/download", { body: { sql, format } });
      const blob = await resp.blob();
      const name = filename(resp.headers.get("Content-Disposition")) || `result.${format === "csv" ? "csv" : "arrows"}`;
      const url = URL.createObjectURL(blob);
      const a = h("a", { href: url, download: name, hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      fill(downloadStatus, `${name}, ${count(blob.size)} bytes`);
    } catch (e) {
      fill(downloadStatus);
      fill(out, errorBox(e, "sql-error"));
    }
  }
}

function grid(r) {
  const head = h("tr", null, h("th", { class: "rownum" }, "#"),
    r.columns.map((c) => h("th", { title: c.type }, h("span", { class: "mono" }, c.name), h("span", { class: "coltype" }, c.type))));
  const rows = r.rows.map((row, i) => h("tr", null, h("td", { class: "rownum" }, r.offset + i + 1),
    row.map((v) => cell(v))));
  if (!rows.length) rows.push(h("tr", null, h("td", { class: "empty", colspan: r.columns.length + 1 }, "No rows.")));
  return h("div", { class: "grid-wrap" },
    h("table", { class: "grid results", testid: "sql-grid" }, h("thead", null, head), h("tbody", null, rows)));
}

function cell(v) {
  if (v === null) return h("td", { class: "null" }, "NULL");
  if (typeof v === "number") return h("td", { class: "num mono" }, String(v));
  if (typeof v === "boolean") return h("td", { class: "mono" }, String(v));
  if (typeof v === "object") return h("td", { class: "mono" }, JSON.stringify(v));
  return h("td", { class: "mono" }, v);
}

// filename reads Content-Disposition's filename (quoted or not).
function filename(cd) {
  const m = cd && /filename="?([^";]+)"?/.exec(cd);
  return m ? m[1] : null;
}
