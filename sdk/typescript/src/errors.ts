/** Bounds how much of an error answer is read into a message. */
const MAX_ERROR_BODY = 64 << 10;

/**
 * An error answer of the server: the HTTP status and the API's stable error
 * code (such as `sandbox_not_found` or `invalid_path`) with its message,
 * parsed from `{"error":{"code","message"}}`. An answer that is not in that
 * shape (a proxy's HTML page) has an empty `code` and a message made from the
 * status and the start of the body.
 *
 * ```ts
 * try { await hutch.sandboxes.get(id) } catch (e) {
 *   if (isHutchError(e) && e.isNotFound()) { … }
 * }
 * ```
 */
export class HutchError extends Error {
  /** The HTTP status of the answer. */
  readonly status: number;
  /** The API's error code, or "" when the body was not the API's error shape. */
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "HutchError";
    this.status = status;
    this.code = code;
  }

  /** A 404: an unknown sandbox, process, file, app, secret… */
  isNotFound(): boolean {
    return this.status === 404;
  }
  /** A 409: the resource is not in a state that allows the call. */
  isConflict(): boolean {
    return this.status === 409;
  }
  /** A 401: the API key is missing or wrong. */
  isUnauthorized(): boolean {
    return this.status === 401;
  }
  /** A 403: the key may not do this. */
  isForbidden(): boolean {
    return this.status === 403;
  }
  /** A 400 or 422: the request itself is wrong; retrying it unchanged fails again. */
  isInvalid(): boolean {
    return this.status === 400 || this.status === 422;
  }
  /** A 429 or 5xx: the same call may succeed later. */
  isTransient(): boolean {
    return this.status === 429 || this.status >= 500;
  }

  /** "message (code)", the form the CLI prints. */
  override toString(): string {
    if (!this.code) return this.message;
    if (!this.message) return this.code;
    return `${this.message} (${this.code})`;
  }
}

/**
 * Reports whether e is a HutchError. Unlike `instanceof`, it also holds for an
 * error made by the other build of this package (ESM and CommonJS loaded
 * together).
 */
export function isHutchError(e: unknown): e is HutchError {
  return (
    e instanceof HutchError ||
    (typeof e === "object" && e !== null && (e as { name?: unknown }).name === "HutchError" &&
      typeof (e as { status?: unknown }).status === "number")
  );
}

/** Reads a non-2xx answer into a HutchError. */
export async function readError(resp: Response): Promise<HutchError> {
  let text = "";
  try {
    const buf = new Uint8Array(await resp.arrayBuffer());
    text = new TextDecoder().decode(buf.subarray(0, MAX_ERROR_BODY));
  } catch {
    // the body broke: the status alone says what happened
  }
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (body && typeof body.error?.code === "string" && body.error.code !== "") {
      return new HutchError(resp.status, body.error.code, String(body.error.message ?? ""));
    }
  } catch {
    // not JSON: fall through
  }
  let msg = `server answered ${resp.status} ${resp.statusText}`.trimEnd();
  const s = text.split(/\s+/).join(" ").trim();
  if (s) msg += ": " + (s.length > 200 ? s.slice(0, 200) + "…" : s);
  return new HutchError(resp.status, "", msg);
}
