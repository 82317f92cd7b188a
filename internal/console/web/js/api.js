// The console's API (docs/console.md): every call carries the console's
// header, which a cross-site page cannot send, and the session cookie.
import { h } from "./dom.js";

// APIError is a failed call: the Lance Namespace error the API answered
// (type, code, message) and the HTTP status.
export class APIError extends Error {
  constructor(status, type, code, message) {
    super(message);
    this.status = status;
    this.type = type;
    this.code = code;
  }
}

// onUnauthenticated is called when a call answers 401 (the session
// ended): the app shows its login page.
let onUnauthenticated = () => {};
export function setUnauthenticated(fn) {
  onUnauthenticated = fn;
}

// request calls the API and returns the Response; it throws an APIError
// for an error status. query: an object of parameters; "id" is an array,
// sent as one repeated parameter per level. headers: more headers;
// signal: an AbortSignal that cancels the call (a stream's reading too).
export async function request(method, path, { query, body, headers, signal } = {}) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) {
    if (v === undefined || v === null || v === "") continue;
    for (const x of Array.isArray(v) ? v : [v]) params.append(k, String(x));
  }
  const qs = params.toString();
  const init = {
    method,
    credentials: "same-origin",
    cache: "no-store",
    headers: { ...headers, "X-Flightns-Console": "1" },
    signal,
  };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path + (qs ? "?" + qs : ""), init);
  } catch (e) {
    throw new APIError(0, "Unreachable", null, `the console did not answer: ${e.message}`);
  }
  if (resp.ok) return resp;
  let answer = null;
  try {
    answer = await resp.json();
  } catch {
    // not the API's JSON (a proxy's page, say)
  }
  // The console's errors are {type, code, message}; the REST surface's
  // (under /api/v1/) a message with the code beside it.
  const err = answer && answer.error;
  const e = err && typeof err === "object"
    ? new APIError(resp.status, err.type, err.code, err.message)
    : typeof err === "string"
      ? new APIError(resp.status, `HTTP ${resp.status}`, typeof answer.code === "number" ? answer.code : null, err)
    : new APIError(resp.status, `HTTP ${resp.status}`, null, resp.statusText || "the call failed");
  if (resp.status === 401 && path !== "/api/login" && path !== "/api/session") onUnauthenticated();
  throw e;
}

// api calls the API and decodes its JSON answer (null for 204).
export async function api(method, path, opts) {
  const resp = await request(method, path, opts);
  return resp.status === 204 ? null : resp.json();
}

export const get = (path, query) => api("GET", path, { query });
export const post = (path, body) => api("POST", path, { body });

// errorBox shows a failed call: its error type, code and message.
export function errorBox(e, testid = "error") {
  if (!(e instanceof APIError)) {
    return h("div", { class: "error", role: "alert", testid }, h("strong", null, "Error"), " ", String(e && e.message || e));
  }
  return h("div", { class: "error", role: "alert", testid, data: { type: e.type, code: e.code ?? "" } },
    h("strong", { class: "error-type" }, e.type),
    e.code !== null && e.code !== undefined ? h("span", { class: "error-code" }, `code ${e.code}`) : null,
    e.status ? h("span", { class: "error-code" }, `HTTP ${e.status}`) : null,
    h("div", { class: "error-message" }, e.message));
}
