import type { Migration } from 'kysely';
import * as core from './0001-core.ts';
import * as payments from './0002-payments.ts';
import * as webhooks from './0003-webhooks.ts';
import * as checkout from './0005-checkout.ts';
import * as consents from './0006-consents.ts';
import * as subscriptions from './0007-subscriptions.ts';
import * as consentUsage from './0008-consent-usage.ts';
import * as partialPaymentIndexes from './0010-partial-payment-indexes.ts';
import * as mailAndPayer from './0014-mail-and-payer.ts';
import * as secretsAtRest from './0015-secrets-at-rest.ts';
import * as payerAccounts from './0016-payer-accounts.ts';
import * as enduringAuthorisations from './0017-enduring-authorisations.ts';
import * as dashboard from './0018-dashboard.ts';
import * as webhookEndpointControls from './0019-webhook-endpoint-controls.ts';
import * as jobClaimIndexes from './0020-job-claim-indexes.ts';
import * as jobLanes from './0021-job-lanes.ts';
import * as enduringPayerAccounts from './0022-enduring-payer-accounts.ts';
import * as attemptWindows from './0023-attempt-windows.ts';
import * as custInfoOwner from './0024-cust-info-owner.ts';
import * as bankClientSecrets from './0025-bank-client-secrets.ts';
import * as shownOnce from './0026-shown-once.ts';
import * as webhookEndpointDescriptionAndActivity from './0027-webhook-endpoint-description-and-activity.ts';
import * as accountNumbersInOneForm from './0028-account-numbers-in-one-form.ts';
import * as planDescriptions from './0029-plan-descriptions.ts';
import * as refunds from './0030-refunds.ts';
import * as rateBuckets from './0031-rate-buckets.ts';
import * as paymentSubmissionToken from './0032-payment-submission-token.ts';
import * as eventDeliverySummaries from './0033-event-delivery-summaries.ts';
import * as auditTrail from './0034-audit-trail.ts';
import * as team from './0035-team.ts';
import * as twoFactor from './0036-two-factor.ts';
import * as apiKeyNamesScopesAndExpiry from './0037-api-key-names-scopes-and-expiry.ts';
import * as receipts from './0038-receipts.ts';
import * as reconciliation from './0039-reconciliation.ts';
import * as passkeys from './0040-passkeys.ts';
import * as auditPeopleIndex from './0041-audit-people-index.ts';
import * as auditPending from './0042-audit-pending.ts';
import * as partialIndexes from './0043-partial-indexes.ts';
import * as failUnlessWritten from './0044-fail-unless-written.ts';
import * as inPlaceDeliveryUpdates from './0045-in-place-delivery-updates.ts';
import * as statementAmounts from './0046-statement-amounts.ts';
import * as refundSubmissions from './0047-refund-submissions.ts';
import * as webhookEnabledAt from './0048-webhook-enabled-at.ts';
import * as requestPaymentAtBank from './0049-request-payment-at-bank.ts';
import * as consentRefreshTokens from './0050-consent-refresh-tokens.ts';
import * as payerCodeUsedWith from './0051-payer-code-used-with.ts';
import * as secretKeyCheck from './0052-secret-key-check.ts';
import * as consentStartsAt from './0053-consent-starts-at.ts';
import { sandboxBankMigrations } from '../../sandbox-bank/migrations/index.ts';

// Every migration; they run in the order of their names. Each module appends its own file here;
// names never change once shipped. The sandbox bank's own (0004, 0009) live with it.
export const migrations: Record<string, Migration> = inNameOrder({
  '0001-core': core,
  '0002-payments': payments,
  '0003-webhooks': webhooks,
  '0005-checkout': checkout,
  '0006-consents': consents,
  '0007-subscriptions': subscriptions,
  '0008-consent-usage': consentUsage,
  '0010-partial-payment-indexes': partialPaymentIndexes,
  '0014-mail-and-payer': mailAndPayer,
  '0015-secrets-at-rest': secretsAtRest,
  '0016-payer-accounts': payerAccounts,
  '0017-enduring-authorisations': enduringAuthorisations,
  '0018-dashboard': dashboard,
  '0019-webhook-endpoint-controls': webhookEndpointControls,
  '0020-job-claim-indexes': jobClaimIndexes,
  '0021-job-lanes': jobLanes,
  '0022-enduring-payer-accounts': enduringPayerAccounts,
  '0023-attempt-windows': attemptWindows,
  '0024-cust-info-owner': custInfoOwner,
  '0025-bank-client-secrets': bankClientSecrets,
  '0026-shown-once': shownOnce,
  '0027-webhook-endpoint-description-and-activity': webhookEndpointDescriptionAndActivity,
  '0028-account-numbers-in-one-form': accountNumbersInOneForm,
  '0029-plan-descriptions': planDescriptions,
  '0030-refunds': refunds,
  '0031-rate-buckets': rateBuckets,
  '0032-payment-submission-token': paymentSubmissionToken,
  '0033-event-delivery-summaries': eventDeliverySummaries,
  '0034-audit-trail': auditTrail,
  '0035-team': team,
  '0036-two-factor': twoFactor,
  '0037-api-key-names-scopes-and-expiry': apiKeyNamesScopesAndExpiry,
  '0038-receipts': receipts,
  '0039-reconciliation': reconciliation,
  '0040-passkeys': passkeys,
  '0041-audit-people-index': auditPeopleIndex,
  '0042-audit-pending': auditPending,
  '0043-partial-indexes': partialIndexes,
  '0044-fail-unless-written': failUnlessWritten,
  '0045-in-place-delivery-updates': inPlaceDeliveryUpdates,
  '0046-statement-amounts': statementAmounts,
  '0047-refund-submissions': refundSubmissions,
  '0048-webhook-enabled-at': webhookEnabledAt,
  '0049-request-payment-at-bank': requestPaymentAtBank,
  '0050-consent-refresh-tokens': consentRefreshTokens,
  '0051-payer-code-used-with': payerCodeUsedWith,
  '0052-secret-key-check': secretKeyCheck,
  '0053-consent-starts-at': consentStartsAt,
  ...sandboxBankMigrations,
});

function inNameOrder(all: Record<string, Migration>): Record<string, Migration> {
  return Object.fromEntries(Object.entries(all).sort(([a], [b]) => a.localeCompare(b)));
}
