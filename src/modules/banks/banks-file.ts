import fs from 'node:fs';
import path from 'node:path';
import type { KeyObject } from 'node:crypto';
import { loadPrivateKey } from './security.ts';

// BANKS_FILE: the live banks this deployment is connected to. JSON, either an array or
// { "banks": [...] }, each entry:
//   { "id": "anz", "name": "ANZ", "base_url": "https://…", "client_id": "…",
//     "token_endpoint_auth_method": "client_secret_basic" (default) | "private_key_jwt",
//     "client_secret": "…"                         (client_secret_basic)
//     "private_key_file": "…pem", "key_id"?: "…"   (private_key_jwt)
//     "token_url"?, "authorize_url"?               (default base_url + /token, /authorize)
//     "tls_cert_file"?, "tls_key_file"?            (mutual TLS, both or neither)
//     "ca_file"? }                                 (a private CA for the bank's certificate)
// Read and checked at start, key files included; any problem is one line naming BANKS_FILE.
// docs/banks.md says how to onboard a bank.

export type LiveBankAuth =
  | { method: 'client_secret_basic'; clientSecret: string }
  | { method: 'private_key_jwt'; privateKey: KeyObject; keyId?: string };

export type LiveBank = {
  id: string;
  name: string;
  baseUrl: string;
  tokenUrl: string;
  authorizeUrl: string;
  clientId: string;
  auth: LiveBankAuth;
  /** PEM contents for mutual TLS and a private CA; null when the bank needs neither. */
  tls: { cert?: string; key?: string; ca?: string } | null;
};

export class BanksFileError extends Error {}

export function readBanksFile(file: string): LiveBank[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new BanksFileError(
      `BANKS_FILE cannot be read (${file}): ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new BanksFileError(`BANKS_FILE is not valid JSON (${file}): ${(error as Error).message}`);
  }
  return parseBanks(parsed, file);
}

export function parseBanks(parsed: unknown, file: string): LiveBank[] {
  const list = Array.isArray(parsed) ? parsed : (parsed as { banks?: unknown })?.banks;
  if (!Array.isArray(list))
    throw new BanksFileError(`BANKS_FILE must hold a JSON array of banks or { "banks": [...] } (${file})`);
  const seen = new Set<string>();
  return list.map((entry, index) => {
    const where = `BANKS_FILE entry ${index + 1} (${file})`;
    if (typeof entry !== 'object' || entry === null) throw new BanksFileError(`${where} must be an object`);
    const field = (name: string) => {
      const value = (entry as Record<string, unknown>)[name];
      if (typeof value !== 'string' || value.trim() === '')
        throw new BanksFileError(`${where} needs "${name}" as a non-empty string`);
      return value.trim();
    };
    const id = field('id');
    if (!/^[a-z0-9][a-z0-9_-]{0,39}$/.test(id))
      throw new BanksFileError(`${where}: "id" must be lower-case letters, digits, - or _, got ${JSON.stringify(id)}`);
    if (seen.has(id)) throw new BanksFileError(`${where}: bank id ${JSON.stringify(id)} appears twice`);
    seen.add(id);
    const optional = (name: string) =>
      (entry as Record<string, unknown>)[name] === undefined ? undefined : field(name);
    const url = (name: string, value: string) => {
      let parsedUrl: URL;
      try {
        parsedUrl = new URL(value);
      } catch {
        throw new BanksFileError(`${where}: "${name}" must be a URL, got ${JSON.stringify(value)}`);
      }
      if (
        parsedUrl.protocol !== 'https:' &&
        !(parsedUrl.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(parsedUrl.hostname))
      ) {
        throw new BanksFileError(
          `${where}: "${name}" must use https (http only on localhost), got ${JSON.stringify(value)}`,
        );
      }
      return value.replace(/\/+$/, '');
    };
    // Files are named relative to BANKS_FILE's folder.
    const readFile = (name: string) => {
      const value = optional(name);
      if (value === undefined) return undefined;
      const full = path.resolve(path.dirname(file), value);
      try {
        return fs.readFileSync(full, 'utf8');
      } catch (error) {
        throw new BanksFileError(
          `${where}: "${name}" cannot be read (${full}): ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
        );
      }
    };
    const baseUrl = url('base_url', field('base_url'));
    const clientId = field('client_id');
    const method = optional('token_endpoint_auth_method') ?? 'client_secret_basic';
    let auth: LiveBankAuth;
    if (method === 'client_secret_basic') {
      auth = { method, clientSecret: field('client_secret') };
    } else if (method === 'private_key_jwt') {
      const pem = readFile('private_key_file');
      if (pem === undefined) throw new BanksFileError(`${where}: private_key_jwt needs "private_key_file"`);
      let privateKey: KeyObject;
      try {
        privateKey = loadPrivateKey(pem);
      } catch (error) {
        throw new BanksFileError(
          `${where}: "private_key_file" is not a usable private key: ${(error as Error).message}`,
        );
      }
      const keyId = optional('key_id');
      auth = { method, privateKey, ...(keyId && { keyId }) };
    } else {
      throw new BanksFileError(
        `${where}: "token_endpoint_auth_method" must be client_secret_basic or private_key_jwt, got ${JSON.stringify(method)}`,
      );
    }
    const cert = readFile('tls_cert_file');
    const key = readFile('tls_key_file');
    if ((cert === undefined) !== (key === undefined))
      throw new BanksFileError(`${where}: mutual TLS needs both "tls_cert_file" and "tls_key_file"`);
    const ca = readFile('ca_file');
    const tls = cert || ca ? { ...(cert && { cert }), ...(key && { key }), ...(ca && { ca }) } : null;
    return {
      id,
      name: field('name'),
      baseUrl,
      tokenUrl: url('token_url', optional('token_url') ?? `${baseUrl}/token`),
      authorizeUrl: url('authorize_url', optional('authorize_url') ?? `${baseUrl}/authorize`),
      clientId,
      auth,
      tls,
    };
  });
}
