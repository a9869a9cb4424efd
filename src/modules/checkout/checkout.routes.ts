import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { merchantImage } from './checkout.images.ts';
import {
  bankErrorPage,
  closedRequestPage,
  merchantRedirect,
  notSetUpPage,
  parseSetUpOutcome,
  payPage,
  resultPage,
  setUpOutcomeOf,
  statusPage,
  withEmbed,
  type PageContext,
} from './checkout.pages.ts';
import { loadRequest, paymentOfRequest, returnFromBank, setUpViewOf, submitCheckout } from './checkout.service.ts';
import { parseEmbedOrigin, render, sendPage } from './checkout.views.ts';
import { contentSecurityPolicy } from '../../http/pages.ts';
import { isIdOf } from '../../shared/ids.ts';
import type { Deps } from '../context.ts';
import type { CheckoutStrategies } from './checkout.strategies.ts';
import type { BankReturn } from '../manifest.ts';
import type { App } from '../../http/app-type.ts';

const assetsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'assets');
const assetTypes: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
};
const hidden = { schema: { hide: true } };

type Query = Record<string, string | undefined>;
type Params = { id: string };

function formValues(body: unknown): Record<string, string> {
  const values: Record<string, string> = {};
  if (!body || typeof body !== 'object') return values;
  for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string' && key.length <= 40) values[key] = first.slice(0, 500);
  }
  return values;
}

const wantsJson = (request: FastifyRequest) => (request.headers.accept ?? '').includes('application/json');

export async function registerCheckoutRoutes(
  app: App,
  deps: Deps,
  strategies: CheckoutStrategies,
  otherReturns: ReadonlyArray<BankReturn> = [],
): Promise<void> {
  registerAssets(app, deps);
  registerPayPages(app, deps, strategies);
  registerPayReturn(app, deps, strategies, otherReturns);
  registerPayReads(app, deps);
}

