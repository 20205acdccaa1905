/**
 * The TypeScript SDK of hutch's /v1 API: sandboxes, exec (whole or
 * streamed), files and tar archives, watches, processes, terminals, events,
 * previews, network, secrets, snapshots, templates and apps. No runtime
 * dependency: the fetch and web streams of Node 18+.
 *
 * @packageDocumentation
 */
export { Hutch, DEFAULT_URL, type HutchOptions } from "./client.js";
export { HutchError, isHutchError } from "./errors.js";
export { Sandboxes, Sandbox, type ListOptions } from "./sandboxes.js";
export { ExecStream, decodeExecResult, type ExecResult, type ExecEvent, type Command } from "./exec.js";
export { Processes, OutputStream, type OutputEvent, type OutputOptions } from "./processes.js";
export { Files, Watch } from "./files.js";
export { Events, EventStream, type EventQuery, type FollowOptions } from "./events.js";
export { Terminal, type TerminalOptions, type TerminalOutput } from "./terminal.js";
export { Previews } from "./previews.js";
export { NetworkPolicies } from "./network.js";
export { Secrets } from "./secrets.js";
export { Snapshots } from "./snapshots.js";
export { Templates } from "./templates.js";
export { Apps, TaskLog, taskDone, type TaskLogEntry, type AppLogLine } from "./apps.js";
export { fromBase64, toBase64 } from "./streams.js";
export type { CallOptions, Body } from "./transport.js";
export type * from "./types.js";
export type { components, paths, operations } from "./generated/api.js";
