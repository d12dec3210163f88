// The door page's enhancement (issue 35). The page works without it (a
// typed code, posted, answered by the server); with it:
//   - every scan (typed, or decoded from the camera with the vendored
//     jsqr) gets its own idempotency key and is stored in IndexedDB
//     before it is sent to POST /v1/admin/forms/{form}/checkins, with
//     the console session's CSRF token; it is sent when the network
//     allows, retried with backoff, and its server answer (checked in,
//     already checked in, not valid) replaces the provisional one in
//     the list of recent scans;
//   - the roster (GET …/checkins) is downloaded, and while offline the
//     page answers from it, marked "not yet confirmed";
//   - the page says how many scans wait to be sent.
(function () {
  'use strict';
  var form = document.querySelector('form[data-door-form]');
  if (!form || !window.indexedDB) return;
  var formID = form.getAttribute('data-door-form');
  var csrf = form.getAttribute('data-csrf');
  var api = '/v1/admin/forms/' + encodeURIComponent(formID) + '/checkins';
  var live = document.querySelector('[data-door-live]');
  var waitingEl = document.querySelector('[data-door-waiting]');
  var recent = document.querySelector('[data-door-recent]');
  var recentList = recent.querySelector('ol');
  var camButton = form.querySelector('[data-door-camera]');
  var video = document.querySelector('[data-door-video]');
  var doorInput = form.querySelector('input[name="door"]');
  var codeInput = form.querySelector('input[name="ticket"]');
  var counts = document.querySelector('[data-door-counts]');

  function w(name, vars) {
    var s = form.getAttribute('data-w-' + name) || '';
    var i = 0;
    s = s.replace(/%s/g, function () { return vars && vars.args ? vars.args[i++] : ''; });
    return s.replace(/\{(\w+)\}/g, function (_, k) { return vars && k in vars ? String(vars[k]) : ''; });
  }
  function why(reason) { return form.getAttribute('data-why-' + reason) || w('refused'); }

  // The door's name survives a reload.
  try {
    if (!doorInput.value && localStorage.getItem('formd-door')) doorInput.value = localStorage.getItem('formd-door');
  } catch (e) { /* storage may be off */ }

  // --- IndexedDB: the outbox of scans (store "scans", by key). ---
  var dbp = new Promise(function (res, rej) {
    var rq = indexedDB.open('formd-door', 1);
    rq.onupgradeneeded = function () {
      var s = rq.result.createObjectStore('scans', { keyPath: 'key' });
      s.createIndex('form', 'form');
    };
    rq.onsuccess = function () { res(rq.result); };
    rq.onerror = function () { rej(rq.error); };
  });
  function tx(mode, fn) {
    return dbp.then(function (db) {
      return new Promise(function (res, rej) {
        var t = db.transaction('scans', mode);
        var out = fn(t.objectStore('scans'));
        t.oncomplete = function () { res(out && 'result' in out ? out.result : undefined); };
        t.onerror = function () { rej(t.error); };
        t.onabort = function () { rej(t.error); };
      });
    });
  }
  function put(scan) { return tx('readwrite', function (s) { s.put(scan); }); }
  function all() {
    return tx('readonly', function (s) { return s.index('form').getAll(formID); }).then(function (rows) {
      return rows.sort(function (a, b) { return a.seq - b.seq; });
    });
  }

  // --- The roster, for answers while offline. ---
  var roster = null; // {byTicket, byCode}
  function norm(code) {
    return String(code).toUpperCase().replace(/[\s-]/g, '').replace(/O/g, '0').replace(/[IL]/g, '1');
  }
  function loadRoster() {
    return fetch(api, { credentials: 'same-origin', headers: { Accept: 'application/json' } }).then(function (r) {
      if (!r.ok) return;
      return r.json().then(function (ro) {
        var byTicket = {}, byCode = {};
        (ro.tickets || []).forEach(function (t) { byTicket[t.ticket] = t; byCode[norm(t.code)] = t; });
        roster = { byTicket: byTicket, byCode: byCode };
        if (counts) counts.textContent = w('counts', { args: [String(ro.checked_in), String(ro.expected)] });
        document.querySelectorAll('[data-door-option]').forEach(function (td) {
          var c = ro.options && ro.options[td.getAttribute('data-door-option')];
          if (c) td.textContent = w('counts', { args: [String(c.checked_in), String(c.expected)] });
        });
      });
    }).catch(function () { /* offline: keep the last one */ });
  }
  function fromRoster(ticket) {
    if (!roster) return null;
    return roster.byTicket[ticket.trim()] || roster.byCode[norm(ticket)] || null;
  }
  function who(t) { return t.name + (t.option ? ', ' + t.option : ''); }

  // --- What the page shows. ---
  function hhmm(iso) {
    var d = new Date(iso);
    return isNaN(d) ? '' : ('0' + d.getHours()).slice(-2) + ':' + ('0' + d.getMinutes()).slice(-2);
  }
  // answerText is a scan's answer in words, and its kind (ok, again, bad,
  // offline); a scan not yet answered by the server has a provisional
  // answer from the roster.
  function answerText(scan) {
    var a = scan.answer;
    if (a) {
      if (a.result === 'checked_in') return { kind: 'ok', text: w('ok', { args: [who(a)] }) };
      if (a.result === 'already_checked_in') return { kind: 'again', text: w('again', { args: [hhmm(a.checked_in_at), a.door, who(a)] }) };
      return { kind: 'bad', text: w('bad', { args: [a.why] }) };
    }
    var p = scan.provisional;
    if (!p) return { kind: 'offline', text: w('pending') };
    if (p === 'unknown') return { kind: 'offline', text: w('offline-unknown') };
    return { kind: 'offline', text: w(p === 'again' ? 'offline-again' : 'offline-ok', { who: scan.who }) };
  }
  var shown = null; // the key of the scan in the large answer
  function showAnswer(scan) {
    var old = document.querySelector('.door-answer:not([data-door-live])');
    if (old) old.remove();
    shown = scan.key;
    var at = answerText(scan);
    live.className = 'door-answer door-' + at.kind;
    live.querySelector('p').textContent = at.text;
    live.querySelector('.door-note').textContent = scan.answer ? '' : w('unconfirmed');
    live.hidden = false;
  }
  function render() {
    return all().then(function (rows) {
      var waiting = rows.filter(function (s) { return !s.answer; }).length;
      waitingEl.textContent = waiting === 1 ? w('waiting-one') : w('waiting', { n: waiting });
      waitingEl.hidden = false;
      recentList.textContent = '';
      rows.slice(-20).reverse().forEach(function (s) {
        var li = document.createElement('li');
        var at = answerText(s);
        li.textContent = hhmm(s.scanned_at) + ' · ' + s.label + ' · ' + at.text + (s.answer ? '' : ' (' + w('unconfirmed') + ')');
        li.setAttribute('data-kind', at.kind);
        recentList.appendChild(li);
      });
      recent.hidden = rows.length === 0;
      rows.forEach(function (s) { if (s.key === shown) showAnswer(s); });
    });
  }

  // newKey is a scan's idempotency key: a random UUID (crypto.randomUUID
  // needs a secure context; getRandomValues does not).
  function newKey() {
    if (crypto.randomUUID) return crypto.randomUUID();
    var b = crypto.getRandomValues(new Uint8Array(16));
    return Array.prototype.map.call(b, function (x) { return ('0' + x.toString(16)).slice(-2); }).join('');
  }

  // --- A scan: stored, shown provisionally, then sent. ---
  var seq = Date.now();
  function scan(ticket) {
    ticket = ticket.trim();
    var door = doorInput.value.trim();
    if (!ticket || !door) return Promise.resolve();
    try { localStorage.setItem('formd-door', door); } catch (e) { /* storage may be off */ }
    var key = 'door-' + newKey();
    var s = { key: key, form: formID, seq: seq++, ticket: ticket, door: door, scanned_at: new Date().toISOString(), tries: 0, next: 0 };
    var t = fromRoster(ticket);
    s.label = t ? t.code : (ticket.indexOf('FT1.') === 0 ? ticket.slice(0, 12) + '…' : ticket);
    if (!t) s.provisional = roster ? 'unknown' : '';
    else {
      s.who = who(t);
      s.provisional = t.checked_in_at ? 'again' : 'ok';
      t.checked_in_at = t.checked_in_at || s.scanned_at; // a second scan offline is "already"
    }
    return put(s).then(function () {
      showAnswer(s);
      return render();
    }).then(flush);
  }

  // send posts one waiting scan; it resolves to true when the scan got
  // its final answer, false to try again later.
  function send(s) {
    return fetch(api, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': s.key, 'X-CSRF-Token': csrf, Accept: 'application/json' },
      body: JSON.stringify({ ticket: s.ticket, door: s.door, scanned_at: s.scanned_at }),
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (b) {
        if (r.status === 200 || r.status === 201) {
          s.answer = b;
          var t = roster && (roster.byCode[norm(b.code)] || null);
          if (t) t.checked_in_at = b.checked_in_at;
        } else if (b.code === 'ticket-invalid') {
          s.answer = { result: 'refused', why: why(b.reason) };
        } else if (b.code === 'ticket-not-valid-now') {
          s.answer = { result: 'refused', why: why(b.entry_status) };
        } else if (r.status === 401 || r.status === 403) {
          signedOut = true;
          return false;
        } else if (r.status >= 400 && r.status < 500 && r.status !== 408 && r.status !== 429) {
          s.answer = { result: 'refused', why: b.detail || w('refused') };
        } else {
          return false;
        }
        return put(s).then(function () { return true; });
      });
    }, function () { return false; });
  }

  var flushing = null, signedOut = false, timer = 0;
  // flush sends the waiting scans in the order they were made; a failed
  // one is tried again with backoff (1 s doubling to 60 s), and a return
  // of the network sends at once.
  function flush() {
    if (flushing) return flushing;
    flushing = all().then(function (rows) {
      var now = Date.now();
      var waiting = rows.filter(function (s) { return !s.answer; });
      var chain = Promise.resolve(true);
      waiting.forEach(function (s) {
        chain = chain.then(function (ok) {
          if (!ok || s.next > now || signedOut) return false;
          return send(s).then(function (done) {
            if (done) return render().then(function () { return true; });
            s.tries++;
            s.next = Date.now() + Math.min(60000, 1000 * Math.pow(2, s.tries - 1));
            return put(s).then(function () { return false; });
          });
        });
      });
      return chain.then(function () { return all(); });
    }).then(function (rows) {
      flushing = null;
      var waiting = rows.filter(function (s) { return !s.answer; });
      if (signedOut) {
        live.className = 'door-answer door-bad';
        live.querySelector('p').textContent = w('signed-out');
        live.hidden = false;
      }
      clearTimeout(timer);
      if (waiting.length && !signedOut) {
        var next = Math.min.apply(null, waiting.map(function (s) { return s.next; }));
        timer = setTimeout(flush, Math.max(250, next - Date.now()));
      } else if (!waiting.length) {
        loadRoster();
      }
      return render();
    }, function (err) {
      flushing = null;
      throw err;
    });
    return flushing;
  }
  window.addEventListener('online', function () {
    all().then(function (rows) {
      return Promise.all(rows.filter(function (s) { return !s.answer; }).map(function (s) { s.next = 0; return put(s); }));
    }).then(flush);
  });

  form.addEventListener('submit', function (ev) {
    ev.preventDefault();
    var t = codeInput.value;
    codeInput.value = '';
    codeInput.focus();
    scan(t);
  });

  // --- The camera: frames decoded by jsqr; a ticket goes the same way. ---
  var stream = null, last = '', lastAt = 0;
  function stopCamera() {
    if (stream) stream.getTracks().forEach(function (t) { t.stop(); });
    stream = null;
    video.hidden = true;
    camButton.textContent = w('camera');
  }
  function tick() {
    if (!stream) return;
    if (video.readyState >= 2 && video.videoWidth) {
      var c = tick.canvas || (tick.canvas = document.createElement('canvas'));
      c.width = video.videoWidth;
      c.height = video.videoHeight;
      var g = c.getContext('2d', { willReadFrequently: true });
      g.drawImage(video, 0, 0, c.width, c.height);
      var img = g.getImageData(0, 0, c.width, c.height);
      var code = window.jsQR(img.data, img.width, img.height, { inversionAttempts: 'dontInvert' });
      var now = Date.now();
      // The same ticket held in front of the camera is one scan (for
      // three seconds); scanning it again later is a new scan.
      if (code && code.data && (code.data !== last || now - lastAt > 3000)) {
        last = code.data;
        lastAt = now;
        scan(code.data);
      } else if (code && code.data === last) {
        lastAt = now;
      }
    }
    setTimeout(tick, 150);
  }
  if (camButton && window.jsQR && navigator.mediaDevices && navigator.mediaDevices.getUserMedia) {
    camButton.hidden = false;
    camButton.addEventListener('click', function () {
      if (stream) return stopCamera();
      navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' }, audio: false }).then(function (s) {
        stream = s;
        video.srcObject = s;
        video.hidden = false;
        camButton.textContent = w('camera-stop');
        return video.play().then(tick);
      }).catch(function () {
        stopCamera();
        live.className = 'door-answer door-bad';
        live.querySelector('p').textContent = w('camera-error');
        live.querySelector('.door-note').textContent = '';
        live.hidden = false;
      });
    });
  }

  loadRoster().then(render).then(flush);
})();
