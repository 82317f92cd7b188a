// The flightns web console: a page per hash route, drawn from the JSON
// API of docs/console.md.
//
//   #/ns/<id…>      the namespace tree and a namespace (the root: #/ns),
//                   with the tables under it that need a compaction
//   #/table/<id…>   a table: maintenance, schema, versions, branches and
//                   tags, verify; drawn again as its changes arrive
//   #/activity      the catalog's changes as they arrive, and commit
//                   activity as charts
//   (the live pages follow the change feed, js/changes.js: no timers)
//   #/sql           the SQL console
//   #/plan/<id…>    the plan_scan explorer (of a partitioned table)
//   #/health        the server's health
//
// Each level of an id is encoded on its own (encodeURIComponent). Names
// and values are written as text, never as HTML (js/dom.js).
import { h, fill } from "./js/dom.js";
import { get, post, errorBox, setUnauthenticated } from "./js/api.js";
import { namespacePage, tablePage } from "./js/catalog.js";
import { activityPage } from "./js/activity.js";
import { sqlPage } from "./js/sql.js";
import { planPage } from "./js/plan.js";
import { healthPage } from "./js/health.js";

const pages = {
  ns: { title: "Catalog", nav: "ns", draw: namespacePage },
  table: { title: "Table", nav: "ns", draw: tablePage },
  activity: { title: "Activity", nav: "activity", draw: activityPage },
  sql: { title: "SQL", nav: "sql", draw: sqlPage },
  plan: { title: "Plan", nav: "plan", draw: planPage },
  health: { title: "Health", nav: "health", draw: healthPage },
};

const view = document.getElementById("view");
const who = document.getElementById("who");
const logoutButton = document.getElementById("logout");

// session is GET /api/session's answer once logged in; leaving holds what
// the current page stops when another is drawn (timers, charts, change
// feeds).
let session = null;
let leaving = [];

function leave() {
  for (const fn of leaving) {
    try {
      fn();
    } catch (e) {
      console.warn("leaving a page:", e);
    }
  }
  leaving = [];
}

// route draws the page of location.hash.
function route() {
  if (!session) return;
  leave();
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter((p) => p !== "");
  const name = parts.length ? parts[0] : "ns";
  const page = pages[name];
  const section = h("section", { class: "page", testid: `page-${name}` });
  fill(view, section);
  for (const a of document.querySelectorAll("nav a[data-nav]")) {
    a.classList.toggle("active", page !== undefined && a.dataset.nav === page.nav);
  }
  if (!page) {
    document.title = "flightns";
    fill(section, h("h1", null, "No such page"), h("p", null, h("a", { href: "#/ns" }, "Back to the catalog")));
    return;
  }
  let id;
  try {
    id = parts.slice(1).map(decodeURIComponent);
  } catch {
    fill(section, h("h1", null, "Bad address"), h("p", null, "The address's object id is not URI-encoded."));
    return;
  }
  document.title = `${page.title} · flightns`;
  // reload draws the page again from scratch (a live page whose change
  // feed no longer reaches back to its state).
  const ctx = { onLeave: (fn) => leaving.push(fn), session, reload: route };
  Promise.resolve()
    .then(() => page.draw(section, id, ctx))
    .catch((e) => fill(section, errorBox(e)));
}

function showWho() {
  document.body.classList.remove("logged-out");
  if (session.auth) {
    fill(who, h("span", { class: "principal", testid: "principal" }, session.principal),
      h("span", { class: "role" }, session.role));
    logoutButton.hidden = false;
  } else {
    fill(who, h("span", { class: "principal muted", testid: "principal", title: "no --auth-file or OIDC: the console is open" },
      "open (no authentication)"));
    logoutButton.hidden = true;
  }
}

// login draws the login page: a user and password, or a token.
function login(message) {
  leave();
  session = null;
  document.body.classList.add("logged-out");
  fill(who);
  logoutButton.hidden = true;
  document.title = "Log in · flightns";
  const status = h("div", { class: "login-status", testid: "login-status" }, message || null);
  const user = h("input", { name: "user", autocomplete: "username", testid: "login-user", required: true });
  const password = h("input", { name: "password", type: "password", autocomplete: "current-password", testid: "login-password" });
  const token = h("input", { name: "token", type: "password", autocomplete: "off", testid: "login-token", class: "mono" });
  const withPassword = h("div", { class: "login-fields" },
    h("label", null, "User", user), h("label", null, "Password", password));
  const withToken = h("div", { class: "login-fields", hidden: true },
    h("label", null, "Token", token));
  let mode = "password";
  const tab = (m, text) => h("button", { type: "button", class: m === mode ? "tab active" : "tab", testid: `login-mode-${m}`,
    onclick: (ev) => {
      mode = m;
      for (const b of ev.target.parentNode.children) b.classList.toggle("active", b === ev.target);
      withPassword.hidden = m !== "password";
      withToken.hidden = m !== "token";
      user.required = m === "password";
      token.required = m === "token";
      (m === "password" ? user : token).focus();
    } }, text);
  const submit = h("button", { type: "submit", class: "primary", testid: "login-submit" }, "Log in");
  const form = h("form", { class: "login", testid: "login-form", onsubmit: async (ev) => {
    ev.preventDefault();
    submit.disabled = true;
    fill(status);
    try {
      const body = mode === "password" ? { user: user.value, password: password.value } : { token: token.value };
      session = await post("/api/login", body);
      password.value = "";
      token.value = "";
      showWho();
      route();
    } catch (e) {
      fill(status, errorBox(e, "login-error"));
    } finally {
      submit.disabled = false;
    }
  } },
  h("h1", null, "flightns"),
  h("p", { class: "muted" }, "Log in to the catalog's console."),
  h("div", { class: "tabs" }, tab("password", "User and password"), tab("token", "Token")),
  withPassword, withToken, submit, status);
  fill(view, h("section", { class: "page login-page", testid: "page-login" }, form));
  user.focus();
}

logoutButton.addEventListener("click", async () => {
  try {
    await post("/api/logout");
  } catch (e) {
    // 401: the session had ended already. Otherwise it was not ended
    // (its cookie is kept): say so, and stay.
    if (e.status !== 401) {
      console.warn("logout:", e);
      window.alert(`Not logged out: ${e.message}`);
      return;
    }
  }
  login("Logged out.");
});

setUnauthenticated(() => login("Your session ended: log in again."));
window.addEventListener("hashchange", route);

async function start() {
  try {
    session = await get("/api/session");
  } catch (e) {
    if (e.status === 401) return login();
    fill(view, h("section", { class: "page" }, h("h1", null, "The console cannot start"), errorBox(e),
      h("p", null, h("button", { type: "button", onclick: () => start() }, "Try again"))));
    return;
  }
  showWho();
  if (!location.hash) history.replaceState(null, "", "#/ns");
  route();
}

start();
