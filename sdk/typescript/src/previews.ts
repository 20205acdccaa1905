import type { Port, PortList, PreviewURL } from "./types.js";
import { sandboxPath, type CallOptions, type Transport } from "./transport.js";

/**
 * The previews of one sandbox: the server serves
 * http(s)://<port>-<sandbox id>.<preview domain>/ from port inside it. A port
 * is private (an API key, or a signed URL) until made public.
 */
export class Previews {
  readonly #t: Transport;
  readonly #id: string;

  /** @internal */
  constructor(t: Transport, sandboxId: string) {
    this.#t = t;
    this.#id = sandboxId;
  }

  /**
   * Signs a URL of a port's preview that lets its holder in, with no key,
   * for ttlS seconds (an hour when unset, at most a day).
   */
  signedUrl(port: number, opts: CallOptions & { ttlS?: number } = {}): Promise<PreviewURL> {
    return this.#t.json({
      method: "POST",
      path: sandboxPath(this.#id, "ports", String(port), "url"),
      json: opts.ttlS ? { expires_in_s: opts.ttlS } : {},
      signal: opts.signal,
    });
  }

  /** Makes a port's preview public (no credentials needed) or private again. */
  setPublic(port: number, isPublic: boolean, opts: CallOptions = {}): Promise<Port> {
    return this.#t.json({
      method: "PUT",
      path: sandboxPath(this.#id, "ports", String(port)),
      json: { public: isPublic },
      signal: opts.signal,
    });
  }

  /** Lists the preview settings and the ports listening in the sandbox. */
  list(opts: CallOptions = {}): Promise<PortList> {
    return this.#t.json({ method: "GET", path: sandboxPath(this.#id, "ports"), signal: opts.signal });
  }
}
