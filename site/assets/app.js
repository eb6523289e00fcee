/* Polyglav publisher: anchors, page map, index sorting/filtering (search: search.js).
 * Text from sessions is only ever inserted as text (textContent), never as HTML. */
(function () {
  "use strict";

  /* A count as the build writes it in prose: 20,000. */
  function num(n) { return Number(n).toLocaleString("en-US"); }

  function openAncestors(el) {
    for (var node = el; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") { node.open = true; }
    }
  }

  function pageMap() {
    var el = document.getElementById("page-map");
    if (!el) { return null; }
    try { return JSON.parse(el.textContent); } catch (e) { return null; }
  }

  /* A #turn-N or #turn-N.M on the wrong page of a split session goes to the right one. */
  function followHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (!id) { return; }
    var target = document.getElementById(id);
    if (target) { openAncestors(target); target.scrollIntoView(); return; }
    var map = pageMap();
    var m = /^turn-(\d+)/.exec(id);
    if (!map || !m) { return; }
    var n = parseInt(m[1], 10);
    for (var i = 0; i < map.pages.length; i++) {
      var p = map.pages[i];
      if (n >= p.first && n <= p.last && p.number !== map.current) {
        location.replace(p.url + "#" + encodeURIComponent(id).replace(/%2E/gi, "."));
        return;
      }
    }
  }
  window.addEventListener("hashchange", followHash);
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  });

  /* ---- index: sorting and filtering ---- */
  /* A large archive's index holds its most recent rows; every row is in the row shards
   * (rows/rows-*.js, listed in #index-shards), script files that call polyglavRows(i, rows):
   * they load from file:// as well as over HTTP. Loaded on the first sort, filter or
   * "Load all", they replace the table's rows; sorting and filtering then run on the data
   * and the table shows the first PAGE matches ("Show more" adds more). */
  /* failures: with the sessions below it; own: its own; note: the cell's title; sub: 1 for
   * a sub-session (hidden unless "show sub-sessions" is checked). */
  var F = { kind: 0, name: 1, url: 2, role: 3, created: 4, createdShort: 5, updated: 6,
    updatedShort: 7, turns: 8, tools: 9, failures: 10, status: 11, preview: 12, meta: 13,
    own: 14, note: 15, sub: 16 };
  var COLUMN_FIELD = { kind: F.kind, name: F.name, role: F.role, created: F.created,
    updated: F.updated, turns: F.turns, tools: F.tools, failures: F.failures, status: F.status };
  var PAGE = 500;

  function jsonOf(id) {
    var el = document.getElementById(id);
    if (!el) { return null; }
    try { return JSON.parse(el.textContent); } catch (e) { return null; }
  }

  function loadShards(config, done) {
    var shards = (config.shards || []).filter(function (s) {
      return typeof s === "string" && /^rows\/rows-\d+-of-\d+\.js$/.test(s);
    });
    var got = {}, left = shards.length, all = [];
    var root = document.body.dataset.root || "";
    window.polyglavRows = function (index, rows) {
      if (got[index] || !Array.isArray(rows)) { return; }
      got[index] = rows;
    };
    if (!left) { done([]); return; }
    shards.forEach(function (path, i) {
      var tag = document.createElement("script");
      tag.src = root + path;
      tag.onload = tag.onerror = function () {
        left--;
        if (!left) {
          Object.keys(got).sort().forEach(function (k) { all = all.concat(got[k]); });
          done(all);
        }
      };
      document.head.appendChild(tag);
    });
  }

  function cell(row, label, cls, value, content) {
    var td = document.createElement("td");
    td.dataset.label = label;
    td.dataset.value = String(value);
    if (cls) { td.className = cls; }
    if (content instanceof Node) { td.appendChild(content); } else { td.textContent = String(content); }
    row.appendChild(td);
    return td;
  }

  function rowElement(d, statuses) {
    var tr = document.createElement("tr");
    tr.dataset.kind = d[F.kind]; tr.dataset.role = d[F.role]; tr.dataset.failures = String(d[F.failures]);
    tr.dataset.status = d[F.status];
    if (d[F.sub]) { tr.dataset.sub = "1"; }
    cell(tr, "Kind", "c-kind", d[F.kind], d[F.kind]);
    var name = document.createDocumentFragment();
    var a = document.createElement("a"); a.href = (document.body.dataset.root || "") + d[F.url];
    var code = document.createElement("code"); code.textContent = d[F.name]; a.appendChild(code);
    name.appendChild(a);
    if (d[F.preview]) { var p = document.createElement("span"); p.className = "preview"; p.textContent = d[F.preview]; name.appendChild(p); }
    var meta = document.createElement("span"); meta.className = "row-meta"; meta.textContent = d[F.meta]; meta.title = d[F.meta]; name.appendChild(meta);
    cell(tr, "Session", "c-name", d[F.name], name);
    cell(tr, "Role", "c-role", d[F.role], d[F.role] || "-");
    cell(tr, "Created", "time c-created", d[F.created], d[F.createdShort]);
    cell(tr, "Updated", "time c-updated", d[F.updated], d[F.updatedShort]);
    cell(tr, "Turns", "num c-turns", d[F.turns], d[F.turns]);
    cell(tr, "Tool calls", "num c-tools", d[F.tools], d[F.tools]);
    var failures = d[F.failures], below = failures - d[F.own];
    var e = document.createDocumentFragment();
    if (failures) {
      var fa = document.createElement("a");
      fa.href = (document.body.dataset.root || "") + d[F.url] + (d[F.own] ? "#failures-h" : "#overview");
      fa.title = d[F.note]; fa.textContent = num(failures); e.appendChild(fa);
      if (below) {
        var b = document.createElement("span"); b.className = "below"; b.textContent = num(below) + " below";
        e.appendChild(document.createTextNode(" ")); e.appendChild(b);
      }
    } else { e.appendChild(document.createTextNode("0")); }
    cell(tr, "Failures", "num c-failures", failures, e);
    var badge = document.createElement("span");
    var status = d[F.status];
    badge.className = "badge " + (statuses.indexOf(status) >= 0 ? "st-" + status : "st-unknown");
    badge.textContent = status || "no status";
    cell(tr, "Last status", "c-status", status, badge);
    return tr;
  }

  function setupTable() {
    var table = document.getElementById("session-table");
    if (!table) { return; }
    var tbody = table.tBodies[0];
    var kind = document.getElementById("filter-kind");
    var role = document.getElementById("filter-role");
    var status = document.getElementById("filter-status");
    var outcomes = status ? (status.dataset.outcomes || "").split(" ") : [];
    var failed = document.getElementById("filter-failures");
    var subs = document.getElementById("filter-subs");
    var count = document.getElementById("filter-count");
    var loadAll = document.getElementById("load-all");
    var more = document.getElementById("show-more");
    var headers = table.tHead.rows[0].cells;
    /* The script filters sub-sessions itself (shown by the toggle, or when a kind or role
     * is picked); without scripts, the stylesheet hides them until the toggle is checked. */
    table.classList.add("scripted");
    var config = jsonOf("index-shards");
    var data = null, loading = false, sortKey = null, sortAsc = true, limit = PAGE;

    /* Role options are "=" + the role ("=" alone: no role), so "(none)" is not "all";
     * the status filter picks an outcome (a known last status, "empty" or "other"). */
    function outcomeOf(s) { return !s ? "empty" : (outcomes.indexOf(s) >= 0 ? s : "other"); }
    function keep(k, r, f, s, sub) {
      return (!kind.value || k === kind.value) && (!role.value || "=" + r === role.value) &&
        (!status || !status.value || outcomeOf(s) === status.value) && (!failed.checked || f > 0) &&
        (!subs || subs.checked || !sub || !!kind.value || !!role.value);
    }
    function compare(x, y, numeric) {
      return numeric ? (Number(x) - Number(y)) : (x < y ? -1 : x > y ? 1 : 0);
    }
    function renderData() {
      var rows = data.filter(function (d) { return keep(d[F.kind], d[F.role], d[F.failures], d[F.status], d[F.sub]); });
      if (sortKey !== null) {
        var f = COLUMN_FIELD[sortKey], numeric = f === F.turns || f === F.tools || f === F.failures;
        rows.sort(function (a, b) { var c = compare(a[f], b[f], numeric); return sortAsc ? c : -c; });
      }
      var frag = document.createDocumentFragment();
      var statuses = config.statuses || [];
      rows.slice(0, limit).forEach(function (d) { frag.appendChild(rowElement(d, statuses)); });
      tbody.textContent = "";
      tbody.appendChild(frag);
      count.textContent = num(Math.min(limit, rows.length)) + " of " + num(rows.length) + " matching shown (" + num(data.length) + " sessions)";
      if (more) { more.hidden = rows.length <= limit; }
    }
    function withAll(then) {
      if (data) { then(); return; }
      if (!config) { then(); return; }
      if (loading) { return; }
      loading = true;
      count.textContent = "Loading every session…";
      if (loadAll) { loadAll.disabled = true; }
      loadShards(config, function (rows) {
        data = rows;
        if (loadAll) { loadAll.hidden = true; }
        then();
      });
    }
    function applyFilters() {
      if (data) { limit = PAGE; renderData(); return; }
      var shown = 0;
      Array.prototype.forEach.call(tbody.rows, function (row) {
        var ok = keep(row.dataset.kind, row.dataset.role, parseInt(row.dataset.failures, 10), row.dataset.status, row.dataset.sub === "1");
        row.hidden = !ok;
        if (ok) { shown++; }
      });
      count.textContent = num(shown) + " of " + num(tbody.rows.length) + " shown";
    }
    [kind, role, status, failed, subs].forEach(function (el) {
      if (el) { el.addEventListener("change", function () { withAll(applyFilters); }); }
    });
    if (!config) { applyFilters(); }
    if (loadAll) { loadAll.addEventListener("click", function () { withAll(renderData); }); }
    if (more) { more.addEventListener("click", function () { limit += PAGE; renderData(); }); }
    Array.prototype.forEach.call(headers, function (th, col) {
      th.querySelector("button").addEventListener("click", function () {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        sortKey = th.dataset.key; sortAsc = asc;
        withAll(function () {
          if (data) { limit = PAGE; renderData(); return; }
          var numeric = th.dataset.type === "number";
          var rows = Array.prototype.slice.call(tbody.rows);
          rows.sort(function (a, b) {
            var c = compare(a.cells[col].dataset.value, b.cells[col].dataset.value, numeric);
            return asc ? c : -c;
          });
          rows.forEach(function (r) { tbody.appendChild(r); });
        });
      });
    });
  }

  function start() { followHash(); setupTable(); }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
