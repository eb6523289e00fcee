/* polyglav site serve: reload this page after a build changed it, at the same turn. */
(function () {
  "use strict";
  var KEY = "polyglav-reload:" + location.pathname;

  function sitePath() {
    var path = decodeURIComponent(location.pathname).replace(/^\/+/, "");
    return path === "" || path.slice(-1) === "/" ? path + "index.html" : path;
  }

  /* The anchor of the first turn in view (or the #fragment), and where it is in the view. */
  function anchor() {
    var turns = document.querySelectorAll("section.turn");
    for (var i = 0; i < turns.length; i++) {
      var box = turns[i].getBoundingClientRect();
      if (box.bottom > 0 && box.top < window.innerHeight) {
        var id = turns[i].id || turns[i].getAttribute("aria-labelledby") || "";
        var target = id ? document.getElementById(id) : null;
        if (target) { return { id: id, offset: target.getBoundingClientRect().top }; }
      }
    }
    var hash = decodeURIComponent(location.hash.slice(1));
    return hash ? { id: hash, offset: 0 } : null;
  }

  function restore() {
    var saved = null;
    try { saved = JSON.parse(sessionStorage.getItem(KEY) || "null"); } catch (e) { saved = null; }
    if (!saved || typeof saved.id !== "string") { return; }
    var target = document.getElementById(saved.id);
    if (!target) { return; }
    target.scrollIntoView();
    window.scrollBy(0, -(Number(saved.offset) || 0));
  }

  if ("scrollRestoration" in history) { history.scrollRestoration = "manual"; }
  restore();
  window.addEventListener("load", function () { restore(); sessionStorage.removeItem(KEY); });

  var source = new EventSource("/__polyglav/events");
  source.addEventListener("reload", function (event) {
    var changed = [];
    try { changed = JSON.parse(event.data).changed || []; } catch (e) { changed = []; }
    var here = sitePath();
    var affected = changed.some(function (path) {
      return path === here || path.indexOf("assets/") === 0;
    });
    if (!affected) { return; }
    var at = anchor();
    if (at) { sessionStorage.setItem(KEY, JSON.stringify(at)); }
    source.close();
    location.reload();
  });
})();
