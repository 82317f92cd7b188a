// DOM helpers. Every name, property and value reaches the page as text:
// elements are made with createElement and filled with text nodes, never
// parsed from HTML (the console's one rule against script injection).

// h makes an element. attrs: "class", "testid" (data-testid), "on<event>"
// (a listener), "data" (an object of data-* attributes), or any attribute
// set as given (never "style": the CSP forbids style attributes; set
// element.style from code). children: nodes, strings (as text), numbers,
// null/undefined/false (skipped) or arrays of those.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

// s makes an SVG element, as h does an HTML one.
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "testid") el.setAttribute("data-testid", v);
    else if (k === "data") for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = String(dv);
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "style") throw new Error("no style attributes (CSP): set element.style");
    else if (k === "value" && "value" in el) el.value = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// fill empties el and fills it with children.
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// hashOf is the route of a page and an object id: each level encoded on
// its own, so a name holding "/" or "#" stays one level.
export function hashOf(page, id = []) {
  return "#/" + [page, ...id.map(encodeURIComponent)].join("/");
}

// link is an anchor to a route.
export function link(page, id, text, attrs = {}) {
  return h("a", { href: hashOf(page, id), ...attrs }, text);
}

// idText shows an object id as its levels joined by the catalog's
// delimiter ("$"); the root namespace is "(root)".
export function idText(id) {
  return id.length ? id.join("$") : "(root)";
}

// table makes a readable table: columns are {title, cell(row) -> node or
// text, class}; empty says what to show without rows.
export function table(columns, rows, { testid, empty = "nothing", rowAttrs } = {}) {
  const head = h("tr", null, columns.map((c) => h("th", { class: c.class }, c.title)));
  const body = rows.length
    ? rows.map((r, i) => h("tr", rowAttrs ? rowAttrs(r, i) : null, columns.map((c) => h("td", { class: c.class }, c.cell(r, i)))))
    : [h("tr", null, h("td", { class: "empty", colspan: columns.length }, empty))];
  return h("table", { class: "grid", testid }, h("thead", null, head), h("tbody", null, body));
}

// kv is a two-column table of names and values.
export function kv(pairs, { testid, empty = "none" } = {}) {
  if (!pairs.length) return h("p", { class: "muted", testid }, empty);
  return h("table", { class: "kv", testid }, h("tbody", null,
    pairs.map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v)))));
}

// nullable shows a value, or a dim dash for null.
export function nullable(v, fmt = String) {
  return v === null || v === undefined ? h("span", { class: "null" }, "—") : fmt(v);
}

export function bytes(n) {
  if (typeof n !== "number") return String(n);
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(n < 10 ? 2 : 1) : String(n)) + " " + units[i];
}

export function count(n) {
  return typeof n === "number" ? n.toLocaleString("en-US") : String(n);
}

// when shows a timestamp (RFC 3339 text) as local date and time, the
// exact value as its title.
export function when(t) {
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  const pad = (x, n = 2) => String(x).padStart(n, "0");
  const text = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
  return h("time", { datetime: String(t), title: String(t) }, text);
}

// badge is a small label; kind colours it (ok, bad, tag, branch).
export function badge(text, kind = "", attrs = {}) {
  return h("span", { class: `badge ${kind}`.trim(), ...attrs }, text);
}

export function button(text, onclick, attrs = {}) {
  return h("button", { type: "button", onclick, ...attrs }, text);
}
