// The demo page: mounts the widget and lists the messages it sends.
(function () {
  'use strict';
  var holder = document.getElementById('tono-checkout');
  var list = document.getElementById('messages');
  if (!holder || !window.TonoCheckout) return;
  holder.addEventListener('tono:payment', function (event) {
    var item = document.createElement('li');
    var detail = event.detail;
    item.textContent =
      detail.type + (detail.paymentId ? ' (payment ' + detail.paymentId + ')' : ' (request ' + detail.requestId + ')');
    list.appendChild(item);
  });
  window.TonoCheckout.mount(holder, { requestId: holder.getAttribute('data-request-id') });
})();
