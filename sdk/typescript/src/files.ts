import type { FileInfo, FileList, TarResult, WatchEvent } from "./types.js";
import { BodyStream, readAll, sse, text } from "./streams.js";
import { linkedAbort, sandboxPath, type Body, type CallOptions, type Transport } from "./transport.js";

/**
 * The files of one sandbox (/v1/sandboxes/{id}/files…). Paths are as the
 * sandbox sees them: absolute, or relative to its working directory; a path
 * that leaves the sandbox is refused (path_outside_sandbox).
 */
export class Files {
  readonly #t: Transport;
  readonly #id: string;

  /** @internal */
  constructor(t: Transport, sandboxId: string) {
    this.#t = t;
    this.#id = sandboxId;
  }

  /**
   * Streams a file out of the sandbox. A missing file is a HutchError with
   * code file_not_found; a directory, is_a_directory.
   */
  async readStream(path: string, opts: CallOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const resp = await this.#t.send({
      method: "GET",
      path: sandboxPath(this.#id, "files"),
      query: { path },
      accept: "application/octet-stream",
      signal: opts.signal,
    });
    return resp.body ?? new ReadableStream({ start: (c) => c.close() });
  }

  /** Reads a whole file as bytes. */
  async read(path: string, opts: CallOptions = {}): Promise<Uint8Array> {
    return readAll(await this.readStream(path, opts));
  }

  /** Reads a whole file as UTF-8 text. */
  async readText(path: string, opts: CallOptions = {}): Promise<string> {
    return text(await this.read(path, opts));
  }

  /**
   * Writes a file, creating or replacing it atomically, and returns its new
   * FileInfo. A string is written as UTF-8; a ReadableStream is streamed.
   * mode is octal ("0755"; 0644 for a new file by default); parents: false
   * refuses a write into a missing directory instead of making it.
   */
  write(path: string, data: Body, opts: CallOptions & { mode?: string | number; parents?: boolean } = {}): Promise<FileInfo> {
    const mode = typeof opts.mode === "number" ? opts.mode.toString(8).padStart(4, "0") : opts.mode;
    return this.#t.json({
      method: "PUT",
      path: sandboxPath(this.#id, "files"),
      query: { path, mode, parents: opts.parents === false ? "false" : undefined },
      raw: data,
      contentType: "application/octet-stream",
      signal: opts.signal,
    });
  }

  /** Lists a directory. */
  async list(path: string, opts: CallOptions = {}): Promise<FileInfo[]> {
    const l = await this.#t.json<FileList>({
      method: "GET",
      path: sandboxPath(this.#id, "files", "list"),
      query: { path },
      signal: opts.signal,
    });
    return l.entries;
  }

  /** Describes one path without following a final symlink. */
  stat(path: string, opts: CallOptions = {}): Promise<FileInfo> {
    return this.#t.json({ method: "GET", path: sandboxPath(this.#id, "files", "stat"), query: { path }, signal: opts.signal });
  }

  /** Removes a file or an empty directory; with recursive, a directory and everything below it. */
  async remove(path: string, opts: CallOptions & { recursive?: boolean } = {}): Promise<void> {
    await this.#t.json({
      method: "DELETE",
      path: sandboxPath(this.#id, "files"),
      query: { path, recursive: opts.recursive ? "true" : undefined },
      signal: opts.signal,
    });
  }

  /** Creates a directory and any missing parents (mkdir -p) and returns it. */
  mkdir(path: string, opts: CallOptions & { mode?: string } = {}): Promise<FileInfo> {
    return this.#t.json({
      method: "POST",
      path: sandboxPath(this.#id, "files", "mkdir"),
      json: { path, ...(opts.mode ? { mode: opts.mode } : {}) },
      signal: opts.signal,
    });
  }

  /**
   * Renames a file or directory and returns it at its new path. Without
   * overwrite an existing destination is a HutchError with code file_exists.
   */
  move(from: string, to: string, opts: CallOptions & { overwrite?: boolean } = {}): Promise<FileInfo> {
    return this.#t.json({
      method: "POST",
      path: sandboxPath(this.#id, "files", "move"),
      json: { from, to, ...(opts.overwrite ? { overwrite: true } : {}) },
      signal: opts.signal,
    });
  }

  /**
   * Extracts a tar archive under the directory path (made if missing) and
   * reports what it wrote. Entries that would leave path, and entry types
   * the server does not support, are refused (unsupported_tar_entry).
   */
  uploadTar(path: string, tar: Body, opts: CallOptions = {}): Promise<TarResult> {
    return this.#t.json({
      method: "PUT",
      path: sandboxPath(this.#id, "files", "tar"),
      query: { path },
      raw: tar,
      contentType: "application/x-tar",
      signal: opts.signal,
    });
  }

  /** Streams a directory as a tar archive whose entries are relative to path. */
  async downloadTar(path: string, opts: CallOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const resp = await this.#t.send({
      method: "GET",
      path: sandboxPath(this.#id, "files", "tar"),
      query: { path },
      accept: "application/x-tar",
      signal: opts.signal,
    });
    return resp.body ?? new ReadableStream({ start: (c) => c.close() });
  }

  /**
   * Watches the directory path for changes (with recursive, every directory
   * below it, including those made later). It resolves once the watch is in
   * place, so every change after that is reported. Paths in events are
   * relative to path. A missing path is file_not_found; one that is not a
   * directory, not_a_directory; too many watches, watch_limit.
   */
  async watch(path: string, opts: CallOptions & { recursive?: boolean } = {}): Promise<Watch> {
    const { ctrl, done } = linkedAbort(opts.signal);
    try {
      const resp = await this.#t.send({
        method: "GET",
        path: sandboxPath(this.#id, "files", "watch"),
        query: { path, recursive: opts.recursive ? "true" : undefined },
        accept: "text/event-stream",
        signal: ctrl.signal,
      });
      const ct = resp.headers.get("Content-Type") ?? "";
      if (!ct.startsWith("text/event-stream")) {
        throw new Error(`hutch: files/watch answered ${JSON.stringify(ct)}, not an event stream`);
      }
      return new Watch(resp.body!, ctrl, done);
    } catch (e) {
      ctrl.abort();
      done();
      throw e;
    }
  }
}

/**
 * A running watch: the changes, in order (create, write, remove, rename,
 * overflow: changes were lost, rescan). The loop ends when the server ends
 * the watch (the directory was removed) or on close().
 */
export class Watch extends BodyStream<WatchEvent> {
  #body: ReadableStream<Uint8Array>;

  /** @internal */
  constructor(body: ReadableStream<Uint8Array>, ctrl: AbortController, unlink: () => void) {
    super(ctrl, unlink);
    this.#body = body;
  }

  protected async *read(): AsyncGenerator<WatchEvent> {
    for await (const raw of sse(this.#body)) {
      if (raw.data === "") continue;
      const ev = JSON.parse(raw.data) as WatchEvent;
      if (!ev.type) ev.type = raw.event as WatchEvent["type"];
      yield ev;
    }
  }
}