/** The page's own styles and script, the embed widget's script, and its demo page. */
function registerAssets(app: App, deps: Deps): void {
  const assets = new Map<string, { type: string; body: string }>();
  for (const name of fs.readdirSync(assetsDir)) {
    const type = assetTypes[path.extname(name)];
    if (type && name !== 'embed.js')
      assets.set(name, { type, body: fs.readFileSync(path.join(assetsDir, name), 'utf8') });
  }
  // Read per request: PUBLIC_BASE_URL is fixed in production, but tests learn their port late.
  const serviceOrigin = () => new URL(deps.config.publicBaseUrl).origin;
  const embedSource = fs.readFileSync(path.join(assetsDir, 'embed.js'), 'utf8');
  const embedScript = () => embedSource.replace('__SERVICE_ORIGIN__', JSON.stringify(serviceOrigin()));

  app.get<{ Params: { name: string } }>('/checkout/assets/:name', hidden, async (request, reply) => {
    const asset = assets.get(request.params.name);
    if (!asset) return reply.status(404).send({ code: 'not_found.route', message: 'No such asset', params: {} });
    return reply
      .header('content-type', asset.type)
      .header('cache-control', 'public, max-age=300')
      .header('x-content-type-options', 'nosniff')
      .send(asset.body);
  });

  app.get('/embed.js', hidden, async (_request, reply) =>
    reply
      .header('content-type', 'text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .header('access-control-allow-origin', '*')
      .header('cross-origin-resource-policy', 'cross-origin')
      .send(embedScript()),
  );

  app.get<{ Querystring: Query }>('/embed-demo', hidden, async (request, reply) => {
    const requestId = isIdOf('request', request.query.request_id) ? request.query.request_id : null;
    return sendPage(
      reply,
      200,
      render('embed-demo', { requestId, base: deps.config.publicBaseUrl }),
      null,
      serviceOrigin(),
    );
  });
}

/** A payment link that leads nowhere. */
const notFoundPage = (reply: FastifyReply) =>
  sendPage(
    reply,
    404,
    render('problem', {
      title: 'Not found',
      heading: 'This payment link is not valid',
      text: 'Check the link you were given, or ask the merchant for a new one.',
    }),
  );

/** The request a page is for, with what every page of it shows; null when there is no such request. */
const contextOf = async (deps: Deps, request: FastifyRequest<{ Params: Params; Querystring: Query }>) => {
  const loaded = await loadRequest(deps, request.params.id);
  if (!loaded) return null;
  const ctx: PageContext = {
    request: loaded.request,
    merchantName: loaded.merchantName,
    embedOrigin: parseEmbedOrigin(request.query.embed_origin, new URL(deps.config.publicBaseUrl).origin),
    issuesTaxInvoices: loaded.issuesTaxInvoices === true,
  };
  return { loaded, ctx };
};

/** The hosted page: the request, and the payer's choice. */
function registerPayPages(app: App, deps: Deps, strategies: CheckoutStrategies): void {
  app.get<{ Params: Params; Querystring: Query }>('/pay/:id', hidden, async (request, reply) => {
    const found = await contextOf(deps, request);
    if (!found) return notFoundPage(reply);
    const { loaded, ctx } = found;
    // Back from the bank with a recurring consent or subscription: what the bank said, from a fixed list.
    const outcome = loaded.request.kind === 'payment' ? null : parseSetUpOutcome(request.query.outcome);
    // In the widget a plan found set up is always shown as an outcome: its script tells the shop
    // once, if this frame has not told it yet (checkout.js).
    if (loaded.status !== 'active')
      return sendPage(
        reply,
        loaded.status === 'paid' ? 200 : 410,
        closedRequestPage(
          ctx,
          loaded.status,
          await setUpViewOf(deps, strategies, loaded),
          outcome === 'authorised' || ctx.embedOrigin !== null,
        ),
        ctx.embedOrigin,
      );
    if (outcome === 'declined' || outcome === 'failed')
      return sendPage(reply, 200, notSetUpPage(ctx, outcome), ctx.embedOrigin);
    return sendPage(reply, 200, payPage(deps, strategies, ctx), ctx.embedOrigin);
  });

  app.post<{ Params: Params; Querystring: Query }>('/pay/:id', hidden, async (request, reply) => {
    const found = await contextOf(deps, request);
    if (!found) return notFoundPage(reply);
    const { loaded, ctx } = found;
    const values = formValues(request.body);
    const outcome = await submitCheckout(deps, strategies, loaded, values, ctx.embedOrigin ? 'embed' : 'page');
    if (wantsJson(request)) {
      if (outcome.kind === 'redirect') return reply.send({ redirect_url: outcome.url, payment_id: outcome.paymentId });
      return reply.status(outcome.kind === 'invalid' ? 400 : 409).send({ outcome: outcome.kind });
    }
    switch (outcome.kind) {
      case 'redirect':
        return reply.redirect(outcome.url, 303);
      case 'invalid':
        return sendPage(reply, 400, payPage(deps, strategies, ctx, values, outcome.errors), ctx.embedOrigin);
      case 'closed':
        return sendPage(
          reply,
          409,
          closedRequestPage(ctx, outcome.status, await setUpViewOf(deps, strategies, loaded), ctx.embedOrigin !== null),
          ctx.embedOrigin,
        );
      case 'bank_error':
        return sendPage(reply, 502, bankErrorPage(ctx, outcome.message), ctx.embedOrigin);
    }
  });
}

/** The payer back from the bank, and the page of the payment that came of it. */
function registerPayReturn(
  app: App,
  deps: Deps,
  strategies: CheckoutStrategies,
  otherReturns: ReadonlyArray<BankReturn>,
): void {
  // The bank's one-time authorisation code is in this URL: it writes no info-level access line.
  app.get<{ Querystring: Query }>('/pay/return', { ...hidden, logLevel: 'warn' }, async (request, reply) => {
    const { state, code, error } = request.query;
    const outcome = await returnFromBank(deps, strategies, {
      state: state ?? '',
      code: code ?? null,
      error: error ?? null,
    });
    if (!outcome) {
      // Not a payer's checkout: a merchant back from approving something at its own bank.
      for (const complete of otherReturns) {
        const onward = await complete(deps, { state: state ?? '', code: code ?? null, error: error ?? null });
        if (onward) return reply.redirect(onward, 303);
      }
    }
    const loaded = outcome && (await loadRequest(deps, outcome.requestId));
    if (!outcome || !loaded) {
      return sendPage(
        reply,
        400,
        render('problem', {
          title: 'Unknown bank response',
          heading: 'We could not match this bank response to a payment',
          text: 'No payment was made from this page. If you were paying, go back to the payment link and try again.',
        }),
      );
    }
    if (outcome.paymentId && outcome.channel !== 'embed') {
      const onward = merchantRedirect(loaded.request, { id: outcome.paymentId, status: outcome.status });
      if (onward) return reply.redirect(onward, 303);
    }
    // A recurring consent or subscription has no payment: its page says what the bank did.
    const next = outcome.paymentId
      ? `/pay/${outcome.requestId}/result?payment_id=${outcome.paymentId}`
      : `/pay/${outcome.requestId}?outcome=${setUpOutcomeOf(outcome.status)}`;
    return reply.redirect(next, 303);
  });

  app.get<{ Params: Params; Querystring: Query }>('/pay/:id/result', hidden, async (request, reply) => {
    const found = await contextOf(deps, request);
    if (!found) return notFoundPage(reply);
    const { loaded, ctx } = found;
    const payment = await paymentOfRequest(deps, loaded.request.id, request.query.payment_id);
    if (!payment) {
      return sendPage(
        reply,
        404,
        statusPage(ctx, 'Unknown payment', {
          tone: 'info',
          heading: 'We could not find that payment',
          paragraphs: ['Go back to the payment page to see what you can do.'],
          links: [
            {
              href: withEmbed(`/pay/${loaded.request.id}`, ctx.embedOrigin),
              label: 'Back to the payment page',
              primary: true,
            },
          ],
        }),
        ctx.embedOrigin,
      );
    }
    const inPopup = payment.channel === 'embed' && ctx.embedOrigin === null;
    return sendPage(reply, 200, resultPage(ctx, payment, loaded.status === 'active', inPopup), ctx.embedOrigin);
  });
}

/** What the page and the widget read besides pages: statuses to poll, and the merchant's images. */
function registerPayReads(app: App, deps: Deps): void {
  // What the page and the widget poll: statuses only, no API key, nothing else about the payer.
  app.get<{ Params: Params; Querystring: Query }>('/pay/:id/status', hidden, async (request, reply) => {
    const loaded = await loadRequest(deps, request.params.id);
    reply.header('cache-control', 'no-store');
    if (!loaded)
      return reply.status(404).send({
        code: 'not_found.request',
        message: `No such request: ${request.params.id}`,
        params: { id: request.params.id },
      });
    const payment =
      request.query.payment_id === undefined
        ? null
        : await paymentOfRequest(deps, loaded.request.id, request.query.payment_id);
    if (request.query.payment_id !== undefined && !payment) {
      return reply.status(404).send({
        code: 'not_found.payment',
        message: `No such payment: ${request.query.payment_id}`,
        params: { id: request.query.payment_id },
      });
    }
    return {
      request: { id: loaded.request.id, status: loaded.status },
      payment: payment && { id: payment.id, status: payment.status },
    };
  });

  for (const which of ['logo', 'banner'] as const) {
    app.get<{ Params: Params }>(`/pay/:id/${which}`, hidden, async (request, reply) => {
      const loaded = await loadRequest(deps, request.params.id);
      const url = loaded && (which === 'logo' ? loaded.request.logo_image_url : loaded.request.banner_image_url);
      const image = url ? await merchantImage(url, { reach: deps.config.targetReach[loaded.request.mode] }) : null;
      if (!image)
        return reply
          .status(404)
          .header('cache-control', 'max-age=60')
          .send({ code: 'not_found.image', message: 'No image', params: {} });
      return reply
        .header('content-type', image.type)
        .header('cache-control', 'public, max-age=600')
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', contentSecurityPolicy({}))
        .send(image.bytes);
    });
  }
}
