import type { FastifyRequest } from 'fastify';
import { AppError, invalidParam } from '../shared/errors.ts';

// Two checks on every input before anything else reads it, on every route:
// - nesting deeper than MAX_JSON_DEPTH is refused: no input of ours nests beyond a few levels, and
//   every later walk (validation, logging, storage) would otherwise pay for an attacker's 20,000;
// - a NUL character is refused, naming the field: PostgreSQL text cannot hold one (SQLite can),
//   so it would be a 500 on one engine and stored junk on the other.
// The walk is iterative, so no input can exhaust the stack, and a path is built only for the
// field it reports.

export const MAX_JSON_DEPTH = 32;

export type InputProblem = { kind: 'too_deep' } | { kind: 'nul'; field: string };

type Frame = { value: unknown; depth: number; parent: Frame | null; key: string };

function pathOf(frame: Frame): string[] {
  const path: string[] = [];
  for (let at: Frame | null = frame; at && at.parent; at = at.parent) path.unshift(at.key);
  return path;
}

/** The first problem of a parsed input (a body, a query, params), or null. */
export function inspectInput(input: unknown, maxDepth = MAX_JSON_DEPTH): InputProblem | null {
  const stack: Frame[] = [{ value: input, depth: 0, parent: null, key: '' }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const { value } = frame;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return { kind: 'nul', field: pathOf(frame).join('.') };
      continue;
    }
    if (!value || typeof value !== 'object') continue;
    if (frame.depth >= maxDepth) return { kind: 'too_deep' };
    const entries = Array.isArray(value) ? value.map((inner, i) => [String(i), inner] as const) : Object.entries(value);
    // Pushed in reverse so the first field is reported first.
    for (let i = entries.length - 1; i >= 0; i -= 1) {
      const [key, inner] = entries[i];
      const child: Frame = { value: inner, depth: frame.depth + 1, parent: frame, key };
      if (key.includes('\u0000')) return { kind: 'nul', field: [...pathOf(frame), key.replace(/\u0000/g, '\\u0000')].join('.') };
      stack.push(child);
    }
  }
  return null;
}

export const TOO_DEEP_MESSAGE = `The body is nested too deeply: at most ${MAX_JSON_DEPTH} levels of objects and arrays`;

export function refuseNulCharacters(request: FastifyRequest): void {
  for (const part of [request.params, request.query, request.body]) {
    const problem = inspectInput(part);
    if (!problem) continue;
    if (problem.kind === 'too_deep') throw new AppError('bad_request.invalid_json', TOO_DEEP_MESSAGE, {});
    const field = problem.field || 'body';
    throw invalidParam(field, `${field} must not contain NUL (\\u0000) characters`);
  }
}
