// The on-call page: incidents grouped by root cause, one incident in full, the rules; live through Server-Sent
// Events (api/v1/events). Everything from the API is put into the page as text (textContent and text nodes): log
// lines are hostile input, never parsed as markup. Paths are relative, so the page works behind a proxy under any
// prefix.
"use strict";
(() => {
  const PAGE_SIZE = 100;
  const state = {
    change: null,        // the last change marker rendered
    status: null,        // the last status, and when it came (for "last line M s ago")
    statusAt: 0,
    rules: [],
    events: null,        // the EventSource
    seen: new Map(),     // incident id -> revisions this page has seen [{revision, status, severity, count, at}]
    loading: false,
    again: false,
  };
  window.faultlinePage = { loadedAt: Date.now() };  // survives live updates; gone after a reload

  const $ = (id) => document.getElementById(id);

  // el("a", {href: "#x", class: "c"}, "text", child): strings become text nodes.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) e.append(c);
    return e;
  }

  // ---- times ----------------------------------------------------------------------------------------------------
  function ago(seconds) {
    if (seconds < 5) return "just now";
    if (seconds < 90) return Math.round(seconds) + " s ago";
    if (seconds < 90 * 60) return Math.round(seconds / 60) + " min ago";
    if (seconds < 36 * 3600) return Math.round(seconds / 3600) + " h ago";
    return Math.round(seconds / 86400) + " d ago";
  }
  function absolute(iso) {
    const d = new Date(iso);
    if (isNaN(d)) return iso || "";
    const p = (n) => String(n).padStart(2, "0");
    return d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate()) + " " + p(d.getHours()) + ":" +
      p(d.getMinutes()) + ":" + p(d.getSeconds());
  }
  // A <time> that says "5 min ago" and shows the local and UTC time on hover; refreshed every second.
  function when(iso) {
    return el("time", { datetime: iso, title: absolute(iso) + " local · " + iso, class: "ago" }, relative(iso));
  }
  function relative(iso) {
    const t = Date.parse(iso);
    return isNaN(t) ? (iso || "") : ago((Date.now() - t) / 1000);
  }
  function refreshTimes() {
    for (const t of document.querySelectorAll("time.ago")) t.textContent = relative(t.getAttribute("datetime"));
    renderReading();
  }

  // ---- API ------------------------------------------------------------------------------------------------------
  class Unauthorized extends Error {}
  async function api(path) {
    const r = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (r.status === 401) throw new Unauthorized("401");
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || ("HTTP " + r.status));
    return body;
  }
  function failed(err) {
    if (err instanceof Unauthorized) return showLogin();
    const view = visibleView();
    if (view) view.prepend(el("p", { class: "error" }, "Could not load: " + err.message));
  }

  // ---- routing: #  #?filters  #incident/<id>  #rules -----------------------------------------------------------
  function route() {
    const h = location.hash.slice(1);
    if (h.startsWith("incident/")) return ["incident", decodeURIComponent(h.slice(9)), null];
    if (h === "rules") return ["rules", null, null];
    return ["incidents", null, new URLSearchParams(h.startsWith("?") ? h.slice(1) : "")];
  }
  const VIEWS = ["login-view", "incidents-view", "incident-view", "rules-view"];
  function show(id) {
    for (const v of VIEWS) $(v).hidden = v !== id;
    $("nav-incidents").classList.toggle("active", id === "incidents-view" || id === "incident-view");
    $("nav-rules").classList.toggle("active", id === "rules-view");
  }
  function visibleView() { return VIEWS.map($).find((v) => !v.hidden); }

  async function render() {
    if (state.loading) { state.again = true; return; }
    state.loading = true;
    try {
      const [view, id, params] = route();
      if (view === "incident") await renderIncident(id);
      else if (view === "rules") await renderRules();
      else await renderList(params);
      document.body.dataset.change = String(state.change);
      document.body.dataset.rendered = String((Number(document.body.dataset.rendered) || 0) + 1);
    } catch (err) {
      failed(err);
    } finally {
      state.loading = false;
      if (state.again) { state.again = false; render(); }
    }
  }

  // ---- the list ---------------------------------------------------------------------------------------------------
  const FILTERS = ["severity", "status", "rule", "namespace", "pod", "node", "q"];
  function fillFilters(params) {
    const form = $("filters");
    for (const name of FILTERS) if (document.activeElement !== form.elements[name]) form.elements[name].value = params.get(name) || "";
  }
  function filtersChanged() {
    const form = $("filters");
    const p = new URLSearchParams();
    for (const name of FILTERS) if (form.elements[name].value) p.set(name, form.elements[name].value.trim());
    const hash = p.toString() ? "#?" + p.toString() : "#";
    if (location.hash !== hash && !(hash === "#" && location.hash === "")) history.replaceState(null, "", hash);
    render();
  }

  function remember(inc) {
    const list = state.seen.get(inc.id) || [];
    const last = list[list.length - 1];
    if (!last || last.revision !== inc.revision)
      list.push({ revision: inc.revision, status: inc.status, severity: inc.severity, count: inc.count, at: new Date().toISOString() });
    state.seen.set(inc.id, list);
  }
  const hits = (inc) => (inc.evidence || []).filter((e) => e.event);
  const causeId = (inc) => (inc.caused_by ? inc.caused_by.id : null);

  function badges(inc) {
    return [el("span", { class: "badge sev-" + inc.severity }, inc.severity),
      el("span", { class: "badge st-" + inc.status }, inc.status)];
  }
  function card(inc, symptom) {
    const decisive = hits(inc);
    const last = decisive[decisive.length - 1];
    return el("article", { class: "card " + (symptom ? "symptom " : "") + "sev-" + inc.severity + " st-" + inc.status, "data-id": inc.id },
      el("div", { class: "head" }, badges(inc),
        el("a", { class: "title", href: "#incident/" + encodeURIComponent(inc.id) }, inc.title)),
      el("div", { class: "meta" },
        el("span", { class: "rule" }, inc.rule), " · ", el("span", { class: "stream" }, inc.stream), " · ",
        "first ", when(inc.first_seen), " · last ", when(inc.last_seen), " · ×" + inc.count),
      last ? el("div", { class: "decisive" }, el("span", { class: "mark" }, "▶ "), last.text) : null,
      !symptom && inc.caused_by ? el("div", { class: "cause" }, "caused by ",
        el("a", { href: "#incident/" + encodeURIComponent(inc.caused_by.id) }, inc.caused_by.rule || inc.caused_by.id)) : null);
  }

  async function renderList(params) {
    show("incidents-view");
    fillFilters(params);
    const offset = Math.max(0, Number(params.get("offset")) || 0);
    const q = new URLSearchParams();
    for (const name of FILTERS) if (params.get(name)) q.set(name, params.get(name));
    q.set("order", "cause");
    q.set("limit", String(PAGE_SIZE));
    q.set("offset", String(offset));
    const data = await api("api/v1/incidents?" + q.toString());
    const list = $("list");
    const groups = [];
    for (const inc of data.incidents) {
      remember(inc);
      const root = groups[groups.length - 1];
      if (causeId(inc) && root && root.inc.id === causeId(inc)) root.symptoms.push(inc);
      else groups.push({ inc, symptoms: [] });
    }
    const nodes = groups.map((g) => {
      const c = card(g.inc, false);
      if (g.symptoms.length) {
        c.append(el("div", { class: "symptoms" },
          el("div", { class: "symptoms-head" }, "explains " + g.symptoms.length + " symptom" + (g.symptoms.length > 1 ? "s" : "")),
          g.symptoms.map((s) => card(s, true))));
      }
      return c;
    });
    if (!nodes.length) {
      const filtered = FILTERS.some((n) => params.get(n));
      nodes.push(el("p", { class: "empty" }, filtered ? "No incident matches these filters." :
        "No incidents. The header says what faultline is reading."));
    }
    list.replaceChildren(...nodes);
    $("totals").replaceChildren(
      el("strong", {}, String(data.total)), " incident" + (data.total === 1 ? "" : "s") + " · ",
      el("span", { class: data.firing ? "firing-count" : "" }, data.firing + " firing"),
      data.total ? " · showing " + (data.total ? data.offset + 1 : 0) + "–" + (data.offset + data.count) + " of " + data.total : "");
    $("page-info").textContent = data.total > PAGE_SIZE ? "page " + (Math.floor(offset / PAGE_SIZE) + 1) + " of " + Math.ceil(data.total / PAGE_SIZE) : "";
    $("prev").disabled = offset === 0;
    $("next").disabled = data.offset + data.count >= data.total;
    $("prev").dataset.offset = String(Math.max(0, offset - PAGE_SIZE));
    $("next").dataset.offset = String(offset + PAGE_SIZE);
  }
  function page(button) {
    const [, , params] = route();
    const o = Number(button.dataset.offset) || 0;
    if (o) params.set("offset", String(o)); else params.delete("offset");
    location.hash = "?" + params.toString();
    window.scrollTo(0, 0);
  }

  // ---- one incident -----------------------------------------------------------------------------------------------
  const quote = (s) => /^[\w@%+=:,./-]+$/.test(s) ? s : "'" + String(s).replace(/'/g, "'\\''") + "'";
  function reproduction(inc) {
    const labels = inc.stream_labels || {};
    const file = (hits(inc)[0] || {}).stream || inc.stream;
    if (labels.namespace && labels.pod)
      return "kubectl logs -n " + quote(labels.namespace) + " " + quote(labels.pod) +
        (labels.container ? " -c " + quote(labels.container) : "") + " | faultline scan --explain -";
    return "faultline scan --explain " + quote(file);
  }
  async function copy(text, button) {
    let ok = false;
    try { await navigator.clipboard.writeText(text); ok = true; } catch (_) {
      const t = el("textarea", { class: "offscreen" }); t.value = text; document.body.append(t); t.select();
      try { ok = document.execCommand("copy"); } catch (_) { ok = false; }
      t.remove();
    }
    const label = button.textContent;
    button.textContent = ok ? "copied" : "select and copy by hand";
    setTimeout(() => { button.textContent = label; }, 1500);
  }
  function copyButton(label, text, cls) {
    const b = el("button", { type: "button", class: "copy " + cls, "data-copy": text }, label);
    b.addEventListener("click", () => copy(text, b));
    return b;
  }
  function link(url) {
    return /^https?:\/\//i.test(url) ? el("a", { href: url, rel: "noopener noreferrer", target: "_blank" }, url) : el("span", {}, url);
  }
  const row = (k, ...v) => el("tr", {}, el("th", {}, k), el("td", {}, ...v));

  // Evidence: every decisive line shown and marked; runs of more than three context lines folded.
  function evidence(inc) {
    const lines = inc.evidence || [];
    const box = el("div", { class: "evidence" });
    const line = (e) => el("div", { class: "ev" + (e.event ? " hit" : "") },
      el("span", { class: "gutter" }, e.event ? "▶" : " ", String(e.line || "")),
      el("code", {}, e.text, e.truncated ? " …(cut)" : ""),
      e.event ? el("span", { class: "event" }, e.event) : null);
    let run = [];
    const flush = () => {
      if (run.length > 3) box.append(el("details", { class: "context" }, el("summary", {}, run.length + " context lines"), run.map(line)));
      else run.forEach((e) => box.append(line(e)));
      run = [];
    };
    for (const e of lines) { if (e.event) { flush(); box.append(line(e)); } else run.push(e); }
    flush();
    return box;
  }
  // The revisions the store kept (the API's "history": the first, every escalation and resolution, the last count
  // updates), so a page opened afterwards shows how it went; revisions this page saw arrive fill in what was left out.
  function timeline(inc) {
    const kept = ((inc.history || {}).revisions || []).slice();
    for (const r of state.seen.get(inc.id) || [])
      if (!kept.some((k) => k.revision === r.revision)) kept.push(Object.assign({ change: "seen", last_seen: r.at }, r));
    if (!kept.some((k) => k.revision === inc.revision))
      kept.push({ revision: inc.revision, change: "count", status: inc.status, severity: inc.severity, count: inc.count, last_seen: inc.last_seen });
    kept.sort((a, b) => a.revision - b.revision);
    const items = [];
    let prev = null;
    for (const r of kept) {
      let what;
      if (!prev && r.revision === 1) what = "first seen: " + r.severity + ", count " + r.count;
      else if (prev && r.severity !== prev.severity) what = (sevRank(r.severity) > sevRank(prev.severity) ? "escalated " : "lowered ") + prev.severity + " → " + r.severity;
      else if (prev && r.status !== prev.status) what = r.status === "resolved" ? "resolved" : "firing again";
      else if (!prev) what = "first kept: " + r.severity + ", " + r.status;
      else what = "count " + r.count;
      if (prev && r.count !== prev.count && !what.startsWith("count")) what += ", count " + r.count;
      items.push({ t: r.last_seen, what: "revision " + r.revision + " · " + what, change: r.change, revision: r.revision });
      prev = r;
    }
    if (!kept.length || kept[0].revision !== 1) items.unshift({ t: inc.first_seen, what: "first seen (revision 1)", change: "first", revision: 1 });
    const omitted = (inc.history || {}).omitted || 0;
    return el("ol", { class: "timeline" }, items.map((i) => el("li", { "data-change": i.change, "data-revision": String(i.revision) },
      when(i.t), " ", el("span", {}, i.what))),
      omitted ? el("li", { class: "omitted" }, omitted + " revision" + (omitted === 1 ? "" : "s") + " not kept (count updates first)") : null);
  }
  const sevRank = (s) => ({ info: 0, warning: 1, critical: 2 })[s] || 0;

  async function renderIncident(id) {
    const inc = await api("api/v1/incidents/" + encodeURIComponent(id));
    remember(inc);
    const explained = await api("api/v1/incidents?limit=1000&caused_by=" + encodeURIComponent(id));
    const view = $("incident-view");
    show("incident-view");
    const fields = Object.entries(inc.fields || {}), labels = Object.entries(Object.assign({}, inc.stream_labels, inc.labels));
    // Through el(): a part the incident lacks (null) is left out, never written as the text "null".
    view.replaceChildren(...el("div", {},
      el("p", {}, el("a", { href: "#", class: "back" }, "← all incidents")),
      el("h1", { class: "incident-title" }, inc.title),
      el("div", { class: "head" }, badges(inc), el("span", { class: "badge" }, "revision " + inc.revision),
        copyButton("copy id", inc.id, "copy-id"), copyButton("copy scan --explain", reproduction(inc), "copy-repro")),
      inc.summary ? el("p", { class: "summary" }, inc.summary) : null,
      inc.remediation ? el("div", { class: "remediation" }, el("h2", {}, "What to do"), el("p", {}, inc.remediation)) : null,
      el("h2", {}, "Evidence"), evidence(inc),
      el("h2", {}, "Details"),
      el("table", { class: "fields" }, el("tbody", {},
        row("id", el("code", {}, inc.id)), row("rule", el("a", { href: "#?rule=" + encodeURIComponent(inc.rule) }, inc.rule)),
        row("stream", inc.stream), row("first seen", when(inc.first_seen), " · " + absolute(inc.first_seen)),
        row("last seen", when(inc.last_seen), " · " + absolute(inc.last_seen)), row("count", String(inc.count)),
        inc.caused_by ? row("caused by", el("a", { href: "#incident/" + encodeURIComponent(inc.caused_by.id) }, inc.caused_by.rule + " " + inc.caused_by.id)) : null,
        explained.total ? row("explains", explained.incidents.map((s) => el("div", {},
          el("a", { href: "#incident/" + encodeURIComponent(s.id) }, s.title), " (" + s.rule + ")"))) : null,
        inc.fingerprint ? row("fingerprint", el("code", {}, inc.fingerprint)) : null,
        inc.template ? row("template", el("code", {}, inc.template)) : null,
        fields.map(([k, v]) => row(k, el("code", {}, v))),
        labels.map(([k, v]) => row("label " + k, v)))),
      (inc.references || []).length ? el("div", {}, el("h2", {}, "References"),
        el("ul", { class: "refs" }, inc.references.map((r, i) => el("li", {}, i === 0 ? "runbook: " : "", link(r))))) : null,
      el("h2", {}, "Timeline"), timeline(inc),
      el("p", { class: "raw" }, el("a", { href: "api/v1/incidents/" + encodeURIComponent(inc.id) }, "JSON"))).childNodes);
  }

  // ---- rules ------------------------------------------------------------------------------------------------------
  async function loadRules() {
    const data = await api("api/v1/rules");
    state.rules = data.rules;
    const select = $("filters").elements.rule, current = select.value;
    select.replaceChildren(el("option", { value: "" }, "any rule"), ...state.rules.map((r) => el("option", { value: r.id }, r.id)));
    select.value = current;
  }
  async function renderRules() {
    await loadRules();
    show("rules-view");
    $("rules-view").replaceChildren(el("h1", {}, state.rules.length + " rules"),
      el("div", { class: "rules" }, state.rules.map((r) => el("article", { class: "card rule-card sev-" + r.severity, "data-rule": r.id },
        el("div", { class: "head" }, el("span", { class: "badge sev-" + r.severity }, r.severity),
          el("a", { class: "title", href: "#?rule=" + encodeURIComponent(r.id) }, r.id)),
        el("div", {}, r.title),
        r.summary ? el("p", { class: "meta" }, r.summary) : null,
        el("div", { class: "meta" }, r.matches + " matching line" + (r.matches === 1 ? "" : "s") + " · " + r.incidents +
          " incident" + (r.incidents === 1 ? "" : "s") + " (" + r.firing + " firing)"),
        (r.references || []).length ? el("div", { class: "meta" }, link(r.references[0])) : null))));
  }

  // ---- live status --------------------------------------------------------------------------------------------------
  function renderReading() {
    const s = state.status;
    if (!s) return;
    const r = s.reading;
    let text = "reading " + r.files + " file" + (r.files === 1 ? "" : "s") + ", ";
    if (r.last_line_age_seconds === null) text += "no line read yet";
    else text += "last line " + ago(r.last_line_age_seconds + (Date.now() - state.statusAt) / 1000);
    if (!s.ready) text += " · not ready: " + (s.not_ready || "");
    $("reading").textContent = text;
    $("reading").title = r.lines_read + " lines read since start · faultline " + s.version;
  }
  function onStatus(s) {
    const before = state.status;
    state.status = s;
    state.statusAt = Date.now();
    renderReading();
    document.title = (s.incidents.firing ? "(" + s.incidents.firing + ") " : "") + "faultline";
    if (s.change !== state.change) { state.change = s.change; render(); }
    else if (route()[0] === "rules" && before && before.reading.lines_read !== s.reading.lines_read) render();  // match counts
  }
  function live() {
    if (state.events) state.events.close();
    if (!window.EventSource) { setInterval(() => api("api/v1/status").then(onStatus, failed), 5000); return; }
    const es = new EventSource("api/v1/events");
    state.events = es;
    es.addEventListener("status", (e) => onStatus(JSON.parse(e.data)));
    es.onopen = () => { $("live").textContent = "● live"; $("live").className = "live on"; };
    es.onerror = () => {
      $("live").textContent = "○ reconnecting"; $("live").className = "live";
      // A session that ended (token changed, cookie expired) shows the login form instead of retrying forever.
      fetch("api/v1/session", { credentials: "same-origin" }).then((r) => r.json()).then((s) => {
        if (!s.authenticated) showLogin();
      }, () => {});
    };
  }

  // ---- login --------------------------------------------------------------------------------------------------------
  function showLogin() {
    if (state.events) { state.events.close(); state.events = null; }
    $("logout").hidden = true;
    $("reading").textContent = "log in to see incidents";
    show("login-view");
    $("login-token").focus();
  }
  async function submitLogin(e) {
    e.preventDefault();
    const body = new URLSearchParams({ token: $("login-token").value });
    const r = await fetch("login", { method: "POST", body, credentials: "same-origin" });
    if (r.status === 204) {
      $("login-token").value = "";
      $("login-error").hidden = true;
      start(true);
    } else {
      const err = $("login-error");
      err.hidden = false;
      err.textContent = r.status === 401 ? "That token is not the one configured." : "Login failed (HTTP " + r.status + ").";
    }
  }
  async function logout() {
    await fetch("logout", { method: "POST", credentials: "same-origin" });
    showLogin();
  }

  async function start(withSession) {
    $("logout").hidden = !withSession;
    state.change = null;
    await loadRules().catch(failed);
    live();
    render();
  }

  document.addEventListener("DOMContentLoaded", async () => {
    let textTimer = null;
    $("filters").addEventListener("change", filtersChanged);
    $("filters").addEventListener("input", () => { clearTimeout(textTimer); textTimer = setTimeout(filtersChanged, 300); });
    $("filters").addEventListener("submit", (e) => { e.preventDefault(); filtersChanged(); });
    $("filters").addEventListener("reset", () => setTimeout(filtersChanged, 0));
    $("prev").addEventListener("click", () => page($("prev")));
    $("next").addEventListener("click", () => page($("next")));
    $("login-form").addEventListener("submit", submitLogin);
    $("logout").addEventListener("click", logout);
    window.addEventListener("hashchange", () => { render(); window.scrollTo(0, 0); });
    setInterval(refreshTimes, 1000);
    try {
      const s = await (await fetch("api/v1/session", { credentials: "same-origin" })).json();
      if (s.token_required && !s.authenticated) showLogin();
      else start(s.token_required);
    } catch (err) {
      failed(err);
    }
  });
})();
