// Session pages: keyboard shortcuts and previous/next error and refusal. The page reads
// the same without it: the overview links every error and refusal.
(function () {
  "use strict";
  function all(selector) { return Array.prototype.slice.call(document.querySelectorAll(selector)); }
  function targets(kind) {
    if (kind === "turn") { return all(".turn"); }
    if (kind === "error") { return all(".error-note, .part-tool.is-error"); }
    return all(".decision-note.note-denied, .decision-note.note-declined");
  }
  function go(kind, step) {
    var items = targets(kind);
    if (!items.length) { return; }
    var top = window.scrollY + 8;
    var i;
    var chosen = null;
    if (step > 0) {
      for (i = 0; i < items.length; i++) {
        if (items[i].getBoundingClientRect().top + window.scrollY > top + 1) { chosen = items[i]; break; }
      }
    } else {
      for (i = items.length - 1; i >= 0; i--) {
        if (items[i].getBoundingClientRect().top + window.scrollY < top - 1) { chosen = items[i]; break; }
      }
    }
    if (!chosen) { return; }
    var target = chosen.id ? chosen : chosen.querySelector("[id]");
    chosen.scrollIntoView({ block: "start" });
    if (target && target.id && history.replaceState) { history.replaceState(null, "", "#" + target.id); }
    chosen.setAttribute("tabindex", "-1");
    chosen.focus({ preventScroll: true });
  }
  var help = null;
  function toggleHelp() {
    if (!help) {
      help = document.createElement("div");
      help.className = "help";
      help.id = "keys-help";
      help.setAttribute("role", "dialog");
      help.setAttribute("aria-label", "Keyboard shortcuts");
      var rows = [["j / k", "next / previous turn"], ["e / E", "next / previous error or failed call"],
        ["r / R", "next / previous refused decision"], ["?", "show or hide this help"], ["Esc", "close"]];
      var h = document.createElement("strong");
      h.textContent = "Keyboard shortcuts";
      help.appendChild(h);
      var dl = document.createElement("dl");
      rows.forEach(function (row) {
        var dt = document.createElement("dt");
        var k = document.createElement("kbd");
        k.textContent = row[0];
        dt.appendChild(k);
        var dd = document.createElement("dd");
        dd.textContent = row[1];
        dl.appendChild(dt);
        dl.appendChild(dd);
      });
      help.appendChild(dl);
      document.body.appendChild(help);
      return;
    }
    help.hidden = !help.hidden;
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var t = event.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) { return; }
    var map = { j: ["turn", 1], k: ["turn", -1], e: ["error", 1], E: ["error", -1], r: ["refused", 1], R: ["refused", -1] };
    if (event.key === "?") { toggleHelp(); event.preventDefault(); return; }
    if (event.key === "Escape" && help && !help.hidden) { help.hidden = true; return; }
    var action = map[event.key];
    if (action) { go(action[0], action[1]); event.preventDefault(); }
  });
})();
