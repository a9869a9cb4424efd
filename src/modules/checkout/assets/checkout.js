// Progressive enhancement for the payment page. Everything works without it (plain form posts
// and redirects); with it: one-tap amounts clear the typed one, status pages update themselves,
// and inside the embed widget the bank opens in a new tab while this frame waits and reports the
// outcome to the embedding page, and only to the origin the page was given (checked here against
// the frame's real ancestor, and by the server's frame-ancestors policy). A one-off payment is
// followed by its payment's status; a recurring consent or subscription by its request's status
// (the request is paid once the bank approved it), and the bank tab tells the frame that opened it
// what the bank said, so a decline shows at once. The frame hears its bank tabs on whatever page of
// the plan it shows (also after "Start again") and answers each; a bank tab closes itself only
// once answered. The frame tells the shop a plan is set up only from the server's set-up page (the
// request is paid), and once: the first such page after this frame showed the form.
(function () {
  'use strict';
  var body = document.body;
  var page = body.getAttribute('data-page');
  var requestId = body.getAttribute('data-request-id');
  var paymentId = body.getAttribute('data-payment-id');
  var status = body.getAttribute('data-status');
  var embedOrigin = body.getAttribute('data-embed-origin') || null;
  var kind = body.getAttribute('data-kind') || 'payment';
  var FINAL = { successful: true, failed: true, cancelled: true };
  // The messages a recurring consent or subscription sends the embedding page, by outcome.
  var PLAN_MESSAGES = {
    subscription: {
      successful: 'subscription.created',
      cancelled: 'subscription.declined',
      failed: 'subscription.failed',
    },
    recurring: {
      successful: 'recurring_consent.authorised',
      cancelled: 'recurring_consent.declined',
      failed: 'recurring_consent.failed',
    },
  };
  var plan = PLAN_MESSAGES[kind] || null;
  var WAITING = {
    payment: 'Approve the payment in your bank',
    subscription: 'Approve the subscription in your bank',
    recurring: 'Approve the regular payments in your bank',
  };

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
  // The body's own height: the document's scrollHeight is at least the frame's, so a frame would
  // only ever grow, and keep a long form's height on the short page after it.
  function reportHeight() {
    postToParent({ type: 'tono.resize', height: Math.ceil(document.body.getBoundingClientRect().height) });
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
  function withEmbed(url) {
    if (!embedOrigin) return url;
    return url + (url.indexOf('?') >= 0 ? '&' : '?') + 'embed_origin=' + encodeURIComponent(embedOrigin);
  }
  function resultUrl(pid) {
    return withEmbed('/pay/' + encodeURIComponent(requestId) + '/result?payment_id=' + encodeURIComponent(pid));
  }
  function payUrl(outcome) {
    return withEmbed('/pay/' + encodeURIComponent(requestId) + (outcome ? '?outcome=' + outcome : ''));
  }
  // Follows a payment (pid) or, with no pid, the request until it is no longer active. `check(notYet)`
  // asks at once, and calls notYet when the answer is not final.
  function poll(pid, onFinal) {
    var delay = 1500;
    var timer = null;
    var inFlight = false;
    var done = false;
    var waiters = [];
    function isFinal(s) {
      return pid ? Boolean(s.payment && FINAL[s.payment.status]) : Boolean(s.request && s.request.status !== 'active');
    }
    function settle(s) {
      inFlight = false;
      var notYet = waiters;
      waiters = [];
      if (s && isFinal(s)) {
        done = true;
        onFinal(s);
        return;
      }
      for (var i = 0; i < notYet.length; i++) notYet[i]();
      schedule((delay = Math.min(delay * (s ? 1.5 : 2), 10000)));
    }
    function tick() {
      timer = null;
      if (inFlight || done) return;
      inFlight = true;
      fetch(statusUrl(pid), { headers: { accept: 'application/json' }, cache: 'no-store' })
        .then(function (r) {
          return r.json();
        })
        .then(settle, function () {
          settle(null);
        });
    }
    function schedule(ms) {
      if (timer === null && !done) timer = setTimeout(tick, ms);
    }
    schedule(delay);
    return {
      check: function (notYet) {
        if (done) return;
        if (notYet) waiters.push(notYet);
        if (timer !== null) clearTimeout(timer);
        timer = null;
        tick();
      },
    };
  }

  // The bank tab opened by the widget (its opener is a page of this service, the widget's frame).
  function openedByWidget() {
    try {
      return Boolean(window.opener) && window.opener.location.origin === window.location.origin;
    } catch (e) {
      return false;
    }
  }
  function closeSoon() {
    setTimeout(function () {
      window.close();
    }, 1500);
  }

  // The frame owes the shop a plan's set-up from the moment it shows the form until it tells it
  // once. The mark is the frame's own name (window.name): it lasts while this frame moves between
  // the service's pages and is gone with the frame (a reload of the shop's page makes a new one),
  // where third-party storage is often refused. A frame the shop named itself keeps its name, and
  // tells only on the return from the bank (?outcome=authorised).
  var OWED = 'tono-owed:' + requestId;
  function owe() {
    if (window.name === '' || window.name.indexOf('tono-owed:') === 0) window.name = OWED;
  }
  function settleOwed() {
    if (window.name === OWED) {
      window.name = '';
      return true;
    }
    return window.name !== '' && window.name.indexOf('tono-owed:') !== 0
      ? /[?&]outcome=authorised(&|$)/.test(window.location.search)
      : false;
  }

  // The bank tab of a plan tells the frame that opened it what the bank said (again every half
  // second, for a few seconds, until answered), and says it can be closed and closes itself only
  // once the frame has answered that it shows the outcome. Unanswered, it stays on this page, which
  // says what happened.
  function tellWidget(outcome) {
    var answered = false;
    var tries = 0;
    window.addEventListener('message', function (event) {
      var data = event.data;
      if (answered || event.origin !== window.location.origin || !window.opener || event.source !== window.opener)
        return;
      if (!data || data.source !== 'tono' || data.type !== 'tono.bank-return-ack' || data.request_id !== requestId)
        return;
      answered = true;
      var note = document.createElement('p');
      note.textContent = 'You can close this tab and return to the page you came from.';
      var box = document.querySelector('.status');
      var actions = box && box.querySelector('.actions');
      if (box) box.insertBefore(note, actions);
      closeSoon();
    });
    (function send() {
      if (answered || !window.opener || tries++ >= 8) return;
      try {
        window.opener.postMessage(
          { source: 'tono', type: 'tono.bank-return', request_id: requestId, status: outcome },
          window.location.origin,
        );
      } catch (e) {
        return;
      }
      setTimeout(send, 500);
    })();
  }

  // A recurring consent or subscription the payer has just approved or declined at the bank.
  // In the frame, the server shows the set-up page only for a paid request: told to the shop once;
  // a decline or failure each time it is shown (the request can still be approved).
  if (page === 'set-up' && plan && FINAL[status]) {
    if (embedOrigin) {
      if (status !== 'successful' || (parentVerified() && settleOwed()))
        postToParent({ type: plan[status], request_id: requestId, payment_id: null, status: status });
    } else if (openedByWidget()) {
      tellWidget(status);
    }
    var heading = document.querySelector('main h1');
    if (heading && status !== 'successful') heading.focus();
  }

  if (page === 'result' && paymentId) {
    if (FINAL[status]) {
      postToParent({ type: 'payment.' + status, request_id: requestId, payment_id: paymentId, status: status });
      if (body.getAttribute('data-close') === 'yes' && window.opener) closeSoon();
    } else {
      poll(paymentId, function () {
        window.location.reload();
      });
    }
  }

  function el(tag, text, attrs) {
    var node = document.createElement(tag);
    if (text) node.textContent = text;
    for (var name in attrs || {}) node.setAttribute(name, attrs[name]);
    return node;
  }

  // The frame while the payer is at the bank: what to do there, the way back to the bank if its
  // tab was closed or lost, and a fresh start; it moves on once the payment or the set-up is done.
  function waitForBank(popup, result) {
    var main = document.getElementById('main');
    main.innerHTML = '';
    var note = el('p', '', { id: 'bank-wait', role: 'status' });
    function say(text) {
      note.textContent = text;
    }
    say(
      popup
        ? 'Your bank has opened in a new tab. This page updates when you are done.'
        : 'Open your bank to approve. This page updates when you are done.',
    );
    var reopen = el('a', popup ? 'Reopen your bank' : 'Open your bank', {
      href: result.redirect_url,
      target: '_blank',
      class: popup ? 'button' : 'button primary',
    });
    var restart = el('a', 'Start again', { href: payUrl(null), class: 'button' });
    var actions = el('p', '', { class: 'actions' });
    actions.appendChild(reopen);
    actions.appendChild(restart);
    main.appendChild(el('h1', WAITING[kind] || WAITING.payment, { tabindex: '-1' }));
    main.appendChild(note);
    main.appendChild(actions);
    if (popup) popup.location.href = result.redirect_url;
    main.querySelector('h1').focus();

    var finished = false;
    var follow = result.payment_id
      ? poll(result.payment_id, function () {
          finished = true;
          if (popup && !popup.closed) popup.close();
          window.location.href = resultUrl(result.payment_id);
        })
      : poll(null, function (s) {
          finished = true;
          if (popup && !popup.closed) popup.close();
          window.location.href = payUrl(s.request.status === 'paid' ? 'authorised' : null);
        });

    reopen.addEventListener('click', function (event) {
      var again = window.open(result.redirect_url, '_blank');
      if (!again) return; // blocked: the link opens it instead
      event.preventDefault();
      popup = again;
      reopen.textContent = 'Reopen your bank';
      say('Your bank has opened in a new tab. This page updates when you are done.');
      watch();
    });

    // The bank tab closed before the outcome came back: ask once more, then say so.
    var watching = null;
    function watch() {
      if (watching !== null || !popup) return;
      watching = setInterval(function () {
        if (finished || !popup || !popup.closed) return;
        clearInterval(watching);
        watching = null;
        follow.check(function () {
          say('Your bank tab was closed. If you did not finish, reopen your bank or start again.');
        });
      }, 1000);
    }
    watch();

    // A bank tab of a recurring consent or subscription says what the bank did (heard below).
    onBankReturn = function (outcome) {
      if (finished) return;
      if (outcome === 'successful') follow.check();
      else {
        finished = true;
        window.location.href = payUrl(SET_UP_OUTCOME[outcome]);
      }
    };
  }

  // Inside the widget, a plan's form and outcome pages hear the bank tabs this frame opened (their
  // opener is this window, whichever page it shows now, so also after "Start again"). Each message
  // is answered, so the tab can close, and the frame moves to the outcome unless it shows it already:
  // waiting, the way waitForBank does (a set-up once the request is paid); otherwise to the request's
  // page with the bank's word, where the server shows the set-up only for a paid request.
  var SET_UP_OUTCOME = { successful: 'authorised', cancelled: 'declined', failed: 'failed' };
  var onBankReturn = null;
  function fromOwnBankTab(event) {
    if (event.origin !== window.location.origin || !event.source) return false;
    try {
      return event.source.opener === window;
    } catch (e) {
      return false;
    }
  }
  if (plan && embedOrigin && (page === 'pay' || page === 'set-up')) {
    var heard = false;
    window.addEventListener('message', function (event) {
      var data = event.data;
      if (!data || data.source !== 'tono' || data.type !== 'tono.bank-return' || data.request_id !== requestId) return;
      if (!FINAL[data.status] || !fromOwnBankTab(event)) return;
      event.source.postMessage(
        { source: 'tono', type: 'tono.bank-return-ack', request_id: requestId },
        window.location.origin,
      );
      if (heard) return;
      heard = true;
      if (page === 'set-up' && (status === 'successful' || data.status !== 'successful')) return;
      if (onBankReturn) onBankReturn(data.status);
      else window.location.href = payUrl(SET_UP_OUTCOME[data.status]);
    });
  }

  // Inside the widget the bank must not be framed: open it in a new tab and wait here.
  var form = document.querySelector('form.checkout');
  if (page === 'pay' && embedOrigin && form && plan) owe();
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
            // A closed request (paid meanwhile: a plan's set-up) shows as it is now; otherwise the
            // server shows the errors next to their fields.
            if (result.outcome === 'closed') window.location.href = payUrl(null);
            else form.submit();
            return;
          }
          waitForBank(popup, result);
        })
        .catch(function () {
          if (popup) popup.close();
          form.submit();
        });
    });
  }
})();
