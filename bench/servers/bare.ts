// The baseline: a bare Fastify server with a GET route and an echo POST route, no database.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/get', async () => ({ hello: 'world' }));
app.post('/echo', async (request) => request.body);
const url = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ url })}\n`);
