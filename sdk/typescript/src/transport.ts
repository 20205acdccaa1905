import { readError } from "./errors.js";

/** What a query parameter may be; arrays repeat the parameter. */
export type QueryValue = string | number | boolean | undefined | null | readonly string[];

/** A request body the SDK sends as it is. */
export type Body = string | Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array>;

/** One call: method, path under the base URL, query, body, headers. */
export interface Call {
  method: string;
  /** Escaped, starting with "/". */
  path: string;
  query?: Record<string, QueryValue>;
  /** Sent as JSON unless raw is set. */
  json?: unknown;
  raw?: Body;
  contentType?: string;
  accept?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** Options every call takes. */
export interface CallOptions {
  /** Aborts the request, or the stream being read. */
  signal?: AbortSignal;
}

/** The HTTP side of a Hutch client: the base URL, the key and fetch. */
export class Transport {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly fetch: typeof globalThis.fetch;
  readonly userAgent: string;

  constructor(baseUrl: string, apiKey: string, fetchImpl: typeof globalThis.fetch, userAgent: string) {
    const u = new URL(baseUrl.replace(/\/+$/, ""));
    if ((u.protocol !== "http:" && u.protocol !== "https:") || u.search || u.hash) {
      throw new TypeError(`hutch: bad base URL ${JSON.stringify(baseUrl)}: want http(s)://host[:port][/prefix]`);
    }
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.apiKey = apiKey;
    this.fetch = fetchImpl;
    this.userAgent = userAgent;
  }

  /** The full URL of path with query. */
  url(path: string, query?: Record<string, QueryValue>): string {
    let u = this.baseUrl + path;
    const q = encodeQuery(query);
    if (q) u += "?" + q;
    return u;
  }

  /** The headers every request carries: the key and the user agent. */
  authHeaders(): Record<string, string> {
    const h: Record<string, string> = {};
    if (this.apiKey) h["Authorization"] = "Bearer " + this.apiKey;
    if (this.userAgent) h["User-Agent"] = this.userAgent;
    return h;
  }

  /**
   * Performs c and returns the response when its status is 2xx; any other
   * status is thrown as a HutchError.
   */
  async send(c: Call): Promise<Response> {
    const headers: Record<string, string> = { ...this.authHeaders(), Accept: c.accept ?? "application/json", ...c.headers };
    const init: RequestInit & { duplex?: "half" } = { method: c.method, headers, signal: c.signal };
    if (c.json !== undefined) {
      init.body = JSON.stringify(c.json);
      headers["Content-Type"] = "application/json";
    } else if (c.raw !== undefined) {
      init.body = c.raw as NonNullable<RequestInit["body"]>;
      if (c.contentType) headers["Content-Type"] = c.contentType;
      if (typeof ReadableStream !== "undefined" && c.raw instanceof ReadableStream) init.duplex = "half";
    }
    const resp = await this.fetch(this.url(c.path, c.query), init);
    if (resp.status < 200 || resp.status > 299) throw await readError(resp);
    return resp;
  }

  /** Performs a JSON call and decodes the answer (undefined for 204). */
  async json<T>(c: Call): Promise<T> {
    const resp = await this.send(c);
    const text = await resp.text();
    if (text === "") return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch (e) {
      throw new Error(`hutch: decode answer of ${c.method} ${c.path}: ${(e as Error).message}`);
    }
  }
}

/** Encodes a query: undefined, null and "" values are left out, arrays repeated. */
export function encodeQuery(query?: Record<string, QueryValue>): string {
  if (!query) return "";
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === "") continue;
    if (Array.isArray(v)) for (const x of v) q.append(k, x);
    else q.append(k, String(v));
  }
  return q.toString();
}

/** The escaped path of a sandbox, or of one of its sub-resources. */
export function sandboxPath(id: string, ...parts: string[]): string {
  return "/v1/sandboxes/" + encodeURIComponent(need(id, "sandbox id")) + parts.map((p) => "/" + p).join("");
}

/** Throws, without a request, for an empty id or name. */
export function need(v: string, what: string): string {
  if (!v) throw new TypeError(`hutch: empty ${what}`);
  return v;
}

/**
 * An AbortController that also aborts when the caller's signal does (the
 * AbortSignal.any of Node 20, for Node 18 too). done() unlinks it.
 */
export function linkedAbort(signal?: AbortSignal): { ctrl: AbortController; done: () => void } {
  const ctrl = new AbortController();
  if (!signal) return { ctrl, done: () => {} };
  if (signal.aborted) {
    ctrl.abort(signal.reason);
    return { ctrl, done: () => {} };
  }
  const onAbort = () => ctrl.abort(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  return { ctrl, done: () => signal.removeEventListener("abort", onAbort) };
}

/** Waits ms milliseconds, or rejects when signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
