// The console works without this script. With it, each form card with a
// data-refresh URL is fetched again every two seconds and swapped in, so
// the counts and the chart move while submissions arrive; a tab in the
// background does not poll.
(function () {
  'use strict';
  // Times: the server writes UTC (title and text) and RFC 3339 in
  // datetime; here each is written again in the browser's time zone,
  // with its offset, and the page names the zone once. UTC stays on hover.
  function pad(n) { return (n < 10 ? '0' : '') + n; }
  function offset(d) {
    var m = -d.getTimezoneOffset(), s = m < 0 ? '-' : '+';
    if (m === 0) return 'UTC';
    m = Math.abs(m);
    return 'UTC' + s + pad(Math.floor(m / 60)) + ':' + pad(m % 60);
  }
  function text(d, f) {
    var day = d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate());
    var hm = pad(d.getHours()) + ':' + pad(d.getMinutes());
    if (f === 't') return hm;
    if (f === 'h') return day + ' ' + pad(d.getHours()) + ':00 ' + offset(d);
    if (f === 'm') return day + ' ' + hm + ' ' + offset(d);
    return day + ' ' + hm + ':' + pad(d.getSeconds()) + ' ' + offset(d);
  }
  function localize(root) {
    root.querySelectorAll('time[data-fmt]').forEach(function (el) {
      var d = new Date(el.getAttribute('datetime'));
      if (!isNaN(d.getTime())) el.textContent = text(d, el.getAttribute('data-fmt'));
    });
    root.querySelectorAll('.tz').forEach(function (el) { el.textContent = offset(new Date()); });
    root.querySelectorAll('rect[data-at]').forEach(function (el) {
      var d = new Date(el.getAttribute('data-at')), t = el.querySelector('title');
      if (t && !isNaN(d.getTime())) t.textContent = text(d, 't') + ' ' + offset(d) + ': ' + el.getAttribute('data-n');
    });
  }
  localize(document);
  var note = document.querySelector('[data-tz-note]');
  if (note) {
    var zone = '';
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ''; } catch (e) { zone = ''; }
    note.textContent = note.getAttribute('data-tz-note').replace('%s', (zone ? zone + ', ' : '') + offset(new Date()));
    note.hidden = false;
  }
  // Exports for people: times in this browser's zone, file links valid
  // as long as chosen (issue 34).
  var ttl = document.querySelector('[data-export-ttl]');
  function exportLinks() {
    var zone = '';
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ''; } catch (e) { zone = ''; }
    document.querySelectorAll('a[data-export]').forEach(function (a) {
      var u = new URL(a.getAttribute('href'), location.href);
      if (zone) u.searchParams.set('tz', zone);
      if (ttl) u.searchParams.set('link_ttl', ttl.value);
      a.setAttribute('href', u.pathname + u.search);
    });
  }
  exportLinks();
  if (ttl) ttl.addEventListener('change', exportLinks);
  // Bulk review: "all pending on this page" ticks each entry's box too,
  // so what will be decided is what is seen (the server takes the page's
  // pending entries from the box alone, without JavaScript).
  document.querySelectorAll('form.bulk-review input[name="all"]').forEach(function (all) {
    all.addEventListener('change', function () {
      all.form.querySelectorAll('input[name="id"]').forEach(function (box) { box.checked = all.checked; });
    });
    // Unticking one entry leaves "all" too: the boxes still ticked are
    // what is sent.
    all.form.querySelectorAll('input[name="id"]').forEach(function (box) {
      box.addEventListener('change', function () { if (!box.checked) all.checked = false; });
    });
  });
  // A window typed in this browser's time (the label says its offset,
  // as the page's times do) is sent as the UTC moment it means; without
  // the script the label says UTC and the server reads it so (issue 34).
  document.querySelectorAll('input[type=datetime-local][data-local]').forEach(function (el) {
    if (!el.form) return;
    el.form.addEventListener('submit', function () {
      var d = el.value ? new Date(el.value) : null;
      if (!d || isNaN(d.getTime())) return;
      var h = document.createElement('input');
      h.type = 'hidden';
      h.name = el.name;
      h.value = d.toISOString().replace(/\.\d{3}Z$/, 'Z');
      el.removeAttribute('name');
      el.form.appendChild(h);
    });
  });
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
          if (next && card.isConnected) {
            card.replaceWith(next);
            localize(next);
          }
        })
        .catch(function () {})
        .finally(function () { if (--left === 0) busy = false; });
    });
  }
  setInterval(refresh, 2000);
})();
