// Shared by the checkout flow tests: the whole service on a real port (so the connector reaches
// the mounted sandbox bank over HTTP), and a payer who uses the hosted page with plain form posts
// and the sandbox bank's own pages, as a browser without JavaScript would.
import http from 'node:http';
import type { TestContext } from 'node:test';
import { authoriseAtBank, type Decision } from '../../src/modules/test-helpers/pay.bank-driver.ts';
import {
  apiClient,
  buildTestApp,
  createTestMerchant,
  type ApiClient,
  type TestApp,
  type TestMerchant,
} from '../helpers.ts';

export type CheckoutWorld = { app: TestApp; baseUrl: string; merchant: TestMerchant; api: ApiClient; live: ApiClient };

export async function checkoutWorld(t: TestContext, merchantName = 'Kōwhai Coffee'): Promise<CheckoutWorld> {
  const app = await buildTestApp(t);
  const address = await app.app.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = address.replace('localhost', '127.0.0.1');
  app.deps.config.publicBaseUrl = baseUrl;
  const merchant = await createTestMerchant(app, merchantName);
  return { app, baseUrl, merchant, api: apiClient(app, merchant.testKey), live: apiClient(app, merchant.liveKey) };
}

export async function createRequest(
  world: CheckoutWorld,
  body: Record<string, unknown>,
  client = world.api,
): Promise<any> {
  const created = await client.post('/v1/requests', {
    bank_account_id: world.merchant.bankAccountId,
    message: 'Flat white',
    ...body,
  });
  if (created.status !== 201) throw new Error(`create request: ${created.status} ${created.text}`);
  return created.body.request;
}

export type PageSubmission = { status: number; location: string | null; body: string };

/** Posts the payment page's form; a 303 carries the bank's authorise URL. */
export async function submitPage(
  baseUrl: string,
  requestId: string,
  form: Record<string, string>,
): Promise<PageSubmission> {
  const response = await fetch(`${baseUrl}/pay/${requestId}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
    body: new URLSearchParams(form).toString(),
  });
  return { status: response.status, location: response.headers.get('location'), body: await response.text() };
}

/** Back from the bank: the service's return URL, and where it sends the payer next. */
export async function returnToService(returnUrl: URL): Promise<string> {
  const response = await fetch(returnUrl, { redirect: 'manual' });
  await response.body?.cancel();
  if (response.status !== 303) throw new Error(`return: ${response.status}`);
  return response.headers.get('location')!;
}

/** The whole payer journey without a browser: page form → bank login → decision → return. */
export async function payViaPage(
  world: CheckoutWorld,
  requestId: string,
  form: Record<string, string>,
  decision: Decision = 'approve',
): Promise<string> {
  const submitted = await submitPage(world.baseUrl, requestId, { bank: 'sandbox', ...form });
  if (submitted.status !== 303 || !submitted.location)
    throw new Error(`page form: ${submitted.status} ${submitted.body.slice(0, 500)}`);
  const back = await authoriseAtBank(submitted.location, decision, `${world.baseUrl}/pay/return`);
  return returnToService(back);
}

export async function eventsOf(world: CheckoutWorld, objectId?: string): Promise<Array<{ type: string; data: any }>> {
  let query = world.app.deps.db
    .selectFrom('events')
    .select(['type', 'body'])
    .where('user_id', '=', world.merchant.userId)
    .orderBy('id');
  if (objectId) query = query.where('object_id', '=', objectId);
  return (await query.execute()).map((row) => ({ type: row.type, data: JSON.parse(row.body).data }));
}

/**
 * The merchant's shop: a page of another origin (localhost, another port) embedding the widget with
 * its script tag, which keeps every `tono:payment` message in `window.messages`; closed when the
 * test ends. Its URL.
 */
export async function shopEmbedding(t: TestContext, world: CheckoutWorld, requestId: string): Promise<string> {
  const shop = http.createServer((_req, res) => {
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(`<!doctype html><html><head><title>Shop</title></head><body><h1>Checkout</h1>
<div id="pay"></div>
<script>window.messages = []; document.addEventListener('tono:payment', function (e) { window.messages.push(e.detail); });</script>
<script src="${world.baseUrl}/embed.js" data-request-id="${requestId}" data-target="#pay"></script>
</body></html>`);
  });
  await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        shop.close(() => resolve());
        shop.closeAllConnections();
      }),
  );
  return `http://localhost:${(shop.address() as { port: number }).port}/`;
}
