// Timer globals. The guest keeps the callbacks, the host keeps the clock: bridge.timerStart asks
// the host event loop to call hooks.dispatchTimer(id) after the delay; the host enforces
// maxTimers and decides when a run is finished (unref'd timers do not keep it alive).
import bridge from "scriptbox:bridge";
import { MapCtor, NumberCtor, TypeErrorCtor, promiseResolve, promiseThen } from "scriptbox:intrinsics";

interface TimerEntry {
  callback: (...args: unknown[]) => void;
  args: unknown[];
  repeat: boolean;
}

const active = new MapCtor<number, TimerEntry>();
let nextId = 1;
const MAX_DELAY = 2147483647; // Node and browsers: larger delays become 1 ms

function describe(value: unknown): string {
  return typeof value === "string" ? `type string ('${value.slice(0, 20)}')` : value === null ? "null" : `type ${typeof value}`;
}

function toDelay(value: unknown): number {
  const delay = NumberCtor(value);
  return delay >= 1 && delay <= MAX_DELAY ? delay : 1;
}

export function setTimer(callback: (...args: unknown[]) => void, delayMs: number, repeat: boolean, unref: boolean, args: unknown[] = []): number {
  if (typeof callback !== "function") {
    throw new TypeErrorCtor(`The "callback" argument must be of type function. Received ${describe(callback)}`);
  }
  const id = nextId++;
  active.set(id, { callback, args, repeat });
  try {
    bridge.timerStart(id, toDelay(delayMs), repeat, unref);
  } catch (error) {
    active.delete(id);
    throw error;
  }
  return id;
}

export function clearTimer(id: unknown): void {
  const key = NumberCtor(id);
  if (active.delete(key)) bridge.timerStop(key);
}

/** Called by the host when timer `id` is due. */
export function dispatchTimer(id: number): void {
  const entry = active.get(id);
  if (entry === undefined) return;
  if (!entry.repeat) active.delete(id);
  const { callback, args } = entry;
  callback(...args);
}

export function queueMicrotask(callback: () => void): void {
  if (typeof callback !== "function") {
    throw new TypeErrorCtor(`The "callback" argument must be of type function. Received ${describe(callback)}`);
  }
  // An exception in the callback rejects this internal promise, which nobody handles:
  // the host's rejection tracker reports it and fails the run, as Node does.
  promiseThen.call(promiseResolve(undefined), () => callback());
}

export function setTimeout(callback: (...args: unknown[]) => void, delay?: number, ...args: unknown[]): number {
  return setTimer(callback, delay ?? 0, false, false, args);
}
export function setInterval(callback: (...args: unknown[]) => void, delay?: number, ...args: unknown[]): number {
  return setTimer(callback, delay ?? 0, true, false, args);
}
export { clearTimer as clearTimeout, clearTimer as clearInterval };
