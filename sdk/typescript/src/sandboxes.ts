import type {
  CreateSandboxRequest,
  CreateSnapshotRequest,
  ForkRequest,
  ForkResult,
  SandboxInfo,
  SandboxList,
  SandboxMetrics,
  SandboxState,
  Snapshot,
} from "./types.js";
import { Events } from "./events.js";
import { exec, execStream, type Command, type ExecResult, type ExecStream } from "./exec.js";
import { Files } from "./files.js";
import { NetworkPolicies } from "./network.js";
import { Previews } from "./previews.js";
import { Processes } from "./processes.js";
import { attachTerminal, openTerminal, type Terminal, type TerminalOptions } from "./terminal.js";
import { need, sandboxPath, type CallOptions, type Transport } from "./transport.js";

/** Filters and pages GET /v1/sandboxes. */
export interface ListOptions extends CallOptions {
  /** Keeps only sandboxes in this state. */
  state?: SandboxState;
  /** Keeps only sandboxes carrying every one of these labels. */
  labels?: Record<string, string>;
  /** The page size; unset is the server's default. */
  limit?: number;
  /** Continues from a previous page's next_cursor. */
  cursor?: string;
}

/** The sandboxes of the caller's tenant (/v1/sandboxes). */
export class Sandboxes {
  readonly #t: Transport;

  /** @internal */
  constructor(t: Transport) {
    this.#t = t;
  }

  /** Creates a sandbox (every field optional) and returns it as the server reports it. */
  async create(req: CreateSandboxRequest = {}, opts: CallOptions = {}): Promise<Sandbox> {
    const info = await this.#t.json<SandboxInfo>({ method: "POST", path: "/v1/sandboxes", json: req, signal: opts.signal });
    return new Sandbox(this.#t, info.id, info);
  }

  /** Returns one sandbox; an unknown id is a HutchError with code sandbox_not_found. */
  async get(id: string, opts: CallOptions = {}): Promise<Sandbox> {
    const info = await this.#t.json<SandboxInfo>({ method: "GET", path: sandboxPath(id), signal: opts.signal });
    return new Sandbox(this.#t, id, info);
  }

  /** A handle on sandbox id, without a request (its `info` is unset until refresh()). */
  handle(id: string): Sandbox {
    return new Sandbox(this.#t, need(id, "sandbox id"));
  }

  /** Returns one page of the listing; pass its next_cursor as `cursor` for the next. */
  listPage(opts: ListOptions = {}): Promise<SandboxList> {
    const labels = Object.keys(opts.labels ?? {})
      .sort()
      .map((k) => `${k}=${opts.labels![k]}`);
    return this.#t.json({
      method: "GET",
      path: "/v1/sandboxes",
      query: { state: opts.state, label: labels, limit: opts.limit, cursor: opts.cursor },
      signal: opts.signal,
    });
  }

  /**
   * Iterates over every sandbox matching opts, fetching page after page
   * (opts.limit is the page size):
   *
   * ```ts
   * for await (const sb of hutch.sandboxes.list({ state: "running" })) console.log(sb.id);
   * ```
   */
  async *list(opts: ListOptions = {}): AsyncGenerator<SandboxInfo> {
    let cursor = opts.cursor;
    const seen = new Set<string>();
    for (;;) {
      const page = await this.listPage({ ...opts, cursor });
      yield* page.sandboxes;
      if (!page.next_cursor) return;
      if (seen.has(page.next_cursor)) throw new Error(`hutch: sandbox listing repeats cursor ${page.next_cursor}`);
      seen.add(page.next_cursor);
      cursor = page.next_cursor;
    }
  }

  /** Destroys a sandbox and everything in it. */
  async delete(id: string, opts: CallOptions = {}): Promise<void> {
    await this.#t.json({ method: "DELETE", path: sandboxPath(id), signal: opts.signal });
  }

  /** Stops a running sandbox, keeping its files. */
  stop(id: string, opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.#post(id, "stop", undefined, opts);
  }

  /** Starts a stopped sandbox again. */
  start(id: string, opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.#post(id, "start", undefined, opts);
  }

  /** Freezes a running sandbox's processes, its memory kept. */
  pause(id: string, opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.#post(id, "pause", undefined, opts);
  }

  /** Thaws a paused sandbox. */
  resume(id: string, opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.#post(id, "resume", undefined, opts);
  }

  /** Gives a sandbox a lifetime of timeoutS seconds from now (from its next start when stopped). */
  setTimeout(id: string, timeoutS: number, opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.#post(id, "timeout", { timeout_s: timeoutS }, opts);
  }

  /** Keeps idle actions off the sandbox for forS seconds (0 ends a keepalive). */
  keepalive(id: string, forS: number, opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.#post(id, "keepalive", { for_s: forS }, opts);
  }

  #post(id: string, op: string, body: unknown, opts: CallOptions): Promise<SandboxInfo> {
    return this.#t.json({ method: "POST", path: sandboxPath(id, op), json: body, signal: opts.signal });
  }
}

