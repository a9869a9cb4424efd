import type { FastifyRequest } from 'fastify';
import { AppError, invalidParam } from '../shared/errors.ts';

// Two checks on every input before anything else reads it, on every route:
// - nesting deeper than MAX_JSON_DEPTH is refused: no input of ours nests beyond a few levels, and
//   every later walk (validation, logging, storage) would otherwise pay for an attacker's 20,000;
// - a NUL character is refused, naming the field: PostgreSQL text cannot hold one (SQLite can),
//   so it would be a 500 on one engine and stored junk on the other;
// - so is half of a UTF-16 surrogate pair (JSON's "\ud800" alone): neither engine stores one, so
//   what was stored (U+FFFD) would differ from what the create and its replay answered.
// The walk is iterative, so no input can exhaust the stack, and a path is built only for the
// field it reports.

export const MAX_JSON_DEPTH = 32;

export type InputProblem = { kind: 'too_deep' } | { kind: 'nul' | 'lone_surrogate'; field: string };

/** A problem of one piece of text (a value or a field's name), or null. */
function textProblem(text: string): 'nul' | 'lone_surrogate' | null {
  if (text.includes('\u0000')) return 'nul';
  return text.isWellFormed() ? null : 'lone_surrogate';
}

type Frame = { value: unknown; depth: number; parent: Frame | null; key: string };

function pathOf(frame: Frame): string[] {
  const path: string[] = [];
  for (let at: Frame | null = frame; at?.parent; at = at.parent) path.unshift(at.key);
  return path;
}

/**
 * A flat object of strings without NUL: a route's params, most query strings, on every call.
 * Checked in place; anything else (a NUL, a nested value) takes the walk, which names the field.
 */
function isCleanFlatStrings(input: unknown): boolean {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return false;
  for (const key in input) {
    if (!Object.hasOwn(input, key)) return false;
    const value = (input as Record<string, unknown>)[key];
    if (typeof value !== 'string' || textProblem(value) || textProblem(key)) return false;
  }
  return true;
}

/** The first problem of a parsed input (a body, a query, params), or null. */
export function inspectInput(input: unknown, maxDepth = MAX_JSON_DEPTH): InputProblem | null {
  if (maxDepth >= 1 && isCleanFlatStrings(input)) return null;
  const stack: Frame[] = [{ value: input, depth: 0, parent: null, key: '' }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const { value } = frame;
    // A field's name before its value, so a field is reported in the order the input gives it.
    const keyProblem = frame.parent ? textProblem(frame.key) : null;
    if (frame.parent && keyProblem) {
      // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what this guard looks for
      const shown = frame.key.toWellFormed().replace(/\u0000/g, '\\u0000');
      return { kind: keyProblem, field: [...pathOf(frame.parent), shown].join('.') };
    }
    if (typeof value === 'string') {
      const problem = textProblem(value);
      if (problem) return { kind: problem, field: pathOf(frame).join('.') };
      continue;
    }
    if (!value || typeof value !== 'object') continue;
    if (frame.depth >= maxDepth) return { kind: 'too_deep' };
    const entries = Array.isArray(value) ? value.map((inner, i) => [String(i), inner] as const) : Object.entries(value);
    // Pushed in reverse so the first field is reported first.
    for (let i = entries.length - 1; i >= 0; i -= 1) {
      const [key, inner] = entries[i];
      stack.push({ value: inner, depth: frame.depth + 1, parent: frame, key });
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
    if (problem.kind === 'lone_surrogate')
      throw invalidParam(field, `${field} must be well-formed Unicode: it holds half of a surrogate pair`);
    throw invalidParam(field, `${field} must not contain NUL (\\u0000) characters`);
  }
}
