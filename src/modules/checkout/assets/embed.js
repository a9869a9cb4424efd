// Tono checkout widget. Usage:
//   <script src="SERVICE/embed.js" data-request-id="request_…"></script>
// or TonoCheckout.mount(element, { requestId, onMessage(message) { … } }).
// The payment page runs in an iframe; its messages are accepted only from the service's origin and
// that iframe, and arrive as `tono:payment` events on the element (and onMessage): a one-off
// payment's outcome, or a recurring consent's or subscription's set-up (paymentId null), see docs/checkout.md.
(function () {
  'use strict';
  var SERVICE_ORIGIN = __SERVICE_ORIGIN__;
  var TYPES = {
    'payment.successful': true,
    'payment.failed': true,
    'payment.cancelled': true,
    'subscription.created': true,
    'subscription.declined': true,
    'subscription.failed': true,
    'recurring_consent.authorised': true,
    'recurring_consent.declined': true,
    'recurring_consent.failed': true,
  };

  function mount(element, options) {
    if (typeof element === 'string') element = document.querySelector(element);
    if (!element || !options || !/^request_[0-9A-Za-z]{26}$/.test(String(options.requestId))) {
      throw new Error('TonoCheckout.mount(element, { requestId: "request_…" })');
    }
    var iframe = document.createElement('iframe');
    iframe.src =
      SERVICE_ORIGIN +
      '/pay/' +
      encodeURIComponent(options.requestId) +
      '?embed_origin=' +
      encodeURIComponent(window.location.origin);
    iframe.title = 'Payment';
    iframe.style.width = '100%';
    iframe.style.border = '0';
    iframe.style.minHeight = '480px';
    element.appendChild(iframe);

    function onMessage(event) {
      if (event.origin !== SERVICE_ORIGIN || event.source !== iframe.contentWindow) return;
      var data = event.data;
      if (!data || data.source !== 'tono' || typeof data.type !== 'string') return;
      if (data.type === 'tono.resize') {
        var height = Number(data.height);
        if (height > 0) iframe.style.height = Math.min(Math.max(height, 200), 4000) + 'px';
        return;
      }
      if (!TYPES[data.type]) return;
      var message = {
        type: data.type,
        requestId: String(data.request_id),
        paymentId: data.payment_id == null ? null : String(data.payment_id),
        status: String(data.status),
      };
      if (typeof options.onMessage === 'function') options.onMessage(message);
      element.dispatchEvent(new CustomEvent('tono:payment', { detail: message, bubbles: true }));
    }
    window.addEventListener('message', onMessage);
    return {
      iframe: iframe,
      unmount: function () {
        window.removeEventListener('message', onMessage);
        iframe.remove();
      },
    };
  }

  window.TonoCheckout = { mount: mount, origin: SERVICE_ORIGIN };

  var script = document.currentScript;
  if (script && script.getAttribute('data-request-id')) {
    var target = script.getAttribute('data-target') ? document.querySelector(script.getAttribute('data-target')) : null;
    if (!target) {
      target = document.createElement('div');
      target.className = 'tono-checkout';
      script.parentNode.insertBefore(target, script.nextSibling);
    }
    mount(target, { requestId: script.getAttribute('data-request-id') });
  }
})();
