import type { ExecRequest, WireExecResult } from "./types.js";
import { BodyStream, fromBase64, lines, text, bytes } from "./streams.js";
import { linkedAbort, sandboxPath, type CallOptions, type Transport } from "./transport.js";

/**
 * The result of a command run to completion, decoded: `stdoutBytes` and
 * `stderrBytes` hold exactly the bytes the command wrote (the server sends
 * output that is not UTF-8 as base64, marked by `stdout_encoding`), and
 * `stdout` and `stderr` the same as text (invalid UTF-8 replaced by U+FFFD).
 * A program that could not start is not an error: it is exit code 127 or 126
 * with `error` set.
 */
export interface ExecResult extends Omit<WireExecResult, "stdout" | "stderr" | "stdout_encoding" | "stderr_encoding"> {
  stdout: string;
  stderr: string;
  stdoutBytes: Uint8Array;
  stderrBytes: Uint8Array;
}

/** A command: its argv, or the whole request (env, cwd, stdin, timeout_ms…). */
export type Command = string[] | ExecRequest;

/** Turns a command into a request. */
export function execRequest(cmd: Command): ExecRequest {
  return Array.isArray(cmd) ? { cmd } : cmd;
}

function decodeOutput(name: string, s: string, encoding?: string): Uint8Array {
  switch (encoding ?? "") {
    case "":
    case "utf8":
      return bytes(s);
    case "base64":
      return fromBase64(s);
  }
  throw new Error(`hutch: exec ${name}: unknown encoding ${JSON.stringify(encoding)}`);
}

/** Decodes an ExecResult as the server sent it (see ExecResult). */
export function decodeExecResult(w: WireExecResult): ExecResult {
  const { stdout_encoding, stderr_encoding, ...rest } = w;
  const stdoutBytes = decodeOutput("stdout", w.stdout, stdout_encoding);
  const stderrBytes = decodeOutput("stderr", w.stderr, stderr_encoding);
  return {
    ...rest,
    stdout: stdout_encoding === "base64" ? text(stdoutBytes) : w.stdout,
    stderr: stderr_encoding === "base64" ? text(stderrBytes) : w.stderr,
    stdoutBytes,
    stderrBytes,
  };
}

/** One event of a streamed command: an output chunk, or the exit (the last). */
export type ExecEvent =
  | { type: "stdout" | "stderr"; data: Uint8Array }
  | { type: "exit"; exit: ExecResult };

/** Runs a command to completion (POST /v1/sandboxes/{id}/exec). */
export async function exec(t: Transport, id: string, cmd: Command, opts: CallOptions = {}): Promise<ExecResult> {
  const w = await t.json<WireExecResult>({
    method: "POST",
    path: sandboxPath(id, "exec"),
    json: execRequest(cmd),
    signal: opts.signal,
  });
  return decodeExecResult(w);
}

/** Starts a command and streams its output (POST /v1/sandboxes/{id}/exec/stream, NDJSON). */
export async function execStream(t: Transport, id: string, cmd: Command, opts: CallOptions = {}): Promise<ExecStream> {
  const { ctrl, done } = linkedAbort(opts.signal);
  try {
    const resp = await t.send({
      method: "POST",
      path: sandboxPath(id, "exec", "stream"),
      json: execRequest(cmd),
      accept: "application/x-ndjson",
      signal: ctrl.signal,
    });
    return new ExecStream(resp.body!, ctrl, done);
  } catch (e) {
    done();
    throw e;
  }
}

/**
 * A running command's output: "stdout" and "stderr" chunks in the order the
 * server saw them, then one "exit" event with the result. Iterate it once
 * with `for await`; close() (or the signal given at the start) ends it, and
 * the server sees the client go away. Events of types this SDK does not know
 * are skipped.
 */
export class ExecStream extends BodyStream<ExecEvent> {
  #body: ReadableStream<Uint8Array>;
  /** The exit event's result, once the loop has seen it. */
  result?: ExecResult;

  /** @internal */
  constructor(body: ReadableStream<Uint8Array>, ctrl: AbortController, unlink: () => void) {
    super(ctrl, unlink);
    this.#body = body;
  }

  protected async *read(): AsyncGenerator<ExecEvent> {
    for await (const line of lines(this.#body)) {
      if (line.trim() === "") continue;
      let ev: { type?: string; data?: string; exit?: WireExecResult };
      try {
        ev = JSON.parse(line);
      } catch (e) {
        throw new Error(`hutch: exec stream: bad event: ${(e as Error).message}`);
      }
      if (ev.type === "stdout" || ev.type === "stderr") {
        yield { type: ev.type, data: ev.data ? fromBase64(ev.data) : new Uint8Array(0) };
      } else if (ev.type === "exit") {
        if (!ev.exit) throw new Error("hutch: exec stream: exit event without a result");
        this.result = decodeExecResult(ev.exit);
        yield { type: "exit", exit: this.result };
        return;
      }
    }
    throw new Error("hutch: exec stream ended before the exit event");
  }

  /**
   * Reads the whole stream: every stdout and stderr byte, in order, and the
   * result.
   */
  async collect(): Promise<ExecResult> {
    const out: Uint8Array[] = [];
    const err: Uint8Array[] = [];
    for await (const ev of this) {
      if (ev.type === "stdout") out.push(ev.data);
      else if (ev.type === "stderr") err.push(ev.data);
    }
    const stdoutBytes = concat(out);
    const stderrBytes = concat(err);
    return { ...this.result!, stdoutBytes, stderrBytes, stdout: text(stdoutBytes), stderr: text(stderrBytes) };
  }
}

/** Joins byte arrays. */
export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
