import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';

/** The HTTP server every module's routes are registered on. */
export type App = FastifyInstance<any, any, any, any, TypeBoxTypeProvider>;
