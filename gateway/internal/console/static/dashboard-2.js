// The dashboard's session drawer. A card's title is a link to the session's
// full page (so a middle-click, a new tab or a browser without script does
// the obvious thing); a plain click opens the same session in a <dialog>
// over the dashboard instead, filled with the page's content by htmx from
// the link's data-drawer URL. showModal keeps focus inside the drawer and
// closes it on Escape; focus moves to the session's heading once it is
// there, and back to the card's link when the drawer closes. The file name
// carries a version, as the vendored ones do: bump it when it changes.
(function () {
  'use strict';

  function drawer() { return document.getElementById('drawer'); }

  document.addEventListener('click', function (e) {
    var link = e.target.closest && e.target.closest('a[data-drawer]');
    var d = drawer();
    if (!link || !d || typeof d.showModal !== 'function' || typeof htmx === 'undefined') return;
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    d.dataset.opener = link.id;
    document.getElementById('drawer-full').href = link.href;
    var body = document.getElementById('drawer-body');
    body.textContent = 'Loading…';
    d.showModal();
    htmx.ajax('GET', link.dataset.drawer, { target: '#drawer-body', swap: 'innerHTML' }).then(function () {
      var heading = body.querySelector('h1');
      if (heading) {
        heading.tabIndex = -1;
        heading.focus();
      }
    });
  });

  document.addEventListener('click', function (e) {
    if (e.target.id === 'drawer-close') drawer().close();
  });

  // close does not bubble: listen in the capture phase. The body is
  // emptied through htmx, so what it set up there (the session's live
  // stream) is cleaned up and closed with it.
  document.addEventListener('close', function (e) {
    if (e.target.id !== 'drawer') return;
    var body = document.getElementById('drawer-body');
    if (typeof htmx !== 'undefined' && htmx.swap) htmx.swap(body, '', { swapStyle: 'innerHTML' });
    else body.textContent = '';
    var opener = document.getElementById(e.target.dataset.opener || '');
    if (opener) opener.focus();
  }, true);
})();
