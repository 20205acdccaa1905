import type { Network, NetworkPolicy } from "./types.js";
import { sandboxPath, type CallOptions, type Transport } from "./transport.js";

/** The egress policy of one sandbox (/v1/sandboxes/{id}/network). */
export class NetworkPolicies {
  readonly #t: Transport;
  readonly #id: string;

  /** @internal */
  constructor(t: Transport, sandboxId: string) {
    this.#t = t;
    this.#id = sandboxId;
  }

  /** Returns the policy and what went through it. */
  get(opts: CallOptions = {}): Promise<Network> {
    return this.#t.json({ method: "GET", path: sandboxPath(this.#id, "network"), signal: opts.signal });
  }

  /** Replaces the policy; the next connection sees it. */
  set(policy: NetworkPolicy, opts: CallOptions = {}): Promise<Network> {
    return this.#t.json({ method: "PUT", path: sandboxPath(this.#id, "network"), json: policy, signal: opts.signal });
  }
}
