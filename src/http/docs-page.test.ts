import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp } from '../../test/helpers.ts';

// /docs: the API reference under Tono's name, every asset from this service.

test("/docs is Tono's reference, loads nothing from elsewhere, and its policy allows nothing from elsewhere", async (t) => {
  const app = await buildTestApp(t);
  const entry = await app.app.inject({ method: 'GET', url: '/docs' });
  const location = entry.headers.location ? String(entry.headers.location) : '/docs';
  const page =
    entry.statusCode === 302
      ? await app.app.inject({ method: 'GET', url: location.startsWith('/') ? location : `/docs/${location}` })
      : entry;
  assert.equal(page.statusCode, 200);
  assert.match(page.body, /<title>Tono API reference<\/title>/);
  const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  assert.ok(assets.length > 0);
  for (const asset of assets) {
    assert.doesNotMatch(asset, /^(https?:)?\/\//, `${asset} is served by this service`);
    const url = new URL(asset, `http://127.0.0.1/docs/static/index.html`).pathname;
    assert.equal((await app.app.inject({ method: 'GET', url })).statusCode, 200, url);
  }
  const initializer = await app.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
  assert.equal(initializer.statusCode, 200);
  assert.match(initializer.body, /data:image\/svg\+xml;base64,/, "Tono's logo replaces the default one");
  assert.match(initializer.body, /validatorUrl: null/);
  const csp = String(page.headers['content-security-policy']);
  assert.doesNotMatch(csp, /https:|validator|\*/);
  assert.match(csp, /default-src 'self'/);
  const spec = await app.app.inject({ method: 'GET', url: '/docs/json' });
  assert.equal(spec.json().info.title, 'Tono API');
  assert.deepEqual(
    spec.json().servers,
    [{ url: app.deps.config.publicBaseUrl, description: 'This service' }],
    'Try it out calls this service',
  );
});
