import type { Template, TemplateList } from "./types.js";
import type { components } from "./generated/api.js";
import { need, type Body, type CallOptions, type Transport } from "./transport.js";

/** The tenant's templates (/v1/templates): images sandboxes start from. */
export class Templates {
  readonly #t: Transport;

  /** @internal */
  constructor(t: Transport) {
    this.#t = t;
  }

  /** Lists the templates by name. */
  async list(opts: CallOptions = {}): Promise<Template[]> {
    const l = await this.#t.json<TemplateList>({ method: "GET", path: "/v1/templates", signal: opts.signal });
    return l.templates;
  }

  /** Returns one template. */
  get(name: string, opts: CallOptions = {}): Promise<Template> {
    return this.#t.json({ method: "GET", path: templatePath(name), signal: opts.signal });
  }

  /**
   * Makes a template from an image in a registry, or from a snapshot;
   * resolves once it is ready. A name in use is template_exists (409).
   */
  create(req: components["schemas"]["CreateTemplateRequest"], opts: CallOptions = {}): Promise<Template> {
    return this.#t.json({ method: "POST", path: "/v1/templates", json: req, signal: opts.signal });
  }

  /** Makes a template from an image archive: an OCI layout as a tar, or `docker save` output. */
  import(name: string, tar: Body, opts: CallOptions = {}): Promise<Template> {
    return this.#t.json({
      method: "POST",
      path: "/v1/templates",
      query: { name: need(name, "template name") },
      raw: tar,
      contentType: "application/x-tar",
      signal: opts.signal,
    });
  }

  /** Deletes a template; one a sandbox starts from is template_in_use (409). */
  async delete(name: string, opts: CallOptions = {}): Promise<void> {
    await this.#t.json({ method: "DELETE", path: templatePath(name), signal: opts.signal });
  }
}

function templatePath(name: string): string {
  return "/v1/templates/" + encodeURIComponent(need(name, "template name"));
}
