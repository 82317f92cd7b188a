// The catalog pages: the namespace tree, a namespace (and the tables
// under it that need a compaction), and a table (its maintenance
// signals, schema, versions, branches and tags, and verify).
import { h, fill, link, idText, table, kv, nullable, bytes, count, when, badge, button } from "./dom.js";
import { get, errorBox } from "./api.js";
import { branchGraph } from "./graph.js";
import { maintenancePanel, compactionList } from "./maintenance.js";
import { follow, liveStatus } from "./changes.js";

const sameId = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const isPrefix = (p, id) => p.length < id.length && p.every((x, i) => x === id[i]);

// breadcrumb links every level of id, from the root.
function breadcrumb(id, page) {
  const crumbs = [link("ns", [], "root", { testid: "crumb" })];
  id.forEach((name, i) => {
    crumbs.push(h("span", { class: "sep" }, "/"));
    const last = i === id.length - 1;
    crumbs.push(last && page === "table"
      ? h("span", { class: "crumb-here", testid: "crumb" }, name)
      : link("ns", id.slice(0, i + 1), name, { testid: "crumb" }));
  });
  return h("nav", { class: "breadcrumb", testid: "breadcrumb" }, crumbs);
}

function propertiesOf(props, testid) {
  const keys = Object.keys(props || {}).sort();
  return kv(keys.map((k) => [h("span", { class: "mono" }, k), h("span", { class: "mono wrap" }, props[k])]),
    { testid, empty: "No properties." });
}

// tree is the namespace tree from the root: each namespace with the
// counts of its child namespaces and tables, its children loaded when it
// is opened (a page of 100 at a time). The path to current opens itself.
function tree(current) {
  const ul = h("ul", { class: "tree-level" });
  const rootLink = link("ns", [], "root", { class: current.length === 0 ? "current" : null, testid: "ns-root" });
  const el = h("nav", { class: "tree", testid: "ns-tree" }, h("div", { class: "tree-root" }, rootLink), ul);
  loadLevel(ul, [], current);
  return el;
}

async function loadLevel(ul, id, current, pageToken) {
  const status = h("li", { class: "muted" }, "Loading…");
  ul.append(status);
  let r;
  try {
    r = await get("/api/namespaces", { id, page_token: pageToken, limit: 100 });
  } catch (e) {
    status.replaceWith(h("li", null, errorBox(e)));
    return;
  }
  status.remove();
  if (!r.namespaces.length && !pageToken) ul.append(h("li", { class: "muted empty-level" }, "no namespaces"));
  for (const ns of r.namespaces) ul.append(treeNode(ns, current));
  if (r.next_page_token) {
    const more = h("li", null, button("more…", () => {
      more.remove();
      loadLevel(ul, id, current, r.next_page_token);
    }, { class: "link", testid: "ns-tree-more" }));
    ul.append(more);
  }
}

function treeNode(ns, current) {
  const children = h("ul", { class: "tree-level", hidden: true });
  let loaded = false;
  const open = (yes) => {
    children.hidden = !yes;
    toggle.textContent = yes ? "▾" : "▸";
    toggle.setAttribute("aria-expanded", String(yes));
    if (yes && !loaded) {
      loaded = true;
      loadLevel(children, ns.id, current);
    }
  };
  const toggle = button("▸", () => open(children.hidden), {
    class: "toggle", "aria-label": `open ${ns.name}`, "aria-expanded": "false", testid: "ns-toggle",
    disabled: ns.namespaces === 0 ? true : null,
  });
  const counts = h("span", { class: "counts", title: `${ns.namespaces} namespaces, ${ns.tables} tables` },
    ns.namespaces ? h("span", null, `${count(ns.namespaces)} ns`) : null,
    ns.tables ? h("span", null, `${count(ns.tables)} tbl`) : null);
  const li = h("li", { testid: "ns-node", data: { name: ns.name } },
    h("div", { class: "tree-row" }, toggle,
      link("ns", ns.id, ns.name, { class: sameId(ns.id, current) ? "current name" : "name", testid: "ns-link" }),
      counts),
    children);
  if (isPrefix(ns.id, current) && ns.namespaces > 0) open(true);
  return li;
}

