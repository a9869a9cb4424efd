// The demo page: mounts the widget and lists the messages it sends.
(function () {
  'use strict';
  var holder = document.getElementById('tono-checkout');
  var list = document.getElementById('messages');
  if (!holder || !window.TonoCheckout) return;
  holder.addEventListener('tono:payment', function (event) {
    var item = document.createElement('li');
    item.textContent = event.detail.type + ' (payment ' + event.detail.paymentId + ')';
    list.appendChild(item);
  });
  window.TonoCheckout.mount(holder, { requestId: holder.getAttribute('data-request-id') });
})();