/**
 * One sandbox: its calls without the id, and `info`, the sandbox as last
 * reported (by create, get, refresh or a lifecycle call).
 */
export class Sandbox {
  readonly id: string;
  /** The sandbox as the server last reported it. */
  info?: SandboxInfo;
  /** Its files, tar archives and watches. */
  readonly files: Files;
  /** Its background processes. */
  readonly processes: Processes;
  /** Its event log. */
  readonly events: Events;
  /** Its egress policy. */
  readonly network: NetworkPolicies;
  /** Its previews (ports served by the server). */
  readonly previews: Previews;
  readonly #t: Transport;
  readonly #sandboxes: Sandboxes;

  /** @internal */
  constructor(t: Transport, id: string, info?: SandboxInfo) {
    this.#t = t;
    this.id = id;
    this.info = info;
    this.files = new Files(t, id);
    this.processes = new Processes(t, id);
    this.events = new Events(t, sandboxPath(id, "events"));
    this.network = new NetworkPolicies(t, id);
    this.previews = new Previews(t, id);
    this.#sandboxes = new Sandboxes(t);
  }

  #keep(p: Promise<SandboxInfo>): Promise<SandboxInfo> {
    return p.then((info) => (this.info = info));
  }

  /**
   * Runs a command to completion and returns its exit code and output,
   * decoded (see ExecResult). The output is bounded by the server (the
   * *_truncated fields).
   */
  exec(cmd: Command, opts: CallOptions = {}): Promise<ExecResult> {
    return exec(this.#t, this.id, cmd, opts);
  }

  /** Runs a command and streams its output as it is produced (see ExecStream). */
  execStream(cmd: Command, opts: CallOptions = {}): Promise<ExecStream> {
    return execStream(this.#t, this.id, cmd, opts);
  }

  /** Opens a terminal (a PTY over a WebSocket) running opts.cmd, the login shell by default. */
  terminal(opts: TerminalOptions = {}): Promise<Terminal> {
    return openTerminal(this.#t, this.id, opts);
  }

  /** Attaches a terminal to a running process, replaying its output from cursor. */
  attach(pid: number, opts: CallOptions & { cursor?: number } = {}): Promise<Terminal> {
    return attachTerminal(this.#t, this.id, pid, opts.cursor ?? 0, opts.signal);
  }

  /** Fetches the sandbox again into `info`. */
  refresh(opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.#keep(this.#t.json({ method: "GET", path: sandboxPath(this.id), signal: opts.signal }));
  }

  /** Stops it, keeping its files. */
  stop(opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.#keep(this.#sandboxes.stop(this.id, opts));
  }

  /** Starts it again after a stop. */
  start(opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.#keep(this.#sandboxes.start(this.id, opts));
  }

  /** Freezes its processes. */
  pause(opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.#keep(this.#sandboxes.pause(this.id, opts));
  }

  /** Thaws it. */
  resume(opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.#keep(this.#sandboxes.resume(this.id, opts));
  }

  /** Gives it a lifetime of timeoutS seconds from now. */
  setTimeout(timeoutS: number, opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.#keep(this.#sandboxes.setTimeout(this.id, timeoutS, opts));
  }

  /** Keeps idle actions off it for forS seconds. */
  keepalive(forS: number, opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.#keep(this.#sandboxes.keepalive(this.id, forS, opts));
  }

  /** Destroys it and everything in it. */
  kill(opts: CallOptions = {}): Promise<void> {
    return this.#sandboxes.delete(this.id, opts);
  }

  /** What it uses now (CPU, memory, pids, disk, network) and recent samples. */
  metrics(opts: CallOptions = {}): Promise<SandboxMetrics> {
    return this.#t.json({ method: "GET", path: sandboxPath(this.id, "metrics"), signal: opts.signal });
  }

  /** Copies its files into a new snapshot (its processes frozen meanwhile). */
  snapshot(req: CreateSnapshotRequest = {}, opts: CallOptions = {}): Promise<Snapshot> {
    return this.#t.json({ method: "POST", path: sandboxPath(this.id, "snapshots"), json: req, signal: opts.signal });
  }

  /** Gives it exactly a snapshot's files; its processes end and it runs again. */
  restore(snapshot: string, opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.#keep(
      this.#t.json({ method: "POST", path: sandboxPath(this.id, "restore"), json: { snapshot }, signal: opts.signal }),
    );
  }

  /** Starts req.count sandboxes from its files as they are now. */
  async fork(req: ForkRequest, opts: CallOptions = {}): Promise<{ sandboxes: Sandbox[]; pause_ms: number }> {
    const r = await this.#t.json<ForkResult>({ method: "POST", path: sandboxPath(this.id, "fork"), json: req, signal: opts.signal });
    return { sandboxes: r.sandboxes.map((s) => new Sandbox(this.#t, s.id, s)), pause_ms: r.pause_ms };
  }
}
