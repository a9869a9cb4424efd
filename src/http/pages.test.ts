import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { contentSecurityPolicy, templatesIn } from './pages.ts';
import { DEFAULT_PAGE_CSP } from './page-headers.ts';

test('the policy builder refuses everything it is not told to allow', () => {
  assert.equal(contentSecurityPolicy({}), "default-src 'none'; base-uri 'none'; frame-ancestors 'none'");
  assert.equal(
    DEFAULT_PAGE_CSP,
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  );
  assert.equal(
    contentSecurityPolicy({
      styles: { nonce: 'abc' },
      formsTo: ['https://bank.example'],
      framedBy: 'https://shop.example',
    }),
    "default-src 'none'; style-src 'nonce-abc'; form-action 'self' https://bank.example; base-uri 'none'; frame-ancestors https://shop.example",
  );
});

test('templates escape what they are given, and the plain-text set-up does not', (t) => {
  const views = fs.mkdtempSync(path.join(import.meta.dirname, '.views-'));
  t.after(() => fs.rmSync(views, { recursive: true, force: true }));
  fs.writeFileSync(path.join(views, 'hello.eta'), 'Hi <%= it.name %>\n');
  assert.equal(templatesIn(views).render('hello', { name: '<b>&' }), 'Hi &lt;b&gt;&amp;');
  assert.equal(templatesIn(views, { plainText: true }).render('hello', { name: '<b>&' }), 'Hi <b>&\n');
});

test('pages are built with the kit alone: one template set-up, policies from the builder, no HTML outside templates', () => {
  const root = path.resolve(import.meta.dirname, '..');
  const sources = fs
    .readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'));
  for (const file of sources) {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    if (file !== path.join('http', 'pages.ts'))
      assert.doesNotMatch(text, /new Eta\(/, `${file} sets up its own templates`);
    assert.doesNotMatch(text, /'content-security-policy',\s*["'`]/, `${file} writes a policy by hand`);
    assert.doesNotMatch(text, /<!doctype|<html[\s>]/i, `${file} holds HTML`);
  }
});
