import type { Snapshot, SnapshotList } from "./types.js";
import { need, type CallOptions, type Transport } from "./transport.js";

/**
 * The tenant's snapshots (/v1/snapshots): copies of a sandbox's files. Take
 * one with sandbox.snapshot(); start a sandbox from one with
 * sandboxes.create({ snapshot }).
 */
export class Snapshots {
  readonly #t: Transport;

  /** @internal */
  constructor(t: Transport) {
    this.#t = t;
  }

  /** Lists the snapshots, newest first; with sandbox, one sandbox's. */
  async list(opts: CallOptions & { sandbox?: string } = {}): Promise<Snapshot[]> {
    const l = await this.#t.json<SnapshotList>({
      method: "GET",
      path: "/v1/snapshots",
      query: { sandbox: opts.sandbox },
      signal: opts.signal,
    });
    return l.snapshots;
  }

  /** Returns one snapshot. */
  get(id: string, opts: CallOptions = {}): Promise<Snapshot> {
    return this.#t.json({ method: "GET", path: snapshotPath(id), signal: opts.signal });
  }

  /** Deletes a snapshot and its files. */
  async delete(id: string, opts: CallOptions = {}): Promise<void> {
    await this.#t.json({ method: "DELETE", path: snapshotPath(id), signal: opts.signal });
  }
}

function snapshotPath(id: string): string {
  return "/v1/snapshots/" + encodeURIComponent(need(id, "snapshot id"));
}
