import type { Info } from "./types.js";
import { Apps } from "./apps.js";
import { Events } from "./events.js";
import { Sandbox, Sandboxes } from "./sandboxes.js";
import { Secrets } from "./secrets.js";
import { Snapshots } from "./snapshots.js";
import { Templates } from "./templates.js";
import { Transport, type CallOptions } from "./transport.js";

/** The server's address when neither the options nor HUTCH_URL give one. */
export const DEFAULT_URL = "http://127.0.0.1:7070";

/** Options of a Hutch client. */
export interface HutchOptions {
  /** The server, such as "http://127.0.0.1:7070" (a path prefix is kept). Default: $HUTCH_URL, else DEFAULT_URL. */
  baseUrl?: string;
  /** The API key, sent as a Bearer token. Default: $HUTCH_API_KEY; "" sends none. */
  apiKey?: string;
  /** The fetch to use; default the global one (Node 18+). */
  fetch?: typeof globalThis.fetch;
  /** The User-Agent header; default "hutch-typescript-sdk". */
  userAgent?: string;
}

function env(name: string): string | undefined {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return p?.env?.[name] || undefined;
}

/**
 * A client of one hutch server with one API key.
 *
 * ```ts
 * const hutch = new Hutch(); // $HUTCH_URL, $HUTCH_API_KEY
 * const sb = await hutch.sandboxes.create({ env: { GREETING: "hi" } });
 * const res = await sb.exec(["sh", "-c", "echo $GREETING"]);
 * ```
 *
 * Every call takes an optional `signal`; errors the server answers are
 * thrown as HutchError.
 */
export class Hutch {
  /** Sandboxes: create, get, list, lifecycle. */
  readonly sandboxes: Sandboxes;
  /** The tenant's event log (every sandbox's and app's). */
  readonly events: Events;
  /** Write-only secrets. */
  readonly secrets: Secrets;
  /** Snapshots of sandboxes' files. */
  readonly snapshots: Snapshots;
  /** Templates (images). */
  readonly templates: Templates;
  /** Apps, their tasks, undo, promotion, config. */
  readonly apps: Apps;
  readonly #t: Transport;

  constructor(opts: HutchOptions = {}) {
    const f = opts.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new Error("hutch: no fetch: use Node 18 or later, or pass options.fetch");
    this.#t = new Transport(
      opts.baseUrl ?? env("HUTCH_URL") ?? DEFAULT_URL,
      opts.apiKey ?? env("HUTCH_API_KEY") ?? "",
      f.bind(globalThis),
      opts.userAgent ?? "hutch-typescript-sdk",
    );
    this.sandboxes = new Sandboxes(this.#t);
    this.events = new Events(this.#t, "/v1/events");
    this.secrets = new Secrets(this.#t);
    this.snapshots = new Snapshots(this.#t);
    this.templates = new Templates(this.#t);
    this.apps = new Apps(this.#t);
  }

  /** The server's base URL. */
  get baseUrl(): string {
    return this.#t.baseUrl;
  }

  /** A handle on sandbox id, without a request. */
  sandbox(id: string): Sandbox {
    return this.sandboxes.handle(id);
  }

  /** What the server is: its version, drivers, features and limits (GET /v1/info). */
  info(opts: CallOptions = {}): Promise<Info> {
    return this.#t.json({ method: "GET", path: "/v1/info", signal: opts.signal });
  }
}
