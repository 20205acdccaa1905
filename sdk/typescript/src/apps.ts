import type {
  App,
  AppList,
  AppProcesses,
  AppRole,
  Checkpoint,
  CheckpointList,
  ConfigEntry,
  ConfigList,
  CreateAppRequest,
  CreateCheckpointRequest,
  CreateTaskRequest,
  PatchAppRequest,
  Preset,
  PromoteResult,
  SetConfigRequest,
  Task,
  TaskList,
  UndoRequest,
  UndoResult,
} from "./types.js";
import type { components } from "./generated/api.js";
import { isHutchError } from "./errors.js";
import { Events } from "./events.js";
import { BodyStream, lines, sse } from "./streams.js";
import { linkedAbort, need, sleep, type CallOptions, type Transport } from "./transport.js";

/** One chunk of a task's log. `seq` is its number: resume after it with `after`. */
export interface TaskLogEntry {
  seq: number;
  stream: "stdout" | "stderr" | "system";
  text: string;
}

/** A line of an app process's log. */
export type AppLogLine = components["schemas"]["AppLogLine"];

/** Reports whether a task status is final: succeeded, failed or cancelled. */
export function taskDone(status: string): boolean {
  return status === "succeeded" || status === "failed" || status === "cancelled";
}

/**
 * Apps (/v1/apps): a named app with a dev and a live sandbox, tasks that run
 * commands in dev, file checkpoints and undo, promotion of dev to live,
 * config and events.
 */
export class Apps {
  readonly #t: Transport;

  /** @internal */
  constructor(t: Transport) {
    this.#t = t;
  }

  /** Lists the server's presets (the `preset` of create). */
  async presets(opts: CallOptions = {}): Promise<Preset[]> {
    const l = await this.#t.json<{ presets: Preset[] }>({ method: "GET", path: "/v1/presets", signal: opts.signal });
    return l.presets;
  }

  /**
   * Starts making an app: it comes back in state "creating" while its
   * sandboxes are made; with wait, resolves once it is no longer creating
   * (check `state`: ready, or failed with `error`). A name in use is
   * app_exists (409), a bad one invalid_app_name, an unknown preset
   * unknown_preset.
   */
  async create(req: CreateAppRequest, opts: CallOptions & { wait?: boolean } = {}): Promise<App> {
    const app = await this.#t.json<App>({ method: "POST", path: "/v1/apps", json: req, signal: opts.signal });
    return opts.wait ? this.waitReady(app.id, opts) : app;
  }

  /** Polls an app until it is no longer creating and returns it: check `state`. */
  waitReady(id: string, opts: CallOptions = {}): Promise<App> {
    return poll(() => this.get(id, opts), (a) => a.state !== "creating", opts.signal);
  }

  /** Returns one app. */
  get(id: string, opts: CallOptions = {}): Promise<App> {
    return this.#t.json({ method: "GET", path: appPath(id), signal: opts.signal });
  }

  /** Lists the caller's apps by name. */
  async list(opts: CallOptions = {}): Promise<App[]> {
    const l = await this.#t.json<AppList>({ method: "GET", path: "/v1/apps", signal: opts.signal });
    return l.apps;
  }

  /** Changes what req sets of an app (public). */
  patch(id: string, req: PatchAppRequest, opts: CallOptions = {}): Promise<App> {
    return this.#t.json({ method: "PATCH", path: appPath(id), json: req, signal: opts.signal });
  }

  /** Deletes an app, its sandboxes, config and history. */
  async delete(id: string, opts: CallOptions = {}): Promise<void> {
    await this.#t.json({ method: "DELETE", path: appPath(id), signal: opts.signal });
  }

  /**
   * Makes what dev runs live once its checks pass; a failed check leaves
   * live as it was and is promotion_check_failed (409).
   */
  promote(id: string, opts: CallOptions = {}): Promise<PromoteResult> {
    return this.#t.json({ method: "POST", path: appPath(id, "promote"), json: {}, signal: opts.signal });
  }

  /** Points live back at what it was before the last promotion (nothing_to_roll_back when never promoted). */
  rollback(id: string, opts: CallOptions = {}): Promise<App> {
    return this.#t.json({ method: "POST", path: appPath(id, "rollback"), json: {}, signal: opts.signal });
  }

