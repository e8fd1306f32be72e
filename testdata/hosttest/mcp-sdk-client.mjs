// mcp-sdk-client.mjs drives an MCP stdio server with the official MCP
// TypeScript SDK client (@modelcontextprotocol/sdk).
//
// Usage: node mcp-sdk-client.mjs COMMAND [ARG...]
//
// The SDK's stdio transport starts COMMAND ARG... with this process's
// environment; the server's stderr goes to this process's stderr. The first
// line on stdout describes the connection:
//
//   {"op":"connect","ok":true,"serverInfo":{...},"capabilities":{...},
//    "instructions":"...","pid":N}
//
// Then each line on stdin is one step, a JSON object, and gets one JSON line
// on stdout, {"op":OP,"ok":true,...} or {"op":OP,"ok":false,"error":{...}}:
//
//   {"op":"listTools"}                         -> "tools": [...]
//   {"op":"call","name":N,"args":{...}}        -> "text", "isError", "content"
//   {"op":"callUntil","name":N,"args":{...},"contains":S,
//    "timeoutMs":10000,"intervalMs":200}       -> as call, plus "attempts";
//                                                 calls until text contains S
//   {"op":"notifications"}                     -> "notifications" received
//                                                 since the last such step
//   {"op":"close"}                             -> "ms" the close took
//
// "call" and "callUntil" take "requestTimeoutMs" (default 30000) for each
// request. A failed step does not end the script; a failed connection, a bad
// step line or a server that exits early does, with status 1 and the error
// on stderr. At the end of stdin the client closes, as for "close".
//
// The SDK is imported by package name, so this file must be run from a
// folder whose node_modules holds it.

import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
if (!command) {
  fail("usage: node mcp-sdk-client.mjs COMMAND [ARG...]");
}

function fail(message) {
  process.stderr.write(`mcp-sdk-client: ${message}\n`);
  process.exit(1);
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

function errorOf(err) {
  return { message: String(err?.message ?? err), code: err?.code ?? null, data: err?.data ?? null };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const notifications = [];
let closing = false;

const client = new Client({ name: "interlink-hosttest", version: "0.0.0" }, { capabilities: {} });
client.fallbackNotificationHandler = async (n) => {
  notifications.push(n);
};
client.onclose = () => {
  if (!closing) {
    fail("the server closed the connection");
  }
};

const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
try {
  await client.connect(transport);
} catch (err) {
  fail(`connect: ${err?.message ?? err}`);
}
emit({
  op: "connect",
  ok: true,
  serverInfo: client.getServerVersion() ?? null,
  capabilities: client.getServerCapabilities() ?? null,
  instructions: client.getInstructions() ?? null,
  pid: transport.pid,
});

async function call(step) {
  const result = await client.callTool(
    { name: step.name, arguments: step.args ?? {} },
    undefined,
    { timeout: step.requestTimeoutMs ?? 30000 },
  );
  const content = result.content ?? [];
  const text = content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
  return { text, isError: result.isError === true, content };
}

async function callUntil(step) {
  const deadline = Date.now() + (step.timeoutMs ?? 10000);
  for (let attempts = 1; ; attempts++) {
    const result = await call(step);
    if (result.text.includes(step.contains)) {
      return { ...result, attempts };
    }
    if (Date.now() >= deadline) {
      const err = new Error(`no result containing ${JSON.stringify(step.contains)} after ${attempts} calls`);
      err.data = result;
      throw err;
    }
    await sleep(step.intervalMs ?? 200);
  }
}

async function close() {
  const start = Date.now();
  closing = true;
  await client.close();
  return { ms: Date.now() - start };
}

const ops = {
  listTools: async () => ({ tools: (await client.listTools()).tools }),
  call,
  callUntil,
  notifications: async () => ({ notifications: notifications.splice(0) }),
  close,
};

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (line.trim() === "") {
    continue;
  }
  let step;
  try {
    step = JSON.parse(line);
  } catch (err) {
    fail(`bad step ${JSON.stringify(line)}: ${err.message}`);
  }
  const op = ops[step?.op];
  if (!op) {
    fail(`unknown op in step ${line}`);
  }
  try {
    emit({ op: step.op, ok: true, ...(await op(step)) });
  } catch (err) {
    emit({ op: step.op, ok: false, error: errorOf(err) });
  }
  if (step.op === "close") {
    process.exit(0);
  }
}
await close();
process.exit(0);
