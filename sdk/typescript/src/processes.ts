import type { Process, ProcessList, ProcessRequest, TermSize } from "./types.js";
import { BodyStream, fromBase64, sse } from "./streams.js";
import { linkedAbort, sandboxPath, type Body, type CallOptions, type Transport } from "./transport.js";

/**
 * One event of a process's output. Output is numbered by byte offset, stdout
 * and stderr together from 0: `offset` is where `data` starts; for "dropped"
 * (bytes pushed out of the process's buffer before they were read, counted in
 * `dropped`) and "exit" (the last event of a followed stream, with `process`),
 * where the stream goes on.
 */
export interface OutputEvent {
  type: "stdout" | "stderr" | "dropped" | "exit";
  offset: number;
  /** The output's bytes; empty for dropped and exit. */
  data: Uint8Array;
  dropped?: number;
  process?: Process;
}

/** Options of Processes.output. */
export interface OutputOptions extends CallOptions {
  /** The byte offset to start from (default 0): a previous stream's `cursor`. */
  cursor?: number;
  /** Go on as output arrives until the exit event (default true). */
  follow?: boolean;
}

/**
 * The background processes of one sandbox (/v1/sandboxes/{id}/processes).
 * A process runs until it exits or is signalled, whoever is connected; read
 * its output any number of times, from any cursor.
 */
export class Processes {
  readonly #t: Transport;
  readonly #id: string;

  /** @internal */
  constructor(t: Transport, sandboxId: string) {
    this.#t = t;
    this.#id = sandboxId;
  }

  #path(pid: number, ...parts: string[]): string {
    if (!Number.isInteger(pid) || pid <= 0) throw new TypeError(`hutch: bad pid ${pid}`);
    return sandboxPath(this.#id, "processes", String(pid), ...parts);
  }

  /** Starts a background process: its argv, or the whole request (env, cwd, tag, pty). */
  start(cmd: string[] | ProcessRequest, opts: CallOptions = {}): Promise<Process> {
    const req = Array.isArray(cmd) ? { cmd } : cmd;
    return this.#t.json({ method: "POST", path: sandboxPath(this.#id, "processes"), json: req, signal: opts.signal });
  }

  /** Lists the running and recently exited processes, oldest first. */
  async list(opts: CallOptions = {}): Promise<Process[]> {
    const l = await this.#t.json<ProcessList>({ method: "GET", path: sandboxPath(this.#id, "processes"), signal: opts.signal });
    return l.processes;
  }

  /** Returns one process. */
  get(pid: number, opts: CallOptions = {}): Promise<Process> {
    return this.#t.json({ method: "GET", path: this.#path(pid), signal: opts.signal });
  }

  /**
   * Waits up to timeoutMs (at most, and by default, 10 minutes) for the
   * process to exit and returns it as it then is: check `running`.
   */
  wait(pid: number, opts: CallOptions & { timeoutMs?: number } = {}): Promise<Process> {
    return this.#t.json({
      method: "GET",
      path: this.#path(pid, "wait"),
      query: { timeout_ms: opts.timeoutMs },
      signal: opts.signal,
    });
  }

  /** Sends a signal (TERM, KILL, INT, HUP…) to the process, or with group to its process group. */
  signal(pid: number, signal: string, opts: CallOptions & { group?: boolean } = {}): Promise<Process> {
    return this.#t.json({
      method: "POST",
      path: this.#path(pid, "signal"),
      json: { signal, ...(opts.group ? { group: true } : {}) },
      signal: opts.signal,
    });
  }

  /** Writes data to the process's stdin; with close, closes it afterwards (end-of-file). */
  async stdin(pid: number, data: Body, opts: CallOptions & { close?: boolean } = {}): Promise<Process> {
    return this.#t.json({
      method: "POST",
      path: this.#path(pid, "stdin"),
      query: { close: opts.close ? "true" : undefined },
      raw: data,
      contentType: "application/octet-stream",
      signal: opts.signal,
    });
  }

  /** Changes the size of the process's terminal (a process started with pty). */
  resize(pid: number, size: TermSize, opts: CallOptions = {}): Promise<Process> {
    return this.#t.json({ method: "POST", path: this.#path(pid, "resize"), json: size, signal: opts.signal });
  }

  /**
   * Streams the process's output from opts.cursor on, as Server-Sent Events.
   * After a broken connection, call it again with the stream's `cursor`: the
   * new stream starts exactly after the last event delivered.
   */
  async output(pid: number, opts: OutputOptions = {}): Promise<OutputStream> {
    const cursor = opts.cursor ?? 0;
    const { ctrl, done } = linkedAbort(opts.signal);
    try {
      const resp = await this.#t.send({
        method: "GET",
        path: this.#path(pid, "output"),
        query: { cursor, follow: opts.follow ?? true },
        accept: "text/event-stream",
        signal: ctrl.signal,
      });
      return new OutputStream(resp.body!, cursor, ctrl, done);
    } catch (e) {
      done();
      throw e;
    }
  }
}

/**
 * A process's output from a cursor on. `cursor` is where a new stream would
 * resume after the events read so far.
 */
export class OutputStream extends BodyStream<OutputEvent> {
  #body: ReadableStream<Uint8Array>;
  /** Where the output resumes after what the loop has seen. */
  cursor: number;

  /** @internal */
  constructor(body: ReadableStream<Uint8Array>, cursor: number, ctrl: AbortController, unlink: () => void) {
    super(ctrl, unlink);
    this.#body = body;
    this.cursor = cursor;
  }

  protected async *read(): AsyncGenerator<OutputEvent> {
    for await (const raw of sse(this.#body)) {
      if (raw.data === "") continue;
      const w = JSON.parse(raw.data) as Omit<OutputEvent, "data"> & { data?: string };
      const ev: OutputEvent = { ...w, data: w.data ? fromBase64(w.data) : new Uint8Array(0) };
      const n = raw.id === "" ? NaN : Number(raw.id);
      this.cursor = Number.isFinite(n) ? n : ev.offset + ev.data.length;
      yield ev;
      if (ev.type === "exit") return;
    }
  }
}

