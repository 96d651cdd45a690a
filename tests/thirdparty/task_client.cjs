// A task-capable host (the TypeScript SDK's client): runs one tool as a task through callToolStream and prints
// each message it yields as one JSON line. Usage: node task_client.cjs TOOL ARGS_JSON -- COMMAND [ARGS…]
// (a COMMAND that is an http:// URL is reached over Streamable HTTP instead). With SAMPLING_REPLY set, it also
// declares sampling and answers every sampling/createMessage with that text.
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { CreateMessageRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

async function main() {
  const [tool, argsJson, dashes, command, ...args] = process.argv.slice(2);
  if (dashes !== "--" || !command) throw new Error("usage: task_client.cjs TOOL ARGS_JSON -- COMMAND [ARGS…]");
  const transport = command.startsWith("http://")
    ? new StreamableHTTPClientTransport(new URL(command))
    : new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
  const reply = process.env.SAMPLING_REPLY;
  const capabilities = { tasks: { list: {}, cancel: {}, requests: {} }, ...(reply ? { sampling: {} } : {}) };
  const client = new Client({ name: "ts-task-host", version: "1.0.0" }, { capabilities });
  if (reply) {
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({
      role: "assistant",
      content: { type: "text", text: reply },
      model: "ts-task-host",
    }));
  }
  await client.connect(transport);
  await client.listTools();
  const started = Date.now();
  const stream = client.experimental.tasks.callToolStream({ name: tool, arguments: JSON.parse(argsJson) });
  for await (const message of stream) {
    const line = { type: message.type, elapsed_ms: Date.now() - started };
    if (message.task) line.task = message.task;
    if (message.result) line.result = message.result;
    if (message.error) line.error = String(message.error.message || message.error);
    console.log(JSON.stringify(line));
  }
  await client.close();
}

main().catch((error) => {
  console.log(JSON.stringify({ type: "fatal", error: String(error && error.message ? error.message : error) }));
  process.exit(1);
});