// namespacePage: the tree beside the namespace's properties and tables.
export async function namespacePage(el, id) {
  const detail = h("div", { class: "detail" }, h("p", { class: "muted" }, "Loading…"));
  fill(el, h("div", { class: "split" }, h("aside", null, tree(id)), detail));
  let ns;
  try {
    ns = await get("/api/namespace", { id });
  } catch (e) {
    fill(detail, breadcrumb(id, "ns"), errorBox(e));
    return;
  }
  const tables = h("tbody");
  const tablesTable = h("table", { class: "grid", testid: "ns-tables" },
    h("thead", null, h("tr", null, h("th", null, "Table"), h("th", null, "Id"))), tables);
  const addTables = (list) => {
    for (const t of list) {
      tables.append(h("tr", { testid: "ns-table", data: { name: t.name } },
        h("td", null, link("table", t.id, t.name, { testid: "table-link" })),
        h("td", { class: "mono" }, idText(t.id))));
    }
  };
  addTables(ns.tables);
  if (!ns.tables.length) tables.append(h("tr", null, h("td", { class: "empty", colspan: 2 }, "No tables.")));
  const moreTables = h("div", { class: "pager" });
  const pageOn = (token) => {
    if (!token) return fill(moreTables);
    fill(moreTables, button("More tables", async (ev) => {
      ev.target.disabled = true;
      try {
        const next = await get("/api/namespace", { id, page_token: token });
        addTables(next.tables);
        pageOn(next.next_page_token);
      } catch (e) {
        fill(moreTables, errorBox(e));
      }
    }, { testid: "ns-tables-more" }));
  };
  pageOn(ns.next_page_token);
  fill(detail,
    breadcrumb(id, "ns"),
    h("h1", { testid: "ns-name" }, id.length ? id[id.length - 1] : "Root namespace",
      ns.partitioned ? badge("partitioned table", "branch") : null),
    id.length ? h("p", { class: "mono muted", testid: "ns-id" }, idText(id)) : null,
    ns.partitioned ? h("p", null, link("plan", id, "Explore its partitions with plan_scan →", { testid: "ns-plan" })) : null,
    h("h2", null, "Properties"), propertiesOf(ns.properties, "ns-properties"),
    h("h2", null, "Tables"), tablesTable, moreTables,
    h("h2", null, "Needs compaction"), compactionList(id));
}

// tablePage: a table's description, branches and tags as a graph over
// its versions, a page of versions at a time, and verify on demand. It is
// live: it follows the change feed of this table after the catalog
// sequence its description was read at, and draws what changed (the
// description, schema, branches and tags, graph, maintenance signals and
// the newest page of versions) again when a change of the table arrives,
// keeping the branch and page a reader chose.
export async function tablePage(el, id, ctx) {
  let stopFeed = () => {};
  let stopped = false;
  ctx.onLeave(() => {
    stopped = true;
    stopFeed();
  });
  fill(el, breadcrumb(id, "table"), h("p", { class: "muted" }, "Loading…"));
  let t;
  try {
    t = await get("/api/table", { id });
  } catch (e) {
    fill(el, breadcrumb(id, "table"), errorBox(e));
    return;
  }
  if (stopped) return;
  const live = liveStatus();
  const gone = h("div", { class: "gone", testid: "table-gone" });
  const summary = h("div");
  const maintenance = h("div");
  const schema = h("div");
  const refs = h("div");
  const properties = h("div");
  const versions = h("div", { class: "versions" });
  const graph = h("div", { class: "graph-wrap", testid: "graph-wrap" }, h("p", { class: "muted" }, "Loading…"));
  const timeline = versionTimeline(versions, id, t);
  fill(el,
    breadcrumb(id, "table"),
    h("div", { class: "page-head" }, h("h1", { testid: "table-name" }, id[id.length - 1]), live.el),
    gone,
    summary,
    h("h2", null, "Maintenance"),
    maintenance,
    h("h2", null, "Schema"),
    schema,
    h("h2", null, "Branches and tags"),
    graph,
    refs,
    h("h2", null, "Versions"),
    versions,
    h("h2", null, "Verify"),
    verifySection(id),
    h("h2", null, "Properties"),
    properties);

  // show draws what the description t says, and what is read after it.
  const show = (t) => {
    fill(summary, kv([
      ["Id", h("span", { class: "mono" }, idText(id))],
      ["Location", h("span", { class: "mono wrap", testid: "table-location" }, t.location)],
      ["Managed versioning", h("span", { testid: "table-managed" }, t.managed_versioning ? "yes" : "no")],
      ["Latest version (main)", h("span", { class: "mono", testid: "table-version" }, nullable(t.version))],
      ["Branches", count(t.branches.length)],
      ["Tags", count(t.tags.length)],
    ], { testid: "table-summary" }));
    fill(maintenance, maintenancePanel(id));
    fill(schema, t.schema_error
      ? h("p", { class: "muted", testid: "schema-error" }, t.schema_error)
      : table([
        { title: "Column", class: "mono", cell: (f) => f.name },
        { title: "Type", class: "mono", cell: (f) => f.type },
        { title: "Nullable", cell: (f) => (f.nullable ? "yes" : "no") },
      ], t.schema, { testid: "schema", empty: "No columns." }));
    fill(refs, branchesAndTags(t));
    fill(properties, propertiesOf(t.properties, "table-properties"));
    const drawing = ++graphs;
    drawGraph(graph, id, t, timeline.pick, () => drawing !== graphs);
  };
  let graphs = 0; // the graph drawings begun: only the last is shown
  show(t);

  // redraw reads the table again after changes of it arrived: one read
  // at a time, and one more if changes arrived during it.
  const refresh = { running: false, again: false, events: [] };
  const redraw = async (events) => {
    refresh.events = events; // the latest: what a notice of its end names
    if (refresh.running) {
      refresh.again = true;
      return;
    }
    refresh.running = true;
    try {
      do {
        refresh.again = false;
        let next;
        try {
          next = await get("/api/table", { id });
        } catch (e) {
          if (stopped) return;
          if (e.status === 404) {
            fill(gone, goneNotice(refresh.events, e));
            return stopFeed();
          }
          fill(gone, errorBox(e));
          continue;
        }
        if (stopped) return;
        fill(gone);
        t = next;
        show(t);
        timeline.changed(t);
      } while (refresh.again && !stopped);
    } finally {
      refresh.running = false;
    }
  };
  const delimiter = delimiterFor(id);
  stopFeed = follow({
    after: t.seq,
    query: { table: id.join(delimiter), delimiter },
    onEvents: (events) => {
      if (events.length) redraw(events);
    },
    onStatus: (state, error, wait) => {
      live.onStatus(state, error, wait);
      if (state === "stale") ctx.reload();
      if (state === "refused") fill(gone, errorBox(error));
    },
  });
}

