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

// Passkeys (WebAuthn), where the browser has the JSON forms of the API: adding one on the account
// page, and giving the second step with one at sign-in. The server checks everything; this only
// carries the challenge to the authenticator and its answer back.
const passkeysWork =
  typeof PublicKeyCredential !== 'undefined' &&
  typeof PublicKeyCredential.parseCreationOptionsFromJSON === 'function' &&
  typeof PublicKeyCredential.parseRequestOptionsFromJSON === 'function';

async function postJson(path, body) {
  const response = await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    credentials: 'same-origin',
    body: JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({ error: 'Something went wrong. Try again.' }));
  if (!response.ok) throw new Error(answer.error || 'Something went wrong. Try again.');
  return answer;
}

function passkeyFlow(container, trigger, run) {
  const error = container.querySelector('[data-passkey-error]');
  container.hidden = false;
  trigger(async () => {
    if (error) error.textContent = '';
    try {
      const done = await run(container.getAttribute('data-csrf'));
      window.location.assign(done.redirect);
    } catch (problem) {
      const cancelled = problem && (problem.name === 'NotAllowedError' || problem.name === 'AbortError');
      if (error) error.textContent = cancelled ? 'No passkey was used. Try again, or enter a code.' : problem.message;
    }
  });
}

if (passkeysWork) {
  const add = document.querySelector('[data-passkey-add]');
  if (add)
    passkeyFlow(
      add,
      (go) =>
        add.addEventListener('submit', (event) => {
          event.preventDefault();
          go();
        }),
      async (csrf) => {
        // A current code first (adding a passkey changes the second step): the server keeps the challenge only then.
        const code = add.querySelector('input[name="code"]');
        const options = await postJson('/dashboard/account/passkeys/options', { csrf, code: code.value });
        code.value = '';
        const credential = await navigator.credentials.create({
          publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options),
        });
        return postJson('/dashboard/account/passkeys', {
          csrf,
          name: add.querySelector('input[name="name"]').value,
          response: credential.toJSON(),
        });
      },
    );
  const signIn = document.querySelector('[data-passkey-sign-in]');
  if (signIn)
    passkeyFlow(
      signIn,
      (go) => signIn.querySelector('button').addEventListener('click', go),
      async (csrf) => {
        const options = await postJson('/dashboard/login/two-factor/passkey/options', { csrf });
        const credential = await navigator.credentials.get({
          publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options),
        });
        return postJson('/dashboard/login/two-factor/passkey', { csrf, response: credential.toJSON() });
      },
    );
}