  /** Brings back dev's files of a checkpoint: req.steps back, or req.checkpoint; {} undoes the last task. */
  undo(id: string, req: UndoRequest = {}, opts: CallOptions = {}): Promise<UndoResult> {
    return this.#t.json({ method: "POST", path: appPath(id, "undo"), json: req, signal: opts.signal });
  }

  /** Saves dev's files as they are now. */
  checkpoint(id: string, req: CreateCheckpointRequest = {}, opts: CallOptions = {}): Promise<Checkpoint> {
    return this.#t.json({ method: "POST", path: appPath(id, "checkpoints"), json: req, signal: opts.signal });
  }

  /** Lists an app's checkpoints. */
  async checkpoints(id: string, opts: CallOptions = {}): Promise<Checkpoint[]> {
    const l = await this.#t.json<CheckpointList>({ method: "GET", path: appPath(id, "checkpoints"), signal: opts.signal });
    return l.checkpoints;
  }

  /**
   * Starts a command in dev and returns the task at once; follow it with
   * taskLog or waitTask. One task runs at a time (task_running, 409).
   */
  createTask(id: string, req: CreateTaskRequest | string[], opts: CallOptions = {}): Promise<Task> {
    const body = Array.isArray(req) ? { command: req } : req;
    return this.#t.json({ method: "POST", path: appPath(id, "tasks"), json: body, signal: opts.signal });
  }

  /** Returns one task. */
  task(id: string, taskId: string, opts: CallOptions = {}): Promise<Task> {
    return this.#t.json({ method: "GET", path: taskPath(id, taskId), signal: opts.signal });
  }

  /** Lists an app's tasks, newest first. */
  async tasks(id: string, opts: CallOptions & { limit?: number } = {}): Promise<Task[]> {
    const l = await this.#t.json<TaskList>({
      method: "GET",
      path: appPath(id, "tasks"),
      query: { limit: opts.limit || undefined },
      signal: opts.signal,
    });
    return l.tasks;
  }

  /** Cancels a queued or running task; it ends as cancelled (waitTask for the end). */
  cancelTask(id: string, taskId: string, opts: CallOptions = {}): Promise<Task> {
    return this.#t.json({ method: "POST", path: taskPath(id, taskId) + "/cancel", signal: opts.signal });
  }

  /** Polls a task until it has ended and returns it. */
  waitTask(id: string, taskId: string, opts: CallOptions = {}): Promise<Task> {
    return poll(() => this.task(id, taskId, opts), (t) => taskDone(t.status), opts.signal);
  }

  /**
   * Streams a task's log (Server-Sent Events) after chunk number opts.after
   * (0: from the start) until the task ends; then `task` holds the task as it
   * ended. A stream that breaks is reopened after the last chunk delivered.
   *
   * ```ts
   * const log = await hutch.apps.taskLog(app.id, task.id);
   * for await (const { stream, text } of log) process.stdout.write(text);
   * console.log(log.task?.status);
   * ```
   */
  async taskLog(id: string, taskId: string, opts: CallOptions & { after?: number } = {}): Promise<TaskLog> {
    const { ctrl, done } = linkedAbort(opts.signal);
    const log = new TaskLog(this.#t, taskPath(id, taskId) + "/log", opts.after ?? 0, ctrl, done);
    try {
      await log.open();
      return log;
    } catch (e) {
      log.close();
      throw e;
    }
  }

  /** What the supervisor of role's sandbox (dev by default) runs. */
  processes(id: string, opts: CallOptions & { role?: AppRole } = {}): Promise<AppProcesses> {
    return this.#t.json({ method: "GET", path: appPath(id, "processes"), query: { role: opts.role }, signal: opts.signal });
  }

  /**
   * Iterates over the log of process name in role's sandbox (dev by
   * default): its last `tail` lines, then with follow new ones until the
   * signal aborts or the loop ends.
   */
  async *logs(
    id: string,
    name: string,
    opts: CallOptions & { role?: AppRole; tail?: number; follow?: boolean } = {},
  ): AsyncGenerator<AppLogLine> {
    const { ctrl, done } = linkedAbort(opts.signal);
    try {
      const resp = await this.#t.send({
        method: "GET",
        path: appPath(id, "processes", encodeURIComponent(need(name, "process name")), "logs"),
        query: { role: opts.role, tail: opts.tail || undefined, follow: opts.follow ? "true" : undefined },
        accept: "application/x-ndjson",
        signal: ctrl.signal,
      });
      for await (const line of lines(resp.body!)) {
        if (line.trim()) yield JSON.parse(line) as AppLogLine;
      }
    } finally {
      ctrl.abort();
      done();
    }
  }

  /** Lists an app's config; sensitive values are left out. */
  async config(id: string, opts: CallOptions = {}): Promise<ConfigEntry[]> {
    const l = await this.#t.json<ConfigList>({ method: "GET", path: appPath(id, "config"), signal: opts.signal });
    return l.config;
  }

  /** Creates config entry req.key, or when it exists changes what req sets of it. */
  async setConfig(id: string, req: SetConfigRequest & { key: string }, opts: CallOptions = {}): Promise<ConfigEntry> {
    try {
      return await this.#t.json({ method: "POST", path: appPath(id, "config"), json: req, signal: opts.signal });
    } catch (e) {
      if (!isHutchError(e) || e.code !== "config_exists") throw e;
      const { key, ...rest } = req;
      return this.#t.json({ method: "PATCH", path: appPath(id, "config", encodeURIComponent(key)), json: rest, signal: opts.signal });
    }
  }

  /** Deletes config entry key. */
  async deleteConfig(id: string, key: string, opts: CallOptions = {}): Promise<void> {
    await this.#t.json({
      method: "DELETE",
      path: appPath(id, "config", encodeURIComponent(need(key, "config key"))),
      signal: opts.signal,
    });
  }

  /** An app's event log: list, all and follow, as the tenant's. */
  events(id: string): Events {
    return new Events(this.#t, appPath(id, "events"));
  }
}

