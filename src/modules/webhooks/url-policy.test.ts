import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isNonPublicAddress, validateWebhookUrl } from './url-policy.ts';

const publicResolver = async () => ['93.184.216.34'];
const privateResolver = async () => ['93.184.216.34', '10.1.2.3'];

test('non-public address ranges', () => {
  for (const address of ['127.0.0.1', '10.0.0.5', '172.20.1.1', '192.168.1.1', '169.254.169.254', '0.0.0.0', '100.64.1.1', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::']) {
    assert.equal(isNonPublicAddress(address), true, address);
  }
  for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8']) assert.equal(isNonPublicAddress(address), false, address);
});

test('test mode: https anywhere, http only on loopback', async () => {
  const options = { allowPrivate: false, resolve: publicResolver };
  assert.equal(await validateWebhookUrl('https://example.com/hook', 'test', options), 'https://example.com/hook');
  assert.equal(await validateWebhookUrl('http://127.0.0.1:4000/hook', 'test', options), 'http://127.0.0.1:4000/hook');
  assert.equal(await validateWebhookUrl('http://localhost:4000/hook', 'test', options), 'http://localhost:4000/hook');
  assert.equal(await validateWebhookUrl('http://[::1]:4000/hook', 'test', options), 'http://[::1]:4000/hook');
  await assert.rejects(validateWebhookUrl('http://example.com/hook', 'test', options), { code: 'bad_request.invalid_param.url' });
  await assert.rejects(validateWebhookUrl('ftp://example.com/hook', 'test', options), { code: 'bad_request.invalid_param.url' });
  await assert.rejects(validateWebhookUrl('not a url', 'test', options), { code: 'bad_request.invalid_param.url' });
  await assert.rejects(validateWebhookUrl('https://user:pw@example.com/', 'test', options), { code: 'bad_request.invalid_param.url' });
});

test('live mode: https to public addresses only, unless private targets are allowed', async () => {
  assert.equal(await validateWebhookUrl('https://example.com/hook', 'live', { allowPrivate: false, resolve: publicResolver }), 'https://example.com/hook');
  await assert.rejects(validateWebhookUrl('http://localhost:4000/hook', 'live', { allowPrivate: false }), { code: 'bad_request.invalid_param.url' });
  await assert.rejects(validateWebhookUrl('https://internal.example/hook', 'live', { allowPrivate: false, resolve: privateResolver }), {
    code: 'bad_request.invalid_param.url',
    params: { field: 'url', host: 'internal.example' },
  });
  await assert.rejects(validateWebhookUrl('https://169.254.169.254/latest', 'live', { allowPrivate: false }), { code: 'bad_request.invalid_param.url' });
  await assert.rejects(validateWebhookUrl('https://localhost/hook', 'live', { allowPrivate: false, resolve: publicResolver }), { code: 'bad_request.invalid_param.url' });
  await assert.rejects(
    validateWebhookUrl('https://nowhere.invalid/hook', 'live', { allowPrivate: false, resolve: async () => { throw new Error('ENOTFOUND'); } }),
    { code: 'bad_request.invalid_param.url', message: "url's host nowhere.invalid does not resolve" },
  );
  assert.equal(await validateWebhookUrl('https://internal.example/hook', 'live', { allowPrivate: true, resolve: privateResolver }), 'https://internal.example/hook');
});
