// The session page's own script (the console's CSP runs no inline script
// and no other site's). Two small jobs, each an enhancement of a page that
// works without it:
//  - Pause Until: the time-zone field gets the browser's zone (without
//    this script it stays UTC, and says so);
//  - the transcript streams live: lines arrive as server-sent events whose
//    data is the line's <li>, rendered and escaped by the server's own
//    template, and are put in place (newest turn first, each turn's lines
//    in order). EventSource reconnects by itself with Last-Event-ID, which
//    the server resumes after.
(function () {
  "use strict";

  function fillZones(root) {
    var zone;
    try {
      zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    } catch (e) {
      return;
    }
    if (!zone) return;
    root.querySelectorAll("input[data-browser-zone]").forEach(function (input) {
      input.value = zone;
      input.removeAttribute("data-browser-zone");
    });
  }

  function place(list, line) {
    if (document.getElementById(line.id)) return; // already shown
    var same = list.querySelectorAll("li[data-turn]");
    var last = null;
    same.forEach(function (li) {
      if (li.dataset.turn === line.dataset.turn) last = li;
    });
    if (last) last.after(line);
    else list.prepend(line); // a new turn: the newest comes first
    var empty = document.getElementById("transcript-empty");
    if (empty) empty.remove();
  }

  function streamTranscripts(root) {
    root.querySelectorAll("ol[data-transcript-stream]").forEach(function (list) {
      if (list.dataset.streaming || !window.EventSource) return;
      list.dataset.streaming = "1";
      var source = new EventSource(list.dataset.transcriptStream);
      source.addEventListener("line", function (event) {
        if (!list.isConnected) {
          source.close(); // the page part holding it is gone
          return;
        }
        var holder = document.createElement("template");
        holder.innerHTML = event.data;
        var line = holder.content.firstElementChild;
        if (line) place(list, line);
      });
    });
  }

  function init(root) {
    fillZones(root);
    streamTranscripts(root);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { init(document); });
  } else {
    init(document);
  }
  // Content htmx brings in (a drawer) is set up the same way.
  document.addEventListener("htmx:load", function (event) { init(event.target); });
})();