const RETRIES = 5;

/** A task's log, followed to the task's end; then `task` is set. */
export class TaskLog extends BodyStream<TaskLogEntry> {
  readonly #t: Transport;
  readonly #path: string;
  #body?: ReadableStream<Uint8Array>;
  /** The number of the last chunk delivered: where a new stream resumes. */
  after: number;
  /** The task as it ended, once the loop is over. */
  task?: Task;

  /** @internal */
  constructor(t: Transport, path: string, after: number, ctrl: AbortController, unlink: () => void) {
    super(ctrl, unlink);
    this.#t = t;
    this.#path = path;
    this.after = after;
  }

  /** @internal */
  async open(): Promise<void> {
    const resp = await this.#t.send({
      method: "GET",
      path: this.#path,
      query: { after: this.after > 0 ? this.after : undefined },
      accept: "text/event-stream",
      signal: this.signal,
    });
    this.#body = resp.body!;
  }

  protected async *read(): AsyncGenerator<TaskLogEntry> {
    let failures = 0;
    let delay = 250;
    for (;;) {
      let err: unknown = new Error("the stream ended before the task did");
      try {
        if (!this.#body) await this.open();
        for await (const raw of sse(this.#body!)) {
          if (raw.event === "log") {
            const seq = Number(raw.id);
            if (!Number.isInteger(seq)) throw new FatalError(`hutch: task log chunk id ${JSON.stringify(raw.id)}`);
            const e = JSON.parse(raw.data) as { stream: TaskLogEntry["stream"]; text: string };
            this.after = seq;
            failures = 0;
            delay = 250;
            yield { seq, stream: e.stream, text: e.text };
          } else if (raw.event === "end") {
            this.task = JSON.parse(raw.data) as Task;
            return;
          }
        }
      } catch (e) {
        if (this.signal.aborted || e instanceof FatalError || e instanceof SyntaxError) throw e;
        if (isHutchError(e) && !e.isTransient()) throw e;
        err = e;
      }
      this.#body = undefined;
      if (++failures > RETRIES) throw new Error(`hutch: task log ${this.#path}: ${(err as Error).message}`);
      await sleep(delay, this.signal);
      delay = Math.min(2 * delay, 5000);
    }
  }
}

class FatalError extends Error {}

/** Calls get until done says so, waiting longer between calls, up to 2 s. */
async function poll<T>(get: () => Promise<T>, done: (v: T) => boolean, signal?: AbortSignal): Promise<T> {
  let delay = 200;
  for (;;) {
    const v = await get();
    if (done(v)) return v;
    await sleep(delay, signal);
    delay = Math.min(2 * delay, 2000);
  }
}

function appPath(id: string, ...parts: string[]): string {
  return "/v1/apps/" + encodeURIComponent(need(id, "app id")) + parts.map((p) => "/" + p).join("");
}

function taskPath(id: string, taskId: string): string {
  return appPath(id, "tasks", encodeURIComponent(need(taskId, "task id")));
}
