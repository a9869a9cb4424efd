// Writes docs/openapi.json from the route schemas (npm run openapi). A test fails when the
// committed document and what the routes generate differ, so the published contract cannot drift.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { createRuntime } from '../src/runtime.ts';

export const OPENAPI_FILE = path.resolve('docs/openapi.json');

export async function generateOpenApi(): Promise<string> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tono-openapi-'));
  const config = { ...loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO_MERCHANT: 'false' }), workers: false };
  const runtime = await createRuntime(config, { log: pino({ level: 'silent' }) });
  try {
    await runtime.app.ready();
    return `${JSON.stringify(runtime.app.swagger(), null, 2)}\n`;
  } finally {
    await runtime.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  fs.writeFileSync(OPENAPI_FILE, await generateOpenApi());
  process.stdout.write(`wrote ${path.relative(process.cwd(), OPENAPI_FILE)}\n`);
}
