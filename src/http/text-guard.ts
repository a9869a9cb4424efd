import type { FastifyRequest } from 'fastify';
import { invalidParam } from '../shared/errors.ts';

// PostgreSQL text cannot hold a NUL character (SQLite can), so one in any input would be a 500 on
// one engine and stored junk on the other. Refused up front, on every route, naming the field.

function findNul(value: unknown, path: string[]): string[] | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      const found = findNul(value[i], [...path, String(i)]);
      if (found) return found;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (key.includes('\u0000')) return [...path, key.replace(/\u0000/g, '\\u0000')];
      const found = findNul(inner, [...path, key]);
      if (found) return found;
    }
  }
  return null;
}

export async function refuseNulCharacters(request: FastifyRequest): Promise<void> {
  for (const part of [request.params, request.query, request.body]) {
    const path = findNul(part, []);
    if (path) {
      const field = path.join('.') || 'body';
      throw invalidParam(field, `${field} must not contain NUL (\\u0000) characters`);
    }
  }
}