// goneNotice says why the table's page has nothing more to show: the
// change that removed or renamed it (the last of events that did), or the
// error.
function goneNotice(events, e) {
  const last = [...events].reverse().map((ce) => ce.data || {})
    .find((ev) => /^table\.(dropped|deregistered|renamed)$/.test(ev.type));
  if (last && last.type === "table.renamed" && Array.isArray(last.id)) {
    return h("p", { class: "error", role: "status", data: { type: last.type } },
      "This table was renamed to ", link("table", last.id, idText(last.id), { testid: "table-renamed-to" }), ".");
  }
  if (last) {
    return h("p", { class: "error", role: "status", data: { type: last.type } },
      `This table was ${last.type.slice("table.".length)}${last.principal ? ` by ${last.principal}` : ""}.`);
  }
  return errorBox(e);
}

// delimiterFor is a delimiter for the change feed's table filter that
// no level of id holds: "$", or another character.
function delimiterFor(id) {
  const unused = (d) => id.every((name) => !name.includes(d));
  for (const d of ["$", "/", "|", "~", "^"]) if (unused(d)) return d;
  for (let c = 0xe000; ; c++) if (unused(String.fromCharCode(c))) return String.fromCharCode(c);
}

function branchesAndTags(t) {
  return h("div", { class: "columns" },
    table([
      { title: "Branch", class: "mono", cell: (b) => b.name },
      { title: "Forks from", class: "mono", cell: (b) => `${b.parent_branch || "main"}@${b.parent_version}` },
    ], t.branches, { testid: "branches", empty: "No branches." }),
    table([
      { title: "Tag", class: "mono", cell: (x) => x.name },
      { title: "Version", class: "mono", cell: (x) => `${x.branch || "main"}@${x.version}` },
    ], t.tags, { testid: "tags", empty: "No tags." }));
}

// The graph reads the newest versions of main and of each branch (at most
// graphBranches branches, graphVersions versions each): one page each,
// however many versions the table has.
const graphVersions = 30;
const graphBranches = 24;

// drawGraph draws t's graph into el once its versions are read, unless
// stale() says a newer drawing began meanwhile.
async function drawGraph(el, id, t, pick, stale = () => false) {
  const shown = t.branches.slice(0, graphBranches);
  try {
    const pages = await Promise.all([{ name: "" }, ...shown].map((b) =>
      get("/api/table/versions", { id, branch: b.name, limit: graphVersions })));
    if (stale()) return;
    const lanes = [{ key: "", name: "main", parentKey: null, parentVersion: null }, ...shown.map((b) => ({
      key: b.name, name: b.name, parentKey: b.parent_branch || "", parentVersion: b.parent_version,
    }))].map((lane, i) => ({
      ...lane,
      versions: pages[i].versions.map((v) => Number(v.version)).reverse(),
      more: pages[i].next_before !== null,
    }));
    fill(el, branchGraph({ lanes, tags: t.tags, onPick: pick }),
      t.branches.length > shown.length
        ? h("p", { class: "muted" }, `The graph shows ${shown.length} of ${t.branches.length} branches.`) : null);
  } catch (e) {
    if (!stale()) fill(el, errorBox(e));
  }
}

