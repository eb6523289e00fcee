/* Polyglav publisher: filters of the archive-wide tables (Errors, Decisions).
 * Each select[data-filter] matches the rows' data-<filter> ("=" + value; "" is all). */
(function () {
  "use strict";
  function setup() {
    var table = document.getElementById("event-table");
    if (!table) { return; }
    var tbody = table.tBodies[0];
    var selects = document.querySelectorAll("select[data-filter]");
    var count = document.querySelector(".filter-count");
    function apply() {
      var shown = 0;
      Array.prototype.forEach.call(tbody.rows, function (row) {
        var ok = Array.prototype.every.call(selects, function (s) {
          return !s.value || "=" + row.getAttribute("data-" + s.dataset.filter) === s.value;
        });
        row.hidden = !ok;
        if (ok) { shown++; }
      });
      if (count) { count.textContent = shown + " of " + tbody.rows.length + " shown"; }
    }
    Array.prototype.forEach.call(selects, function (s) { s.addEventListener("change", apply); });
    apply();
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", setup); } else { setup(); }
})();
