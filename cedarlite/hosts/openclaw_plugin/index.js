// cedarlite's OpenClaw plugin: every tool call is decided by cedarlite before it runs.
//
// On the first call it starts one long-lived child, `cedarlite serve --stdio ...` (the command
// line of the plugin's `command` setting, which `cedarlite hook openclaw --print-settings`
// writes), and sends it one JSON line per hook event: `openclaw_before_tool_call` with the
// event and its context, and `openclaw_after_tool_call` for each call that ran (loop
// detection). The answer becomes what OpenClaw expects of a before_tool_call handler:
// `{block, blockReason}`, `{params}`, `{requireApproval}` or nothing (allowed as is).
//
// Anything it cannot decide blocks the call with a reason: the child cannot start, exits,
// answers garbage or nothing within the deadline (it is then killed), the configuration or
// rules do not load. The next call starts a new child. No decision takes longer than the
// deadline (`deadlineMs`, default 10 s; OpenClaw fails a handler closed after 15 s).
//
// Plain JavaScript with no dependencies: it runs inside the gateway as it is shipped.

import { spawn } from "node:child_process";

const PLUGIN_ID = "cedarlite";
const DEFAULT_DEADLINE_MS = 10000;
const MAX_ANSWER_CHARS = 16 * 1024 * 1024;
const STDERR_KEEP = 8192;
// After a child that failed to start, calls are blocked at once with its reason for this long
// (a broken rules file does not start a Python process per call).
const START_FAILURE_HOLD_MS = 1000;
// A child that ends within this time of its start failed to start.
const START_WINDOW_MS = 5000;
// The request ids of the calls this plugin let through, kept until their after_tool_call.
const MAX_TRACKED = 4096;
const BLOCKED = "cedarlite: blocked: ";

/** The context without what does not serialize (and is no input to a decision). */
export function serializableContext(ctx) {
  if (ctx === null || typeof ctx !== "object") return {};
  const { abortSignal: _signal, trace: _trace, ...rest } = ctx;
  return rest;
}

/** A short, one-paragraph reason from the service's stderr (its located error). */
function stderrDetail(text) {
  const lines = String(text || "")
    .split("\n")
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== "" && !/^[\s|^~]+$/.test(line));
  if (lines.length === 0) return "";
  const shown = lines.slice(0, 6).join(" / ");
  return `: ${shown.length > 1200 ? `${shown.slice(0, 1200)}...` : shown}`;
}

/** One `cedarlite serve --stdio` child and the requests in flight to it. */
export class DecisionService {
  constructor(command, deadlineMs, logger) {
    this.command = command;
    this.deadlineMs = deadlineMs;
    this.logger = logger;
    this.current = null;
    this.nextId = 1;
    this.pending = new Map();
    this.startFailure = null;
  }

  start() {
    const [file, ...args] = this.command;
    const child = spawn(file, args, {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, PYTHONUNBUFFERED: "1" },
    });
    const state = { child, buffer: "", stderr: "", failed: null, startedAt: Date.now() };
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => this.onData(state, chunk));
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      state.stderr = (state.stderr + chunk).slice(-STDERR_KEEP);
    });
    child.stdin.on("error", () => {}); // a child that died: its exit says why
    child.on("error", (err) => this.fail(state, `cannot start the decision service: ${err.message}`));
    child.on("close", (code, signal) => {
      const how = signal ? `was killed (${signal})` : `exited with code ${code}`;
      this.fail(state, `the decision service ${how}${stderrDetail(state.stderr)}`);
    });
    this.current = state;
    this.logger?.info?.(`[cedarlite] started the decision service (pid ${child.pid})`);
    return state;
  }

  onData(state, chunk) {
    state.buffer += chunk;
    let end = state.buffer.indexOf("\n");
    while (end >= 0 && !state.failed) {
      const line = state.buffer.slice(0, end);
      state.buffer = state.buffer.slice(end + 1);
      this.onLine(state, line);
      end = state.buffer.indexOf("\n");
    }
    if (state.buffer.length > MAX_ANSWER_CHARS) {
      this.kill(state, "the decision service sent an answer longer than the limit");
    }
  }

  onLine(state, line) {
    let answer;
    try {
      answer = JSON.parse(line);
    } catch {
      this.kill(state, "the decision service answered something that is not JSON");
      return;
    }
    const request = answer !== null && typeof answer === "object" ? this.pending.get(answer.id) : undefined;
    if (request === undefined || request.state !== state) {
      this.kill(state, "the decision service answered a request that was not asked");
      return;
    }
    this.pending.delete(answer.id);
    request.resolve(answer);
  }

  fail(state, reason) {
    if (state.failed) return;
    state.failed = reason;
    if (this.current === state) this.current = null;
    if (Date.now() - state.startedAt < START_WINDOW_MS) {
      this.startFailure = { reason, at: Date.now() };
    }
    this.logger?.warn?.(`[cedarlite] ${reason}`);
    for (const [id, request] of this.pending) {
      if (request.state === state) {
        this.pending.delete(id);
        request.reject(new Error(reason));
      }
    }
  }

  kill(state, reason) {
    this.fail(state, reason);
    try {
      state.child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }

  /** Send one request; resolves with the answer, rejects with the reason it has none. */
  request(op, fields) {
    const held = this.startFailure;
    if (this.current === null && held && Date.now() - held.at < START_FAILURE_HOLD_MS) {
      return Promise.reject(new Error(held.reason));
    }
    const id = this.nextId++;
    let line;
    try {
      line = `${JSON.stringify({ id, op, ...fields })}\n`;
    } catch (err) {
      return Promise.reject(new Error(`the call cannot be sent to the decision service: ${err.message}`));
    }
    const state = this.current ?? this.start();
    const deadlineMs = this.deadlineMs;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill(state, `no answer from the decision service within ${deadlineMs} ms (it was stopped)`);
      }, deadlineMs);
      timer.unref?.();
      this.pending.set(id, {
        state,
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      try {
        state.child.stdin.write(line);
      } catch (err) {
        this.kill(state, `cannot write to the decision service: ${err.message}`);
      }
    });
  }

  stop() {
    if (this.current) this.kill(this.current, "the plugin stopped");
  }
}