// versionTimeline lists a branch's versions newest first, a page at a
// time (next_before). It returns pick(branch), which shows another branch,
// and changed(t), which reads the page shown again after the table
// changed (t: its new description), on the same branch unless that is
// gone.
function versionTimeline(el, id, t) {
  const pageSize = 50;
  let branch = "";
  let stack = []; // the "before" of each newer page, for "Newer"
  let before = null;
  let tagsAt = tagsByVersion(t);
  const select = h("select", { testid: "versions-branch", "aria-label": "branch",
    onchange: () => show(select.value) });
  const options = (t) => fill(select, h("option", { value: "" }, "main"), t.branches.map((b) => h("option", { value: b.name }, b.name)));
  options(t);
  const body = h("div");
  const newest = button("Newest", () => load(null, []), { testid: "versions-newest" });
  const newer = button("← Newer", () => load(stack[stack.length - 1], stack.slice(0, -1)), { testid: "versions-newer" });
  const older = button("Older →", null, { testid: "versions-older" });
  const where = h("span", { class: "muted", testid: "versions-where" });
  let nextBefore = null;
  older.addEventListener("click", () => load(nextBefore, [...stack, before]));
  fill(el, h("div", { class: "toolbar" }, h("label", null, "Branch ", select), newest, newer, older, where), body);

  // loading counts the reads: only the latest one's answer is drawn.
  let loading = 0;
  async function load(b, s) {
    const mine = ++loading;
    for (const x of [newest, newer, older]) x.disabled = true;
    let r;
    try {
      r = await get("/api/table/versions", { id, branch, before: b, limit: pageSize });
    } catch (e) {
      if (mine !== loading) return;
      fill(body, errorBox(e));
      newest.disabled = false;
      return;
    }
    if (mine !== loading) return;
    before = b;
    stack = s;
    nextBefore = r.next_before;
    newest.disabled = before === null;
    newer.disabled = before === null;
    older.disabled = nextBefore === null;
    fill(where, r.versions.length
      ? `versions ${r.versions[r.versions.length - 1].version}–${r.versions[0].version}` : "");
    fill(body, table([
      { title: "Version", class: "mono num", cell: (v) => v.version },
      { title: "Tags", cell: (v) => (tagsAt.get(`${branch}@${v.version}`) || []).map((n) => badge(n, "tag", { testid: "version-tag" })) },
      { title: "Committed", class: "mono", cell: (v) => nullable(v.committed_at, when) },
      { title: "Rows", class: "num", cell: (v) => nullable(v.rows, count) },
      { title: "Fragments", class: "num", cell: (v) => nullable(v.fragments, count) },
      { title: "Bytes", class: "num", cell: (v) => nullable(v.bytes, bytes) },
    ], r.versions, { testid: "versions", empty: "No versions yet.",
      rowAttrs: (v) => ({ testid: "version-row", data: { version: v.version, branch } }) }));
  }
  function show(name) {
    branch = name;
    select.value = name;
    load(null, []);
  }
  show("");
  return {
    pick: (name) => {
      show(name);
      el.scrollIntoView({ behavior: "smooth", block: "start" });
    },
    changed: (t) => {
      tagsAt = tagsByVersion(t);
      options(t);
      if (branch !== "" && !t.branches.some((b) => b.name === branch)) return show("");
      select.value = branch;
      load(before, stack);
    },
  };
}

// tagsByVersion maps "branch@version" to the names of its tags.
function tagsByVersion(t) {
  const at = new Map();
  for (const tag of t.tags) {
    const k = `${tag.branch || ""}@${tag.version}`;
    at.set(k, [...(at.get(k) || []), tag.name]);
  }
  return at;
}

function verifySection(id) {
  const out = h("div", { testid: "verify-result" });
  const run = button("Verify this table", async () => {
    run.disabled = true;
    fill(out, h("p", { class: "muted" }, "Reading every version's manifest…"));
    try {
      const r = await get("/api/table/verify", { id });
      fill(out,
        h("p", { testid: "verify-summary", data: { ok: r.ok } },
          badge(r.ok ? "OK" : "PROBLEMS", r.ok ? "ok" : "bad"), ` ${count(r.checked)} versions checked`,
          r.problems.length ? `, ${count(r.problems.length)} problems` : ", no problems"),
        r.problems.length ? table([
          { title: "Kind", class: "mono", cell: (p) => p.kind },
          { title: "Detail", cell: (p) => p.detail },
        ], r.problems, { testid: "verify-problems" }) : null);
    } catch (e) {
      fill(out, errorBox(e));
    } finally {
      run.disabled = false;
    }
  }, { testid: "verify-run" });
  return h("div", null,
    h("p", { class: "muted" }, "What ", h("code", null, "flightns admin verify"),
      " says of this table: its version records against its manifests in storage (reads every manifest)."),
    run, out);
}
