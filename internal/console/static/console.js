// The console works without this script. With it, each form card with a
// data-refresh URL is fetched again every two seconds and swapped in, so
// the counts and the chart move while submissions arrive; a tab in the
// background does not poll.
(function () {
  'use strict';
  var busy = false;
  function refresh() {
    if (busy || document.hidden) return;
    var cards = document.querySelectorAll('[data-refresh]');
    if (!cards.length) return;
    busy = true;
    var left = cards.length;
    cards.forEach(function (card) {
      fetch(card.getAttribute('data-refresh'), { credentials: 'same-origin', headers: { Accept: 'text/html' } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (!html) return;
          var t = document.createElement('template');
          t.innerHTML = html.trim();
          var next = t.content.firstElementChild;
          if (next && card.isConnected) card.replaceWith(next);
        })
        .catch(function () {})
        .finally(function () { if (--left === 0) busy = false; });
    });
  }
  setInterval(refresh, 2000);
})();
