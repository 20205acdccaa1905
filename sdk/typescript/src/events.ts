import type { Event, EventList } from "./types.js";
import { HutchError, isHutchError } from "./errors.js";
import { BodyStream, sse } from "./streams.js";
import { linkedAbort, sleep, type CallOptions, type QueryValue, type Transport } from "./transport.js";

/** Filters and pages an event listing. */
export interface EventQuery {
  /** Keeps only events of these types ("sandbox.created", …). */
  types?: string[];
  /**
   * Keeps only events recorded after this event id: a page's next_cursor, or
   * the id of the last event seen. Streams send it as Last-Event-ID.
   */
  after?: string;
  /** The page size; 0 or unset is the server's default. Streams ignore it. */
  limit?: number;
  /** Keeps one sandbox's events (the tenant's log only). */
  sandbox?: string;
}

/** Options of Events.follow. */
export interface FollowOptions extends CallOptions {
  /**
   * Reopen the stream after a broken connection, resuming with Last-Event-ID
   * after the last event delivered (default true; gives up after 5 failures
   * in a row without an event).
   */
  reconnect?: boolean;
}

/**
 * An event log: the tenant's (hutch.events), a sandbox's (sandbox.events) or
 * an app's (hutch.apps.events(id)). Events are oldest first; ids are ULIDs
 * that increase in the order events were recorded.
 */
export class Events {
  readonly #t: Transport;
  readonly #path: string;

  /** @internal */
  constructor(t: Transport, path: string) {
    this.#t = t;
    this.#path = path;
  }

  #query(q: EventQuery, page: boolean): Record<string, QueryValue> {
    return {
      type: q.types,
      sandbox: q.sandbox,
      ...(page ? { after: q.after, limit: q.limit || undefined } : {}),
    };
  }

  /**
   * Returns one page, oldest first. Pass its next_cursor as `after` for the
   * next; an empty next_cursor means the page held every event recorded so
   * far.
   */
  list(q: EventQuery = {}, opts: CallOptions = {}): Promise<EventList> {
    return this.#t.json({ method: "GET", path: this.#path, query: this.#query(q, true), signal: opts.signal });
  }

  /** Iterates over every event recorded so far matching q, page after page. */
  async *all(q: EventQuery = {}, opts: CallOptions = {}): AsyncGenerator<Event> {
    let after = q.after;
    const seen = new Set<string>();
    for (;;) {
      const page = await this.list({ ...q, after }, opts);
      yield* page.events;
      if (!page.next_cursor) return;
      if (seen.has(page.next_cursor)) throw new Error(`hutch: event listing repeats cursor ${page.next_cursor}`);
      seen.add(page.next_cursor);
      after = page.next_cursor;
    }
  }

  /**
   * Opens a live stream (Server-Sent Events): every event after q.after, then
   * each new one as it is recorded, with no end until close(), the signal,
   * or the server shutting down. It resolves once the stream is open. Too
   * many open streams (the tenant's streams quota) is a HutchError with code
   * quota_exceeded (429).
   */
  async follow(q: EventQuery = {}, opts: FollowOptions = {}): Promise<EventStream> {
    const { ctrl, done } = linkedAbort(opts.signal);
    const s = new EventStream(this.#t, this.#path, this.#query(q, false), q.after ?? "", opts.reconnect ?? true, ctrl, done);
    try {
      await s.open();
      return s;
    } catch (e) {
      s.close();
      throw e;
    }
  }
}

const RETRIES = 5;

/**
 * A live stream of events. `lastId` is where a new stream resumes: the id of
 * the last event the loop saw.
 */
export class EventStream extends BodyStream<Event> {
  readonly #t: Transport;
  readonly #path: string;
  readonly #query: Record<string, QueryValue>;
  readonly #reconnect: boolean;
  #body?: ReadableStream<Uint8Array>;
  /** The id of the last event delivered, or the `after` it was opened with. */
  lastId: string;

  /** @internal */
  constructor(
    t: Transport,
    path: string,
    query: Record<string, QueryValue>,
    after: string,
    reconnect: boolean,
    ctrl: AbortController,
    unlink: () => void,
  ) {
    super(ctrl, unlink);
    this.#t = t;
    this.#path = path;
    this.#query = query;
    this.#reconnect = reconnect;
    this.lastId = after;
  }

  /** @internal Opens (or reopens) the connection after lastId. */
  async open(): Promise<void> {
    const resp = await this.#t.send({
      method: "GET",
      path: this.#path,
      query: this.#query,
      accept: "text/event-stream",
      headers: this.lastId ? { "Last-Event-ID": this.lastId } : {},
      signal: this.signal,
    });
    const ct = resp.headers.get("Content-Type") ?? "";
    if (!ct.startsWith("text/event-stream")) {
      await resp.body?.cancel();
      throw new Error(`hutch: ${this.#path} answered ${JSON.stringify(ct)}, not an event stream`);
    }
    this.#body = resp.body!;
  }

  protected async *read(): AsyncGenerator<Event> {
    let failures = 0;
    let delay = 250;
    for (;;) {
      let err: unknown = new Error("the server ended the stream");
      try {
        if (!this.#body) await this.open();
        for await (const raw of sse(this.#body!)) {
          if (raw.data === "") continue;
          const e = JSON.parse(raw.data) as Event;
          this.lastId = raw.id || e.id || this.lastId;
          failures = 0;
          delay = 250;
          yield e;
        }
      } catch (e) {
        if (this.signal.aborted) throw e;
        if (isHutchError(e) && !(e as HutchError).isTransient()) throw e;
        err = e;
      }
      this.#body = undefined;
      if (!this.#reconnect) {
        if (err instanceof Error && err.message === "the server ended the stream") return;
        throw err;
      }
      if (++failures > RETRIES) throw new Error(`hutch: event stream ${this.#path}: ${(err as Error).message}`);
      await sleep(delay, this.signal);
      delay = Math.min(2 * delay, 5000);
    }
  }
}
