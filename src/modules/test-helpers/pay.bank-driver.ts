// Plays the payer at the sandbox bank over HTTP, as a browser would: follows the authorise
// redirect, fills the login form (username `sandbox` unless told another, any password), presses
// approve or decline, and stops at the bank's redirect back to the service. Reads the bank's HTML
// forms generically (every hidden field is sent back), so it relies only on what a person sees on
// those pages.

export type Decision = 'approve' | 'decline';

type Control = { tag: 'input' | 'button' | 'select' | 'textarea'; attrs: Record<string, string>; text: string };
type Form = { action: string; method: string; controls: Control[] };

const decisionWords: Record<Decision, RegExp> = {
  approve: /\b(approve|authori[sz]e|allow|confirm|accept|pay)\b/i,
  decline: /\b(decline|deny|reject|cancel|refuse)\b/i,
};

function decode(value: string): string {
  return value
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&#x27;|&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&#(\d+);/g, (_m, n) => String.fromCodePoint(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_m, n) => String.fromCodePoint(parseInt(n, 16)))
    .replace(/&amp;/g, '&');
}

function attributesOf(tag: string): Record<string, string> {
  const attrs: Record<string, string> = {};
  const pattern = /([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;
  const inner = tag.replace(/^<\s*[a-zA-Z]+/, '').replace(/\/?>$/, '');
  for (const match of inner.matchAll(pattern))
    attrs[match[1].toLowerCase()] = decode(match[2] ?? match[3] ?? match[4] ?? '');
  return attrs;
}

export function parseForms(html: string): Form[] {
  const forms: Form[] = [];
  for (const match of html.matchAll(/<form\b[^>]*>([\s\S]*?)<\/form>/gi)) {
    const attrs = attributesOf(match[0].slice(0, match[0].indexOf('>') + 1));
    const controls: Control[] = [];
    for (const c of match[1].matchAll(/<(input|button|select|textarea)\b[^>]*>(?:([\s\S]*?)<\/\1>)?/gi)) {
      const tag = c[1].toLowerCase() as Control['tag'];
      controls.push({
        tag,
        attrs: attributesOf(c[0].slice(0, c[0].indexOf('>') + 1)),
        text: decode((c[2] ?? '').replace(/<[^>]+>/g, ' ').trim()),
      });
    }
    forms.push({ action: attrs.action ?? '', method: (attrs.method ?? 'get').toLowerCase(), controls });
  }
  return forms;
}

const isSubmit = (c: Control) =>
  (c.tag === 'button' && (c.attrs.type ?? 'submit') === 'submit') ||
  (c.tag === 'input' && ['submit', 'image'].includes(c.attrs.type ?? ''));
const label = (c: Control) => `${c.attrs.name ?? ''} ${c.attrs.value ?? ''} ${c.text} ${c.attrs.id ?? ''}`;

/** The fields a browser would send for this form when `button` is pressed. */
function fill(form: Form, button: Control | null, overrides: Record<string, string>): URLSearchParams {
  const fields = new URLSearchParams();
  for (const c of form.controls) {
    const name = c.attrs.name;
    if (!name || isSubmit(c)) continue;
    const type = (c.attrs.type ?? 'text').toLowerCase();
    if ((type === 'checkbox' || type === 'radio') && !('checked' in c.attrs)) continue;
    fields.append(name, overrides[name] ?? c.attrs.value ?? c.text ?? '');
  }
  for (const [name, value] of Object.entries(overrides)) if (!fields.has(name)) fields.append(name, value);
  if (button?.attrs.name) fields.append(button.attrs.name, button.attrs.value ?? '');
  return fields;
}

type Step = { url: string; method: string; body?: URLSearchParams };

/** The next request a payer makes on this bank page, or null when there is nothing to do. */
export function nextStep(html: string, pageUrl: string, decision: Decision, username = 'sandbox'): Step | null {
  const forms = parseForms(html);
  const login = forms.find((f) => f.controls.some((c) => (c.attrs.type ?? '').toLowerCase() === 'password'));
  if (login) {
    const user = login.controls.find(
      (c) => c.tag === 'input' && /user|login|name/i.test(c.attrs.name ?? '') && (c.attrs.type ?? 'text') !== 'hidden',
    );
    const password = login.controls.find((c) => (c.attrs.type ?? '').toLowerCase() === 'password')!;
    const overrides: Record<string, string> = { [password.attrs.name ?? 'password']: 'test-password' };
    if (user?.attrs.name) overrides[user.attrs.name] = username;
    const button = login.controls.find(isSubmit) ?? null;
    return {
      url: new URL(login.action || pageUrl, pageUrl).toString(),
      method: login.method,
      body: fill(login, button, overrides),
    };
  }
  for (const form of forms) {
    const button = form.controls.find((c) => isSubmit(c) && decisionWords[decision].test(label(c)));
    if (button) {
      const action = button.attrs.formaction || form.action || pageUrl;
      return {
        url: new URL(action, pageUrl).toString(),
        method: (button.attrs.formmethod || form.method).toLowerCase(),
        body: fill(form, button, {}),
      };
    }
  }
  return null;
}

/** Walks the bank's pages until it redirects to `returnPrefix`; returns that return URL. Signs in as `username` (default `sandbox`). */
export async function authoriseAtBank(
  authoriseUrl: string,
  decision: Decision,
  returnPrefix: string,
  options: { username?: string } = {},
): Promise<URL> {
  const cookies = new Map<string, string>();
  let step: Step = { url: authoriseUrl, method: 'get' };
  for (let hop = 0; hop < 12; hop += 1) {
    if (step.url.startsWith(returnPrefix)) return new URL(step.url);
    const isPost = step.method === 'post';
    const target =
      isPost || !step.body ? step.url : `${step.url}${step.url.includes('?') ? '&' : '?'}${step.body.toString()}`;
    const response = await fetch(target, {
      method: isPost ? 'POST' : 'GET',
      redirect: 'manual',
      signal: AbortSignal.timeout(15_000),
      headers: {
        accept: 'text/html',
        ...(cookies.size > 0 && { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') }),
        ...(isPost && { 'content-type': 'application/x-www-form-urlencoded' }),
      },
      body: isPost ? step.body?.toString() : undefined,
    });
    for (const header of response.headers.getSetCookie()) {
      const [pair] = header.split(';');
      const eq = pair.indexOf('=');
      if (eq > 0) cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      await response.body?.cancel();
      step = { url: new URL(location, target).toString(), method: 'get' };
      continue;
    }
    const html = await response.text();
    const next = nextStep(html, target, decision, options.username);
    if (!next) throw new Error(`the bank page at ${target} (HTTP ${response.status}) offered no way to ${decision}`);
    step = next;
  }
  throw new Error('the bank did not redirect back after 12 steps');
}
