import type { Config } from '../../config.ts';
import { AppError } from '../../shared/errors.ts';
import type { BankConnector, BankRegistry } from './bank-connector.ts';
import { readBanksFile, type LiveBank } from './banks-file.ts';
import { BankHttp, type BankHttpOptions, type BankLog } from './open-banking.http.ts';
import { OpenBankingConnector } from './open-banking.connector.ts';
import { ClientSecretSecurity, type ClientAuth, type ClientCredentials } from './security.ts';

// The banks a payer can choose. Test mode lists the sandbox bank and the major NZ banks, and
// routes every one of them to the sandbox bank; live mode lists only the banks in BANKS_FILE.

export const NZ_BANKS: ReadonlyArray<{ id: string; name: string }> = [
  { id: 'sandbox', name: 'Sandbox Bank' },
  { id: 'anz', name: 'ANZ' },
  { id: 'asb', name: 'ASB' },
  { id: 'bnz', name: 'BNZ' },
  { id: 'westpac', name: 'Westpac' },
  { id: 'kiwibank', name: 'Kiwibank' },
  { id: 'tsb', name: 'TSB' },
  { id: 'cooperative', name: 'Co-operative Bank' },
  { id: 'heartland', name: 'Heartland Bank' },
];

export type OpenBankingRegistryOptions = {
  config: Config;
  /** Live banks; defaults to reading config.banksFile. */
  liveBanks?: LiveBank[];
  http?: BankHttpOptions;
  now?: () => number;
  /** Each bank call is logged here with its x-fapi-interaction-id and the ids it was made for. */
  log?: BankLog;
  /** The service's client at the sandbox bank (src/modules/banks/sandbox-client.ts). */
  sandboxCredentials: ClientCredentials;
};

export class OpenBankingRegistry implements BankRegistry {
  private readonly config: Config;
  private readonly liveBanks: LiveBank[];
  private readonly http: BankHttp;
  private readonly httpOptions: BankHttpOptions & { log?: BankLog };
  private readonly ownHttp: BankHttp[] = [];
  private readonly now: () => number;
  private readonly startSandboxUrl: string;
  private readonly connectors = new Map<string, BankConnector>();
  /** Also what the mounted sandbox bank accepts from the service. */
  readonly sandboxCredentials: ClientCredentials;

  constructor(options: OpenBankingRegistryOptions) {
    this.config = options.config;
    this.sandboxCredentials = options.sandboxCredentials;
    this.liveBanks = options.liveBanks ?? (options.config.banksFile ? readBanksFile(options.config.banksFile) : []);
    this.httpOptions = { ...options.http, log: options.log };
    this.http = new BankHttp(this.httpOptions);
    this.now = options.now ?? Date.now;
    this.startSandboxUrl = options.config.sandboxBankUrl;
  }

  list(mode: 'live' | 'test'): Array<{ id: string; name: string }> {
    if (mode === 'test') return NZ_BANKS.map((bank) => ({ ...bank }));
    return this.liveBanks.map((bank) => ({ id: bank.id, name: bank.name }));
  }

  connectorFor(bankId: string, mode: 'live' | 'test'): BankConnector | null {
    if (mode === 'test') {
      if (!NZ_BANKS.some((bank) => bank.id === bankId)) return null;
      return this.connector(`test:${bankId}`, bankId, this.sandboxUrl(), this.sandboxCredentials, true);
    }
    const bank = this.liveBanks.find((candidate) => candidate.id === bankId);
    if (!bank) return null;
    const key = `live:${bankId}`;
    let connector = this.connectors.get(key);
    if (!connector) {
      // A bank with mutual TLS or a private CA gets its own connection pool with those credentials.
      let http = this.http;
      if (bank.tls) {
        http = new BankHttp({ ...this.httpOptions, tls: bank.tls });
        this.ownHttp.push(http);
      }
      const clientAuth: ClientAuth =
        bank.auth.method === 'client_secret_basic'
          ? { method: 'client_secret_basic', clientId: bank.clientId, clientSecret: bank.auth.clientSecret }
          : {
              method: 'private_key_jwt',
              clientId: bank.clientId,
              privateKey: bank.auth.privateKey,
              ...(bank.auth.keyId && { keyId: bank.auth.keyId }),
            };
      connector = new OpenBankingConnector({
        bankId,
        baseUrl: bank.baseUrl,
        http,
        security: new ClientSecretSecurity({
          baseUrl: bank.baseUrl,
          tokenUrl: bank.tokenUrl,
          authorizeUrl: bank.authorizeUrl,
          clientAuth,
          http,
          now: this.now,
        }),
      });
      this.connectors.set(key, connector);
    }
    return connector;
  }

  async sandboxTestHook(path: string, body: unknown): Promise<unknown> {
    const response = await fetch(`${this.sandboxUrl()}/test${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(this.sandboxCredentials.clientId)}:${encodeURIComponent(this.sandboxCredentials.clientSecret)}`).toString('base64')}`,
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    }).catch((error: Error) => {
      throw new AppError('service_unavailable', `The sandbox bank could not be reached: ${error.message}`, {});
    });
    if (response.ok) return response.json().catch(() => null);
    const said = bankMessageOf(await response.text());
    // The bank answered: a refusal of what was asked (the consent is no longer there to act on) is
    // the caller's to see as a conflict; the bank failing is the service being unavailable.
    if (response.status < 500)
      throw new AppError('conflict.invalid_state', `The sandbox bank refused the test hook: ${said}`, {
        bank_status: response.status,
      });
    throw new AppError(
      'service_unavailable',
      `The sandbox bank failed the test hook (${response.status}): ${said}`,
      {},
    );
  }

  /**
   * SANDBOX_BANK_URL, or the mounted sandbox bank under PUBLIC_BASE_URL. Read per call: tests
   * listen on a free port and set the public URL afterwards.
   */
  sandboxUrl(): string {
    if (this.config.sandboxBankUrlSet || this.config.sandboxBankUrl !== this.startSandboxUrl)
      return this.config.sandboxBankUrl;
    return `${this.config.publicBaseUrl}/sandbox-bank`;
  }

  private connector(
    cacheKey: string,
    bankId: string,
    baseUrl: string,
    credentials: { clientId: string; clientSecret: string },
    sandbox: boolean,
  ): BankConnector {
    const key = `${cacheKey}@${baseUrl}`;
    let connector = this.connectors.get(key);
    if (!connector) {
      connector = new OpenBankingConnector({
        bankId,
        baseUrl,
        http: this.http,
        sendSandboxTime: sandbox,
        security: new ClientSecretSecurity({ baseUrl, credentials, http: this.http, now: this.now }),
      });
      this.connectors.set(key, connector);
    }
    return connector;
  }

  async close(): Promise<void> {
    await Promise.all([this.http, ...this.ownHttp].map((http) => http.close()));
  }
}

/** The message of a bank's error answer (the standard's error shape), or the start of its text. */
function bankMessageOf(text: string): string {
  try {
    const parsed = JSON.parse(text) as { Message?: string; Errors?: Array<{ Message?: string }> };
    return parsed.Errors?.[0]?.Message ?? parsed.Message ?? text.slice(0, 200);
  } catch {
    return text.slice(0, 200);
  }
}
