// An editor's side of the Agent Client Protocol, made with the protocol's
// TypeScript SDK (its client app over ndJsonStream), driving an agent started
// as a child process. The tests use it to check agentloop acp with a second
// implementation of the protocol beside the Python SDK.
//
// node drive.mjs SCENARIO.json   prints one JSON object on stdout:
//   steps:  per step, {result} or {error: {code, message, data}}
//   wire:   every message both ways, in order, as {from: "client" | "agent", msg}
//   stderr: what the agent wrote on stderr
//
// SCENARIO: {sdk: path of the SDK's entry module, command: [argv...], cwd,
//   env: {extra variables}, steps: [{method, params}], answers: {permission:
//   the option to choose, by id, name or kind ("allow_once"...; "cancel" cancels), elicitation:
//   the response to elicitation/create}, buffers: {path: text} for fs/*}.
// "$sid" anywhere in a step's params is the last session id a step returned.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const scenario = JSON.parse(readFileSync(process.argv[2], "utf8"));
const acp = await import(pathToFileURL(scenario.sdk).href);
const [command, ...args] = scenario.command;
const agent = spawn(command, args, {
  cwd: scenario.cwd,
  env: { ...process.env, ...(scenario.env ?? {}) },
  stdio: ["pipe", "pipe", "pipe"],
});
let stderr = "";
agent.stderr.setEncoding("utf8");
agent.stderr.on("data", (s) => { stderr += s; });

const wire = [];
const base = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const out = base.writable.getWriter();
const stream = {
  readable: base.readable.pipeThrough(new TransformStream({
    transform(msg, ctl) { wire.push({ from: "agent", msg: structuredClone(msg) }); ctl.enqueue(msg); },
  })),
  writable: new WritableStream({
    write(msg) { wire.push({ from: "client", msg: structuredClone(msg) }); return out.write(msg); },
    close() { return out.close(); },
    abort(reason) { return out.abort(reason); },
  }),
};

const answers = scenario.answers ?? {};
const buffers = scenario.buffers ?? {};
const app = acp.client({ name: "agentloop-tests" })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    const want = answers.permission ?? "allow_once";
    if (want === "cancel") return { outcome: { outcome: "cancelled" } };
    const chosen = params.options.find((o) => o.optionId === want) ?? params.options.find((o) => o.name === want)
      ?? params.options.find((o) => o.kind === want) ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: chosen.optionId } };
  })
  .onNotification(acp.methods.client.session.update, () => {})
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    if (!(params.path in buffers)) throw new acp.RequestError(-32002, `no buffer for ${params.path}`);
    return { content: buffers[params.path] };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    buffers[params.path] = params.content;
    return {};
  })
  .onRequest(acp.methods.client.elicitation.create, () => answers.elicitation ?? { action: "decline" });

function withSession(value, sid) {
  return JSON.parse(JSON.stringify(value).replaceAll('"$sid"', JSON.stringify(sid ?? "")));
}

const steps = [];
try {
  await app.connectWith(stream, async (ctx) => {
    let sid;
    for (const step of scenario.steps) {
      try {
        const result = await ctx.request(step.method, withSession(step.params ?? {}, sid));
        if (result && typeof result.sessionId === "string") sid = result.sessionId;
        steps.push({ method: step.method, result: result ?? null });
      } catch (e) {
        steps.push({ method: step.method, error: { code: e.code ?? null, message: String(e.message ?? e), data: e.data ?? null } });
      }
    }
  });
} finally {
  agent.stdin.end();
  await new Promise((resolve) => {
    const timer = setTimeout(() => { agent.kill("SIGKILL"); resolve(); }, 15000);
    agent.on("exit", () => { clearTimeout(timer); resolve(); });
    if (agent.exitCode !== null) { clearTimeout(timer); resolve(); }
  });
}
process.stdout.write(JSON.stringify({ steps, wire, stderr, buffers }) + "\n");
