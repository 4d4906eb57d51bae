// The official MCP TypeScript SDK's client against `botd mcp` over stdio,
// for the end-to-end tests (sdk_client_test.go). Arguments: the SDK's
// directory, then the command to start and its arguments. Standard input:
// a JSON list of calls, {tool, args, timeoutMs} ("#list" lists the tools).
// Standard output: a JSON list of what each call answered, with its time.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [sdkDir, command, ...args] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(`${sdkDir}/dist/esm/${p}`).href);
const { Client } = await load('client/index.js');
const { StdioClientTransport } = await load('client/stdio.js');

const calls = JSON.parse(readFileSync(0, 'utf8'));
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });
const client = new Client({ name: 'botd-sdk-test', version: '1.0.0' });
await client.connect(transport);
const out = [];
for (const c of calls) {
  const t0 = performance.now();
  try {
    if (c.tool === '#list') {
      const r = await client.listTools();
      out.push({ tools: r.tools.map((t) => t.name), ms: performance.now() - t0 });
      continue;
    }
    const r = await client.callTool({ name: c.tool, arguments: c.args ?? {} }, undefined, { timeout: c.timeoutMs ?? 60000 });
    out.push({ isError: !!r.isError, content: r.content, ms: performance.now() - t0 });
  } catch (e) {
    out.push({ thrown: String(e), ms: performance.now() - t0 });
  }
}
await client.close();
process.stdout.write(JSON.stringify(out));
