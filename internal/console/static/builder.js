// The form builder works without this script: every button posts the
// page and the server answers with the changed editor. With it, the
// draft is saved as the organizer types and the preview frames reload
// from it; the preview's width switches between phone and desktop; the
// New form page suggests an address from the title and says at once
// whether an address is taken.
(function () {
  'use strict';
  function zone() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || ''; } catch (e) { return ''; }
  }

  var make = document.querySelector('[data-new-form]');
  if (make) {
    var title = make.querySelector('[data-title]'), id = make.querySelector('[data-id]');
    var status = make.querySelector('#id-check'), auto = id && id.value === '';
    var ask = function (q) {
      fetch('/admin/forms/new/id?' + q, { credentials: 'same-origin' }).then(function (r) { return r.ok ? r.json() : null; }).then(function (a) {
        if (!a) return;
        if (auto && q.indexOf('title=') === 0) id.value = a.id;
        if (!a.valid) { status.textContent = ''; return; }
        status.textContent = a.taken ? status.getAttribute('data-id-taken').replace('%s', a.id + '-2') : status.getAttribute('data-id-free');
      });
    };
    var timer;
    if (title && id) {
      title.addEventListener('input', function () {
        if (!auto) return;
        clearTimeout(timer);
        timer = setTimeout(function () { ask('title=' + encodeURIComponent(title.value)); }, 300);
      });
      id.addEventListener('input', function () {
        auto = id.value === '';
        clearTimeout(timer);
        timer = setTimeout(function () { if (id.value) ask('id=' + encodeURIComponent(id.value)); }, 300);
      });
    }
  }

  var form = document.querySelector('[data-builder]');
  if (!form) return;
  var tz = form.querySelector('[data-tz]'), here = zone();
  if (tz && here && !/[?&]tz=/.test(location.search) && tz.value !== here) {
    var opens = form.querySelector('#opens_at'), closes = form.querySelector('#closes_at');
    if ((opens && opens.value) || (closes && closes.value)) {
      // Show the opening and closing times in the organizer's own zone:
      // the server writes them again in it.
      if (!form.querySelector('[aria-invalid=true]')) {
        location.replace(location.pathname + (location.search ? location.search + '&' : '?') + 'tz=' + encodeURIComponent(here) + location.hash);
        return;
      }
    } else {
      tz.value = here;
    }
  }
  var frames = document.querySelectorAll('[data-preview]');
  var said = form.querySelector('[data-draft-status]');
  var pending, saving = false, again = false;
  function save() {
    if (saving) { again = true; return; }
    saving = true;
    said.textContent = said.getAttribute('data-saving');
    var body = new URLSearchParams(new FormData(form));
    body.set('op', 'save');
    fetch(form.action, { method: 'POST', body: body, credentials: 'same-origin', headers: { 'X-Formd-Draft': '1' } }).then(function (r) {
      saving = false;
      if (r.status === 204) {
        said.textContent = said.getAttribute('data-saved');
        frames.forEach(function (f) { f.src = f.src.split('#')[0]; });
      }
      if (again) { again = false; save(); }
    }, function () { saving = false; said.textContent = ''; });
  }
  form.addEventListener('input', function (e) {
    // A change of a field's kind or the languages changes what the editor
    // shows: the server draws it again.
    if (e.target.name && (/\.type$/.test(e.target.name) || e.target.name === 'langs')) return;
    clearTimeout(pending);
    pending = setTimeout(save, 500);
  });
  form.addEventListener('change', function (e) {
    if (e.target.name && (/\.type$/.test(e.target.name) || e.target.name === 'langs')) {
      var op = document.createElement('input');
      op.type = 'hidden'; op.name = 'op'; op.value = 'save';
      form.appendChild(op);
      form.submit();
    }
  });
  document.querySelectorAll('[data-width]').forEach(function (b) {
    b.addEventListener('click', function () {
      document.querySelectorAll('[data-width]').forEach(function (o) { o.setAttribute('aria-pressed', o === b ? 'true' : 'false'); });
      frames.forEach(function (f) { f.width = b.getAttribute('data-width'); });
    });
  });
})();
