// Readers of the API's streamed bodies: lines (NDJSON) and Server-Sent
// Events, plus base64 and text helpers. All work on the web streams of
// fetch, with no dependency.

/** Bounds one line or event, as the Go client does (16 MiB). */
export const MAX_EVENT_SIZE = 16 << 20;

/** Yields the chunks of a body; releases the body when the loop ends early. */
async function* chunks(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        finished = true;
        return;
      }
      if (value && value.length) yield value;
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

/** Yields the lines of a UTF-8 body, without their line ends ("\n" or "\r\n"). */
export async function* lines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const dec = new TextDecoder();
  let buf = "";
  for await (const chunk of chunks(body)) {
    buf += dec.decode(chunk, { stream: true });
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      let line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      yield line;
    }
    if (buf.length > MAX_EVENT_SIZE) throw new Error(`hutch: stream line longer than ${MAX_EVENT_SIZE} bytes`);
  }
  buf += dec.decode();
  if (buf) yield buf;
}

/** One Server-Sent Event as the server sent it. */
export interface SSEEvent {
  id: string;
  /** The event's name ("" when it had none). */
  event: string;
  data: string;
}

/** Yields the Server-Sent Events of a body, skipping comments (heartbeats). */
export async function* sse(body: ReadableStream<Uint8Array>): AsyncGenerator<SSEEvent> {
  let id = "";
  let event = "";
  let data: string[] = [];
  let seen = false;
  for await (const line of lines(body)) {
    if (line === "") {
      if (seen) yield { id, event, data: data.join("\n") };
      id = "";
      event = "";
      data = [];
      seen = false;
      continue;
    }
    if (line.startsWith(":")) continue;
    const c = line.indexOf(":");
    const field = c < 0 ? line : line.slice(0, c);
    let value = c < 0 ? "" : line.slice(c + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    seen = true;
    switch (field) {
      case "id":
        id = value;
        break;
      case "event":
        event = value;
        break;
      case "data":
        data.push(value);
        break;
    }
  }
}

/** Decodes standard base64 into bytes. */
export function fromBase64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Encodes bytes as standard base64. */
export function toBase64(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return btoa(s);
}

const utf8 = new TextEncoder();

/** Decodes bytes as UTF-8, replacing what is not with U+FFFD. */
export function text(b: Uint8Array): string {
  return new TextDecoder().decode(b);
}

/** Encodes a string as UTF-8. */
export function bytes(s: string): Uint8Array {
  return utf8.encode(s);
}

/** Reads a whole body into one array. */
export async function readAll(body: ReadableStream<Uint8Array> | null): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0);
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const c of chunks(body)) {
    parts.push(c);
    n += c.length;
  }
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * The base of the SDK's streams: an async iterable read once, by one loop,
 * over a response that an AbortController ends. Breaking out of the loop or
 * calling close() releases the connection; a close() while the loop waits
 * ends the loop without an error.
 */
export abstract class BodyStream<T> implements AsyncIterable<T> {
  #ctrl: AbortController;
  #unlink: () => void;
  #closed = false;
  #gen?: AsyncGenerator<T>;

  protected constructor(ctrl: AbortController, unlink: () => void) {
    this.#ctrl = ctrl;
    this.#unlink = unlink;
  }

  /** The signal of the stream's requests: aborted by close(). */
  protected get signal(): AbortSignal {
    return this.#ctrl.signal;
  }

  /** Yields the stream's items; called once. */
  protected abstract read(): AsyncGenerator<T>;

  /** Whether close() was called, or the loop ended. */
  get closed(): boolean {
    return this.#closed;
  }

  [Symbol.asyncIterator](): AsyncGenerator<T> {
    if (this.#gen) throw new Error("hutch: a stream is read by one loop, once");
    this.#gen = this.#wrap();
    return this.#gen;
  }

  async *#wrap(): AsyncGenerator<T> {
    try {
      yield* this.read();
    } catch (e) {
      if (this.#closed && !this.#callerAborted()) return;
      throw e;
    } finally {
      this.#release();
    }
  }

  #callerAborted(): boolean {
    // The caller's own signal aborting is an error the loop sees (as fetch
    // does); close() is not.
    return this.#ctrl.signal.aborted && this.#ctrl.signal.reason !== closedReason;
  }

  #release(): void {
    this.#closed = true;
    if (!this.#ctrl.signal.aborted) this.#ctrl.abort(closedReason);
    this.#unlink();
  }

  /** Ends the stream and releases its connection; safe to call more than once. */
  close(): void {
    if (this.#closed) return;
    this.#release();
  }
}

const closedReason = new Error("hutch: stream closed");
closedReason.name = "AbortError";
