// Node MCP clients answering guarded-exchange's confirmation form, run by
// cmd/guarded-exchange/confirm_form_test.go:
//   node confirm.mjs sdk BIN     @modelcontextprotocol/sdk (2025-11-25): elicitation/create
//   node confirm.mjs client BIN  @modelcontextprotocol/client (2026-07-28): MRTR
// It starts BIN serve over stdio (the environment names the home), places
// one order per behaviour of the human (accept, decline, cancel, unticked,
// never), then lists the open orders, and prints one JSON report.
import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as V1Stdio } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Client as V2Client } from "@modelcontextprotocol/client";
import { StdioClientTransport as V2Stdio } from "@modelcontextprotocol/client/stdio";

const [, , which, bin] = process.argv;
const behaviours = ["accept", "decline", "cancel", "unticked", "never"];
let current = "accept";
const forms = [];

async function answer(req) {
  forms.push({ behaviour: current, message: req.params.message, schema: req.params.requestedSchema });
  switch (current) {
    case "accept":
      return { action: "accept", content: { approve: true } };
    case "decline":
      return { action: "decline" };
    case "cancel":
      return { action: "cancel" };
    case "unticked":
      return { action: "accept", content: { approve: false } };
    default:
      return new Promise(() => {}); // never answers
  }
}

const info = { name: "confirm-node-" + which, version: "0" };
const caps = { capabilities: { elicitation: { form: {} } } };
let client, transport, call, negotiated = "";
const opts = { command: bin, args: ["serve"], env: process.env, stderr: "ignore" };
if (which === "sdk") {
  client = new V1Client(info, caps);
  client.setRequestHandler(ElicitRequestSchema, answer);
  transport = new V1Stdio(opts);
  // The v1 client hands the negotiated version to a transport that asks.
  transport.setProtocolVersion = (v) => { negotiated = v; };
  call = (params, timeout) => client.callTool(params, undefined, { timeout });
} else if (which === "client") {
  client = new V2Client(info, { ...caps, versionNegotiation: { mode: "auto" } });
  client.setRequestHandler("elicitation/create", answer);
  transport = new V2Stdio(opts);
  call = (params, timeout) => client.callTool(params, { timeout });
} else {
  console.error("usage: node confirm.mjs sdk|client BIN");
  process.exit(2);
}
await client.connect(transport);
const protocol = which === "client" ? client.getNegotiatedProtocolVersion() : negotiated;
const report = { client: which, protocol, calls: {}, forms, openOrders: [], neverStatus: "" };
for (const [i, b] of behaviours.entries()) {
  current = b;
  const args = { symbol: "BTCUSDT", category: "linear", side: "Buy", order_type: "Limit", qty: "0.01", price: String(30000 + i) };
  try {
    // A client whose own handler never answers waits forever on MRTR
    // (the server holds nothing open): give up after the TTL and more.
    const res = await Promise.race([
      call({ name: "place_order", arguments: args }, 25000),
      new Promise((_, reject) => setTimeout(() => reject(new Error("gave up waiting for the human")), 15000)),
    ]);
    report.calls[b] = { isError: !!res.isError, structured: res.structuredContent ?? null, text: res.content?.[0]?.text ?? "" };
  } catch (e) {
    report.calls[b] = { error: String(e?.message ?? e) || "error" };
  }
}
// What became of the confirmation nobody answered, as the agent sees it.
const never = forms.find((f) => f.behaviour === "never");
const id = never?.message.match(/cf_[0-9a-f]{24}/)?.[0];
if (id) {
  const st = await call({ name: "get_confirmation_status", arguments: { confirmation_id: id } }, 25000);
  report.neverStatus = st.structuredContent?.status ?? "";
}
const oo = await call({ name: "get_open_orders", arguments: { category: "linear", symbol: "BTCUSDT" } }, 25000);
report.openOrders = (oo.structuredContent?.orders ?? []).map((o) => o.price);
console.log(JSON.stringify(report));
await client.close();
process.exit(0);
