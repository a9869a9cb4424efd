// Progressive enhancement only: every page works without it. Buttons marked data-copy copy the
// value of the element whose id they name, and say so.
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy'));
  if (!source || !navigator.clipboard) return;
  const value = 'value' in source ? source.value : source.textContent;
  navigator.clipboard.writeText(value).then(
    () => {
      const status = document.getElementById(`${button.getAttribute('data-copy')}-status`);
      if (status) status.textContent = 'Copied.';
    },
    () => {},
  );
});
document.querySelectorAll('[data-copy]').forEach((button) => {
  button.hidden = false;
});
