import { Agent, request as httpRequest } from 'undici';

// The bank call of the bank_call baselines (bench/servers/bare.ts, bare-postgres.ts): one POST on a
// keep-alive connection to the bank stub, its answer read.

const bank = new Agent({ keepAliveTimeout: 60_000, connections: 64 });

export async function callBank(
  bankUrl: string | undefined,
  amountCents: number,
): Promise<{ DomesticPaymentId: string; Status: string }> {
  if (!bankUrl) throw new Error('BANK_URL is not set');
  const response = await httpRequest(`${bankUrl}/payments`, {
    method: 'POST',
    dispatcher: bank,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ Data: { InstructedAmount: { Amount: (amountCents / 100).toFixed(2), Currency: 'NZD' } } }),
  });
  return ((await response.body.json()) as { Data: { DomesticPaymentId: string; Status: string } }).Data;
}
