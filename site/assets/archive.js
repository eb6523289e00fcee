/* Polyglav publisher: filters of the archive-wide tables (Errors, Decisions).
 * Each select[data-filter] matches the rows' data-<filter> ("=" + value; "" is all).
 * A large archive's page holds its first rows; every row is in the row shards
 * (events/<page>-*.js, listed in #event-shards), script files that call
 * polyglavEvents(page, i, rows), each row [sort key, kind, role, value, row HTML] (HTML the
 * build rendered, escaped, from the same template as the page's rows). Script tags, not
 * fetch: they load from file:// as over HTTP. A filter or "Load all" loads every shard,
 * then shows the matching rows in the page's order, PAGE at a time. */
(function () {
  "use strict";
  var PAGE = 500;
  /* A count as the build writes it in prose: 20,000. */
  function num(n) { return Number(n).toLocaleString("en-US"); }
  function configOf() {
    var el = document.getElementById("event-shards");
    if (!el) { return null; }
    try { return JSON.parse(el.textContent); } catch (e) { return null; }
  }
  function loadShards(config, done) {
    var shards = (config.shards || []).filter(function (s) {
      return typeof s === "string" && /^events\/[a-z]+-\d+-of-\d+\.js$/.test(s);
    });
    var got = {}, left = shards.length, root = document.body.getAttribute("data-root") || "";
    window.polyglavEvents = function (page, index, rows) {
      if (page === config.page && Array.isArray(rows)) { got[index] = rows; }
    };
    if (!left) { done([]); return; }
    shards.forEach(function (path) {
      var tag = document.createElement("script");
      tag.src = root + path;
      tag.onload = tag.onerror = function () {
        left--;
        if (left === 0) {
          var all = [];
          Object.keys(got).forEach(function (k) { all = all.concat(got[k]); });
          all.sort(function (a, b) { return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0; });
          done(all);
        }
      };
      document.head.appendChild(tag);
    });
  }
  function setup() {
    var table = document.getElementById("event-table");
    if (!table) { return; }
    var tbody = table.tBodies[0];
    var selects = document.querySelectorAll("select[data-filter]");
    var count = document.querySelector(".filter-count");
    var config = configOf();
    var loadAll = document.getElementById("load-all");
    var more = document.getElementById("show-more");
    var data = null, loading = false, waiting = [], limit = PAGE;
    function wanted(kind, role, value) {
      var got = { kind: kind, role: role, value: value };
      return Array.prototype.every.call(selects, function (s) {
        return !s.value || "=" + got[s.dataset.filter] === s.value;
      });
    }
    function applyStatic() {
      var shown = 0;
      Array.prototype.forEach.call(tbody.rows, function (row) {
        var ok = wanted(row.getAttribute("data-kind"), row.getAttribute("data-role"), row.getAttribute("data-value"));
        row.hidden = !ok;
        if (ok) { shown++; }
      });
      if (count) { count.textContent = num(shown) + " of " + num(tbody.rows.length) + " shown"; }
    }
    function rowOf(html) {
      var t = document.createElement("template");
      t.innerHTML = html;
      return t.content.firstElementChild;
    }
    function render() {
      var rows = data.filter(function (d) { return wanted(d[1], d[2], d[3]); });
      var frag = document.createDocumentFragment();
      rows.slice(0, limit).forEach(function (d) {
        var row = rowOf(String(d[4]));
        if (row && row.tagName === "TR") { frag.appendChild(row); }
      });
      tbody.textContent = "";
      tbody.appendChild(frag);
      if (count) {
        count.textContent = num(rows.length) + " of " + num(data.length) + " shown" +
          (rows.length > limit ? " (the first " + num(limit) + " listed)" : "");
      }
      if (more) { more.hidden = rows.length <= limit; }
      if (loadAll) { loadAll.hidden = true; }
    }
    function withAll(then) {
      if (data) { then(); return; }
      waiting.push(then);
      if (loading) { return; }
      loading = true;
      if (count) { count.textContent = "Loading every row…"; }
      loadShards(config, function (rows) {
        data = rows;
        waiting.splice(0).forEach(function (f) { f(); });
      });
    }
    function apply() {
      if (config && config.shards && config.shards.length) {
        limit = PAGE;
        withAll(render);
      } else {
        applyStatic();
      }
    }
    Array.prototype.forEach.call(selects, function (s) { s.addEventListener("change", apply); });
    if (loadAll) { loadAll.addEventListener("click", function () { withAll(render); }); }
    if (more) { more.addEventListener("click", function () { limit += PAGE; render(); }); }
    if (!(config && config.shards && config.shards.length)) { applyStatic(); }
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", setup); } else { setup(); }
})();
