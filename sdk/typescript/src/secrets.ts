import type { CreateSecretRequest, ReplaceSecretRequest, Secret, SecretList } from "./types.js";
import { need, type CallOptions, type Transport } from "./transport.js";

/**
 * The tenant's secrets (/v1/secrets). Values are write-only: these calls send
 * them and get metadata back; no call returns a value.
 */
export class Secrets {
  readonly #t: Transport;

  /** @internal */
  constructor(t: Transport) {
    this.#t = t;
  }

  /**
   * Creates a secret; a name in use is secret_exists (409), a value too large secret_too_large (413).
   * `kind: "registry"` with `registry: HOST` makes a registry password: the only kind a template
   * pull's `password_secret` takes, sent to that host alone. Kind and host never change.
   */
  create(req: CreateSecretRequest, opts: CallOptions = {}): Promise<Secret> {
    return this.#t.json({ method: "POST", path: "/v1/secrets", json: req, signal: opts.signal });
  }

  /** Lists the secrets by name, without values. */
  async list(opts: CallOptions = {}): Promise<Secret[]> {
    const l = await this.#t.json<SecretList>({ method: "GET", path: "/v1/secrets", signal: opts.signal });
    return l.secrets;
  }

  /** Returns a secret's metadata, without its value. */
  get(name: string, opts: CallOptions = {}): Promise<Secret> {
    return this.#t.json({ method: "GET", path: secretPath(name), signal: opts.signal });
  }

  /** Replaces an existing secret's value (and description when set); a missing one is secret_not_found. */
  replace(name: string, req: ReplaceSecretRequest, opts: CallOptions = {}): Promise<Secret> {
    return this.#t.json({ method: "PUT", path: secretPath(name), json: req, signal: opts.signal });
  }

  /** Deletes a secret. */
  async delete(name: string, opts: CallOptions = {}): Promise<void> {
    await this.#t.json({ method: "DELETE", path: secretPath(name), signal: opts.signal });
  }
}

function secretPath(name: string): string {
  return "/v1/secrets/" + encodeURIComponent(need(name, "secret name"));
}
