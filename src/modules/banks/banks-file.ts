import fs from 'node:fs';

// BANKS_FILE: the live banks this deployment is connected to. JSON, either an array or
// { "banks": [...] }, each entry:
//   { "id": "anz", "name": "ANZ", "base_url": "https://…", "client_id": "…", "client_secret": "…" }
// Read and checked at start; any problem is one line naming BANKS_FILE.

export type LiveBank = { id: string; name: string; baseUrl: string; clientId: string; clientSecret: string };

export class BanksFileError extends Error {}

export function readBanksFile(file: string): LiveBank[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new BanksFileError(`BANKS_FILE cannot be read (${file}): ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
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
  if (!Array.isArray(list)) throw new BanksFileError(`BANKS_FILE must hold a JSON array of banks or { "banks": [...] } (${file})`);
  const seen = new Set<string>();
  return list.map((entry, index) => {
    const where = `BANKS_FILE entry ${index + 1} (${file})`;
    if (typeof entry !== 'object' || entry === null) throw new BanksFileError(`${where} must be an object`);
    const field = (name: string) => {
      const value = (entry as Record<string, unknown>)[name];
      if (typeof value !== 'string' || value.trim() === '') throw new BanksFileError(`${where} needs "${name}" as a non-empty string`);
      return value.trim();
    };
    const id = field('id');
    if (!/^[a-z0-9][a-z0-9_-]{0,39}$/.test(id)) throw new BanksFileError(`${where}: "id" must be lower-case letters, digits, - or _, got ${JSON.stringify(id)}`);
    if (seen.has(id)) throw new BanksFileError(`${where}: bank id ${JSON.stringify(id)} appears twice`);
    seen.add(id);
    const baseUrl = field('base_url');
    let url: URL;
    try {
      url = new URL(baseUrl);
    } catch {
      throw new BanksFileError(`${where}: "base_url" must be a URL, got ${JSON.stringify(baseUrl)}`);
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname))) {
      throw new BanksFileError(`${where}: "base_url" must use https (http only on localhost), got ${JSON.stringify(baseUrl)}`);
    }
    return { id, name: field('name'), baseUrl: baseUrl.replace(/\/+$/, ''), clientId: field('client_id'), clientSecret: field('client_secret') };
  });
}
