import type { BankConnector } from '../banks/bank-connector.ts';
import type { SubscriptionRow } from './subscriptions.repo.ts';
import type { Deps } from '../context.ts';

// How a subscription reaches its bank: the connector for the bank the payer chose, in the
// subscription's mode (test mode always routes to the sandbox bank).

export function bankOf(deps: Deps, sub: Pick<SubscriptionRow, 'bank_id' | 'mode'>): BankConnector | null {
  return deps.banks.connectorFor(sub.bank_id, sub.mode);
}

/** Best effort after the subscription ended: the bank stops honouring the consent too. */
export async function revokeAtBank(deps: Deps, sub: SubscriptionRow): Promise<void> {
  const bank = bankOf(deps, sub);
  if (!bank) return;
  try {
    const result = await bank.revokeConsent({ consentId: sub.bank_consent_id });
    if (!result.ok)
      deps.log.warn({ subscription_id: sub.id, reason: result.reason }, 'bank did not revoke the subscription consent');
  } catch (error) {
    deps.log.warn({ err: error, subscription_id: sub.id }, 'could not revoke the subscription consent at the bank');
  }
}
