// The health page: readiness (and why not), and the state of Redis,
// object storage and the SQL gate, read again every 5 seconds.
import { h, fill, badge, table } from "./dom.js";
import { get, errorBox } from "./api.js";

export function healthPage(el, _id, ctx) {
  const body = h("div", null, h("p", { class: "muted" }, "Loading…"));
  const updated = h("span", { class: "muted", testid: "health-updated" });
  fill(el, h("div", { class: "page-head" }, h("h1", null, "Health"), updated), body);
  let timer = null;
  let stopped = false;
  ctx.onLeave(() => {
    stopped = true;
    clearTimeout(timer);
  });
  async function tick() {
    try {
      const r = await get("/api/health");
      if (stopped) return;
      const checks = [["Redis", r.redis], ["Object storage", r.storage], ["SQL", r.sql]];
      fill(body,
        h("p", { class: "ready", testid: "health-ready", data: { ready: r.ready } },
          badge(r.ready ? "READY" : "NOT READY", r.ready ? "ok" : "bad"),
          r.ready ? " flightns serves requests." : " flightns refuses requests until it is ready."),
        r.reasons.length ? h("ul", { class: "reasons", testid: "health-reasons" }, r.reasons.map((x) => h("li", null, x))) : null,
        table([
          { title: "Dependency", cell: ([name]) => name },
          { title: "State", cell: ([, c]) => badge(c.ok ? "ok" : "failing", c.ok ? "ok" : "bad") },
          { title: "Error", class: "mono", cell: ([, c]) => c.error || "" },
        ], checks, { testid: "health-checks", rowAttrs: ([name, c]) => ({ data: { check: name, ok: c.ok } }) }));
      fill(updated, `updated ${new Date().toLocaleTimeString()}`);
    } catch (e) {
      if (stopped) return;
      fill(body, errorBox(e));
    }
    if (!stopped) timer = setTimeout(tick, 5000);
  }
  tick();
}
