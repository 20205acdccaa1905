import type { Process, TermSize, TerminalMessage } from "./types.js";
import { text } from "./streams.js";
import { sandboxPath, type QueryValue, type Transport } from "./transport.js";
import { dialWebSocket, type WsConn } from "./websocket.js";

/** What a new terminal runs. */
export interface TerminalOptions {
  /** The argv; the user's login shell when unset. */
  cmd?: string[];
  cwd?: string;
  /** 24 rows by 80 columns when unset. */
  rows?: number;
  cols?: number;
  /** Aborts the connection (the process goes on). */
  signal?: AbortSignal;
}

/** What a terminal sends: output bytes, or a message (dropped output, the exit). */
export type TerminalOutput = { data: Uint8Array; message?: undefined } | { data?: undefined; message: TerminalMessage };

/**
 * A WebSocket to a process on a pseudo-terminal (GET …/terminal). The
 * process is a background process that outlives the connection. Iterate
 * over its output with `for await`; the loop ends after the exit message,
 * when the server closes the connection.
 */
export class Terminal implements AsyncIterable<TerminalOutput> {
  /** The process as it was when the terminal opened. */
  readonly process: Process;
  #conn: WsConn;
  #messages: AsyncGenerator<TerminalOutput>;

  private constructor(conn: WsConn, process: Process, messages: AsyncGenerator<TerminalOutput>) {
    this.#conn = conn;
    this.process = process;
    this.#messages = messages;
  }

  /** @internal */
  static async open(t: Transport, path: string, query: Record<string, QueryValue>, signal?: AbortSignal): Promise<Terminal> {
    const conn = await dialWebSocket(t.url(path, query), t.authHeaders(), signal);
    const messages = (async function* () {
      for await (const m of conn.messages()) {
        if (m.binary) yield { data: m.data } as TerminalOutput;
        else yield { message: JSON.parse(text(m.data)) as TerminalMessage } as TerminalOutput;
      }
    })();
    const first = await messages.next();
    const msg = first.done ? undefined : first.value.message;
    if (!msg || msg.type !== "started" || !msg.process) {
      conn.close();
      throw new Error("hutch: the terminal did not start with a started message");
    }
    return new Terminal(conn, msg.process, messages);
  }

  [Symbol.asyncIterator](): AsyncGenerator<TerminalOutput> {
    return this.#messages;
  }

  /** Sends keystrokes (or any bytes; a string as UTF-8) to the process. */
  write(data: string | Uint8Array): void {
    this.#conn.send(typeof data === "string" ? new TextEncoder().encode(data) : data);
  }

  /** Changes the terminal's size. */
  resize(size: TermSize): void {
    this.#conn.send(JSON.stringify({ type: "resize", rows: size.rows, cols: size.cols }));
  }

  /** Sends a signal (INT, TERM…) to the terminal's process group. */
  signal(signal: string): void {
    this.#conn.send(JSON.stringify({ type: "signal", signal }));
  }

  /** Sends end-of-file. */
  closeInput(): void {
    this.#conn.send(JSON.stringify({ type: "eof" }));
  }

  /** Disconnects; the process goes on. */
  close(): void {
    this.#conn.close();
  }
}

/** Opens a terminal running opts.cmd in a sandbox. @internal */
export function openTerminal(t: Transport, id: string, opts: TerminalOptions = {}): Promise<Terminal> {
  return Terminal.open(
    t,
    sandboxPath(id, "terminal"),
    { cmd: opts.cmd, cwd: opts.cwd, rows: opts.rows, cols: opts.cols },
    opts.signal,
  );
}

/** Attaches to a running process's terminal, replaying its output from cursor. @internal */
export function attachTerminal(t: Transport, id: string, pid: number, cursor = 0, signal?: AbortSignal): Promise<Terminal> {
  return Terminal.open(t, sandboxPath(id, "processes", String(pid), "terminal"), { cursor }, signal);
}
