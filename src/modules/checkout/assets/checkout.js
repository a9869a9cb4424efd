// Progressive enhancement for the payment page. Everything works without it (plain form posts
// and redirects); with it: one-tap amounts clear the typed one, status pages update themselves,
// and inside the embed widget the bank opens in a new tab while this frame waits and reports the
// outcome to the embedding page, and only to the origin the page was given (checked here against
// the frame's real ancestor, and by the server's frame-ancestors policy).
(function () {
  'use strict';
  var body = document.body;
  var page = body.getAttribute('data-page');
  var requestId = body.getAttribute('data-request-id');
  var paymentId = body.getAttribute('data-payment-id');
  var status = body.getAttribute('data-status');
  var embedOrigin = body.getAttribute('data-embed-origin') || null;
  var FINAL = { successful: true, failed: true, cancelled: true };

  function parentVerified() {
    if (!embedOrigin || window.parent === window) return false;
    var ancestors = window.location.ancestorOrigins;
    if (ancestors && ancestors.length > 0 && ancestors[0] !== embedOrigin) return false;
    return true;
  }
  function postToParent(message) {
    if (!parentVerified()) return;
    message.source = 'tono';
    window.parent.postMessage(message, embedOrigin);
  }
  function reportHeight() {
    postToParent({ type: 'tono.resize', height: document.documentElement.scrollHeight });
  }
  if (embedOrigin) {
    window.addEventListener('load', reportHeight);
    if (window.ResizeObserver) new ResizeObserver(reportHeight).observe(document.body);
  }

  var summary = document.getElementById('error-summary');
  if (summary) summary.focus();

  // One-tap amounts and a typed amount are alternatives: choosing one clears the other.
  var other = document.getElementById('amount_other');
  var choices = document.querySelectorAll('input[name="amount_choice"]');
  if (other) {
    other.addEventListener('input', function () {
      if (other.value.trim() !== '') for (var i = 0; i < choices.length; i++) choices[i].checked = false;
    });
  }
  for (var c = 0; c < choices.length; c++) {
    choices[c].addEventListener('change', function () {
      if (other) other.value = '';
    });
  }

  function statusUrl(pid) {
    return '/pay/' + encodeURIComponent(requestId) + '/status' + (pid ? '?payment_id=' + encodeURIComponent(pid) : '');
  }
  function resultUrl(pid) {
    var url = '/pay/' + encodeURIComponent(requestId) + '/result?payment_id=' + encodeURIComponent(pid);
    return embedOrigin ? url + '&embed_origin=' + encodeURIComponent(embedOrigin) : url;
  }
  function poll(pid, onFinal) {
    var delay = 1500;
    function tick() {
      fetch(statusUrl(pid), { headers: { accept: 'application/json' }, cache: 'no-store' })
        .then(function (r) {
          return r.json();
        })
        .then(function (s) {
          if (s.payment && FINAL[s.payment.status]) onFinal(s.payment.status);
          else setTimeout(tick, (delay = Math.min(delay * 1.5, 10000)));
        })
        .catch(function () {
          setTimeout(tick, (delay = Math.min(delay * 2, 10000)));
        });
    }
    setTimeout(tick, delay);
  }

  if (page === 'result' && paymentId) {
    if (FINAL[status]) {
      postToParent({ type: 'payment.' + status, request_id: requestId, payment_id: paymentId, status: status });
      if (body.getAttribute('data-close') === 'yes' && window.opener)
        setTimeout(function () {
          window.close();
        }, 1500);
    } else {
      poll(paymentId, function () {
        window.location.reload();
      });
    }
  }

  // Inside the widget the bank must not be framed: open it in a new tab and wait here.
  var form = document.querySelector('form.checkout');
  if (page === 'pay' && embedOrigin && form && window.fetch) {
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var popup = window.open('', '_blank');
      fetch(form.action, {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(new FormData(form)).toString(),
      })
        .then(function (r) {
          return r.json();
        })
        .then(function (result) {
          if (!result.redirect_url) {
            if (popup) popup.close();
            form.submit(); // the server shows the errors next to their fields
            return;
          }
          var main = document.getElementById('main');
          main.innerHTML = '';
          var h = document.createElement('h1');
          h.textContent = 'Approve the payment in your bank';
          var p = document.createElement('p');
          p.setAttribute('aria-live', 'polite');
          p.textContent = 'Your bank has opened in a new tab. This page updates when you are done.';
          main.appendChild(h);
          main.appendChild(p);
          if (popup) popup.location.href = result.redirect_url;
          else {
            var a = document.createElement('a');
            a.href = result.redirect_url;
            a.target = '_blank';
            a.className = 'button primary';
            a.textContent = 'Open your bank';
            main.appendChild(a);
          }
          main.focus();
          if (result.payment_id) {
            poll(result.payment_id, function () {
              if (popup && !popup.closed) popup.close();
              window.location.href = resultUrl(result.payment_id);
            });
          }
        })
        .catch(function () {
          if (popup) popup.close();
          form.submit();
        });
    });
  }
})();