/** What the before_tool_call handler returns for the service's answer. */
export function toHookResult(answer, event) {
  if (answer === null || typeof answer !== "object") {
    return { block: true, blockReason: `${BLOCKED}the decision service answered no decision` };
  }
  const reason = typeof answer.reason === "string" && answer.reason ? answer.reason : null;
  switch (answer.action) {
    case "allow": {
      const changed = JSON.stringify(answer.params) !== JSON.stringify(event?.params);
      return changed && answer.params !== undefined ? { params: answer.params } : undefined;
    }
    case "ask": {
      const approval = answer.approval && typeof answer.approval === "object" ? answer.approval : {};
      return {
        requireApproval: {
          title: String(approval.title || `cedarlite: approve ${event?.toolName ?? "this call"}?`),
          description: String(approval.description || reason || "A cedarlite policy asks for approval."),
          severity: ["info", "warning", "critical"].includes(approval.severity) ? approval.severity : "warning",
          ...(Number.isFinite(approval.timeoutMs) && approval.timeoutMs > 0 ? { timeoutMs: approval.timeoutMs } : {}),
          // cedarlite does not hear how the person answered: "allow always" would not be kept.
          allowedDecisions: ["allow-once", "deny"],
        },
      };
    }
    case "block":
    default: {
      const why = reason ?? (answer.error?.message ? `${BLOCKED}${answer.error.message}` : null);
      return { block: true, blockReason: why ?? `${BLOCKED}the decision service gave no reason` };
    }
  }
}

function readConfig(config) {
  const command = config?.command;
  if (!Array.isArray(command) || command.length === 0 || !command.every((w) => typeof w === "string" && w)) {
    return { error: "the plugin's `command` setting is missing (run `cedarlite hook openclaw --print-settings`)" };
  }
  const deadline = Number.isInteger(config.deadlineMs) ? config.deadlineMs : DEFAULT_DEADLINE_MS;
  return { command, deadlineMs: Math.min(Math.max(deadline, 100), 12000) };
}

export default {
  id: PLUGIN_ID,
  name: "cedarlite",
  description: "Tool calls decided by cedarlite's Cedar policies before they run",
  register(api) {
    const settings = readConfig(api.pluginConfig);
    const logger = api.logger;
    const service = settings.error ? null : new DecisionService(settings.command, settings.deadlineMs, logger);
    // Calls this plugin let through (or asked about): only their outcomes feed loop detection.
    const letThrough = new Set();

    api.on(
      "before_tool_call",
      async (event, ctx) => {
        if (service === null) return { block: true, blockReason: `${BLOCKED}${settings.error}` };
        let answer;
        try {
          answer = await service.request("openclaw_before_tool_call", {
            event,
            ctx: serializableContext(ctx),
          });
        } catch (err) {
          return { block: true, blockReason: `${BLOCKED}${err.message}` };
        }
        const result = toHookResult(answer, event);
        if (!result?.block && typeof event?.toolCallId === "string") {
          letThrough.add(event.toolCallId);
          if (letThrough.size > MAX_TRACKED) letThrough.delete(letThrough.values().next().value);
        }
        return result;
      },
      { priority: 1000 },
    );

    api.on("after_tool_call", async (event, ctx) => {
      if (service === null || !letThrough.delete(event?.toolCallId)) return;
      if (event?.result?.details?.status === "blocked") return; // another plugin blocked it
      try {
        await service.request("openclaw_after_tool_call", { event, ctx: serializableContext(ctx) });
      } catch {
        // not awaited by OpenClaw; the next before_tool_call reports a dead service
      }
    });

    api.on?.("gateway_stop", () => service?.stop());
  },
};
