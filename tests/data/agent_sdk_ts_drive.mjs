// Drives agentloop through the TypeScript Claude Agent SDK (tests/test_agent_sdk_typescript.py).
// argv: SCENARIO CLI CWD MODEL; the environment is passed on. Prints one JSON object: what the scenario saw.
import { createSdkMcpServer, query, tool } from "@anthropic-ai/claude-agent-sdk";
import { z } from "zod";

const [scenario, cli, cwd, model] = process.argv.slice(2);
const base = { pathToClaudeCodeExecutable: cli, cwd, model, env: { ...process.env }, stderr: () => {} };

async function collect(q) {
  const out = [];
  for await (const m of q) out.push(m);
  return out;
}

function prompts() {
  // an input stream the scenario feeds, one user message at a time
  const waiting = [];
  let wake = null;
  let done = false;
  return {
    push(text) {
      waiting.push({ type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" });
      if (wake) wake();
    },
    end() { done = true; if (wake) wake(); },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        while (waiting.length) yield waiting.shift();
        if (done) return;
        await new Promise((r) => (wake = r));
        wake = null;
      }
    },
  };
}

const results = (msgs) => msgs.filter((m) => m.type === "result");

const scenarios = {
  async oneShot() {
    const msgs = await collect(query({ prompt: "say hello", options: base }));
    return { types: msgs.map((m) => m.type), result: results(msgs).at(-1) };
  },
  async turns() {
    const input = prompts();
    const q = query({ prompt: input, options: base });
    const seen = [];
    input.push("one");
    for await (const m of q) {
      seen.push(m);
      if (m.type !== "result") continue;
      const n = results(seen).length;
      if (n === 1) input.push("two");
      else if (n === 2) input.push("three");
      else input.end();
    }
    return { results: results(seen).map((r) => [r.result, r.session_id]) };
  },
  async canUseTool() {
    const asked = [];
    const decide = process.env.DECIDE;
    const canUseTool = async (name, input) => {
      asked.push([name, input]);
      return decide === "allow" ? { behavior: "allow", updatedInput: input } : { behavior: "deny", message: "not in this file, please" };
    };
    const input = prompts();
    input.push("change the greeting");
    const q = query({ prompt: input, options: { ...base, canUseTool } });
    const msgs = [];
    for await (const m of q) {
      msgs.push(m);
      if (m.type === "result") input.end();
    }
    const toolResults = msgs.filter((m) => m.type === "user").flatMap((m) => (Array.isArray(m.message.content) ? m.message.content : []));
    return { asked, toolResults, result: results(msgs).at(-1) };
  },
  async interrupt() {
    const input = prompts();
    input.push("take your time");
    const q = query({ prompt: input, options: base });
    const seen = [];
    for await (const m of q) {
      seen.push(m);
      if (m.type === "system" && m.subtype === "init") {
        // the turn starts as soon as the CLI is up (init is its first line): interrupt it while its model call waits
        setTimeout(() => q.interrupt().catch((e) => seen.push({ type: "interrupt_error", error: String(e) })), 2000);
      }
      if (m.type !== "result") continue;
      if (results(seen).length === 1) input.push("and now?");
      else input.end();
    }
    return { results: results(seen).map((r) => [r.subtype, r.result ?? null, r.session_id]), errors: seen.filter((m) => m.type === "interrupt_error") };
  },
  async hook() {
    const seen = [];
    const hooks = { PreToolUse: [{ matcher: "Read", hooks: [async (data) => {
      seen.push(data.tool_name);
      return { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "reading is off today" } };
    }] }] };
    const input = prompts();
    input.push("read it");
    const msgs = [];
    for await (const m of query({ prompt: input, options: { ...base, hooks } })) {
      msgs.push(m);
      if (m.type === "result") input.end();
    }
    const toolResults = msgs.filter((m) => m.type === "user").flatMap((m) => (Array.isArray(m.message.content) ? m.message.content : []));
    return { seen, toolResults };
  },
  async partial() {
    const msgs = await collect(query({ prompt: "hello", options: { ...base, includePartialMessages: true } }));
    return { events: msgs.filter((m) => m.type === "stream_event").map((m) => m.event) };
  },
  async sdkMcpServer() {
    // an in-process MCP server (createSdkMcpServer): the SDK names it in initialize and answers mcp_message for it
    const calls = [];
    const add = tool("add", "add two numbers", { a: z.number(), b: z.number() }, async (args) => {
      calls.push(args);
      return { content: [{ type: "text", text: `the sum is ${args.a + args.b}` }] };
    });
    const options = { ...base, mcpServers: { calc: createSdkMcpServer({ name: "calc", tools: [add] }) }, allowedTools: ["mcp__calc__add"] };
    const input = prompts();
    input.push("add 2 and 40");
    const msgs = [];
    for await (const m of query({ prompt: input, options })) {
      msgs.push(m);
      if (m.type === "result") input.end();
    }
    const toolResults = msgs.filter((m) => m.type === "user").flatMap((m) => (Array.isArray(m.message.content) ? m.message.content : []));
    return { calls, toolResults, result: results(msgs).at(-1) };
  },
  async appendSystemPrompt() {
    const options = { ...base, systemPrompt: { type: "preset", preset: "claude_code", append: "Always answer like a pirate." } };
    const msgs = await collect(query({ prompt: "hello", options }));
    return { result: results(msgs).at(-1) };
  },
};

try {
  process.stdout.write(JSON.stringify(await scenarios[scenario]()) + "\n");
} catch (e) {
  process.stdout.write(JSON.stringify({ error: String(e && e.message ? e.message : e) }) + "\n");
}
process.exit(0);
