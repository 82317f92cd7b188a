// The change feed (docs/rest.md, "Change feed") as the live pages read it:
// GET /api/v1/changes, the REST surface's Server-Sent Events through the
// console's passthrough.
//
// It is read with fetch, not EventSource: every console call must carry
// the console's header (X-Flightns-Console, the check against cross-site
// requests), which EventSource cannot send. fetch sends it and the session
// cookie, as every other call does (api.js request), and the passthrough
// turns the cookie into REST's bearer. The stream is parsed here as
// EventSource would parse it, and resumed as EventSource would resume it:
// after an error or an end, it is opened again with Last-Event-ID, the
// last sequence the feed was read through, after a growing pause.
import { h } from "./dom.js";
import { request, APIError } from "./api.js";

// Codes of the Lance Namespace errors the feed can end with.
const invalidInput = 13;
const permissionDenied = 15;

const minDelayMs = 1000;
const maxDelayMs = 30000;

// follow reads the feed after sequence after (a number: the catalog
// sequence the page's state is at), narrowed by query ({table, delimiter}
// or {namespace, …}: the feed's query parameters), until the returned
// stop() is called. It calls:
//
//   onEvents(events, through)    for each id message: the events before
//                                it (CloudEvents objects, in the feed's
//                                order, of one or more whole sequences;
//                                possibly none: the feed moved on over
//                                what the caller does not see) and the
//                                sequence the feed is now read through
//                                (text: the id message's);
//   onStatus(state, error, wait) as the stream's state changes: "live",
//                                "retrying" (error: why; it opens again
//                                after wait ms), "stale" (error: the
//                                history after the last sequence read is
//                                no longer kept: draw the page again) or
//                                "refused" (error: the request was
//                                refused, the caller may not read the
//                                feed, say; it is not opened again).
//
// A 401 ends the session everywhere (api.js shows the login page).
export function follow({ after, query = {}, onEvents, onStatus = () => {} }) {
  let lastId = String(after);
  let stopped = false;
  let delay = minDelayMs;
  let retry = null;
  const ctl = new AbortController();

  const stop = () => {
    stopped = true;
    clearTimeout(retry);
    ctl.abort();
  };

  async function open() {
    if (stopped) return;
    let error = null;
    try {
      const resp = await request("GET", "/api/v1/changes", {
        query, signal: ctl.signal, headers: { "Last-Event-ID": lastId, Accept: "text/event-stream" },
      });
      if (!(resp.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
        throw new APIError(resp.status, "NotAStream", null, "the change feed did not answer a stream");
      }
      onStatus("live", null);
      error = await read(resp.body, {
        onEvents: (events, through) => {
          lastId = through; // as the server wrote it: a uint64 may not fit a Number
          delay = minDelayMs; // it works again
          onEvents(events, through);
        },
      });
    } catch (e) {
      if (stopped) return;
      error = e instanceof APIError ? e : new APIError(0, "Unreachable", null, `the change feed broke off: ${e.message}`);
    }
    if (stopped) return;
    if (error && error.status === 401) return stop(); // the login page is shown
    if (error && error.status === 0 && error.code === invalidInput) {
      // The stream began and ended so: the history after lastId is no
      // longer kept.
      onStatus("stale", error);
      return stop();
    }
    if (error && (error.code === permissionDenied || (error.status >= 400 && error.status < 500 && error.status !== 429))) {
      // Refused as asked: asking again would be refused again.
      onStatus("refused", error);
      return stop();
    }
    // The server ended the stream (it is draining, say) or it broke: open
    // it again after the last sequence read.
    const wait = delay;
    delay = Math.min(delay * 2, maxDelayMs);
    onStatus("retrying", error || new APIError(0, "Ended", null, "the server ended the change feed"), wait);
    retry = setTimeout(open, wait);
  }

  open();
  return stop;
}

// read parses a text/event-stream body as EventSource does (fields
// event, data, id; a blank line ends a message), hands the events read
// to onEvents when an id message comes, and returns the
// stream's last error: an "error" event's {error, code} as an APIError,
// or null when the stream simply ended.
async function read(body, { onEvents }) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let msg = { event: "", data: [], id: null };
  let events = [];
  let error = null;

  const dispatch = () => {
    const m = msg;
    msg = { event: "", data: [], id: null };
    if (m.data.length) {
      const data = m.data.join("\n");
      if (m.event === "error") {
        let e = {};
        try {
          e = JSON.parse(data);
        } catch {
          // not the server's JSON
        }
        error = new APIError(0, "FeedError", typeof e.code === "number" ? e.code : null, String(e.error || data));
        return;
      }
      try {
        events.push(JSON.parse(data));
      } catch {
        console.warn("change feed: an event that is not JSON:", data);
      }
    }
    if (m.id !== null && /^[0-9]+$/.test(m.id)) {
      const seq = events;
      events = [];
      onEvents(seq, m.id);
    }
  };

  for (;;) {
    const { value, done } = await reader.read();
    buf += done ? decoder.decode() : decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
      if (buf[nl] === "\r" && nl === buf.length - 1 && !done) break; // a \r\n cut in two
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        dispatch();
        continue;
      }
      if (line.startsWith(":")) continue; // a comment
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") msg.event = value;
      else if (field === "data") msg.data.push(value);
      else if (field === "id" && !value.includes("\0")) msg.id = value;
    }
    if (done) return error;
  }
}

// liveStatus is a small label of a followed feed's state, for the head of
// a live page (data-state: connecting, live, retrying, stale, refused),
// and the onStatus that keeps it.
export function liveStatus() {
  const el = h("span", { class: "badge live", testid: "live-status", data: { state: "connecting" }, title: "the change feed" },
    "connecting…");
  const set = (state, text, title) => {
    el.dataset.state = state;
    el.className = `badge live ${state === "live" ? "ok" : state === "connecting" ? "" : "bad"}`.trim();
    el.textContent = text;
    el.title = title;
  };
  const onStatus = (state, error, wait) => {
    if (state === "live") set("live", "live", "following the change feed");
    else if (state === "retrying") set("retrying", `reconnecting in ${Math.round(wait / 1000)} s`, error.message);
    else set(state, state === "stale" ? "out of date" : "not live", error.message);
  };
  return { el, onStatus };
}
