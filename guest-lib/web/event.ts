// DOM §2.2 Event and §2.7 EventTarget, for targets that are not nodes: there is no tree,
// so dispatch runs the capturing listeners and then the others on the target itself.
import { queueMicrotask } from "scriptbox:core";
import { DOMException } from "./dom-exception";
import {
  TypeErrorCtor,
  dateNow,
  defineProperty,
  toDOMString,
  toDictionary,
  webidlInterface,
} from "./webidl";

const NONE = 0;
const CAPTURING_PHASE = 1;
const AT_TARGET = 2;
const BUBBLING_PHASE = 3;

const STOP_PROPAGATION = 1;
const STOP_IMMEDIATE = 2;
const CANCELED = 4;
const IN_PASSIVE = 8;
const DISPATCHING = 16;

// Filled by Event's static block: dispatch needs the event's internal slots.
let eventSlots: (event: Event) => EventSlots;

const isTrustedDescriptor: PropertyDescriptor = {
  get: function isTrusted(this: Event): boolean {
    return eventSlots(this).trusted; // TypeError when this is not an Event
  },
  enumerable: true,
  configurable: false,
};
defineProperty(isTrustedDescriptor.get!, "name", { value: "get isTrusted" });

interface EventSlots {
  flags: number;
  target: EventTarget | null;
  currentTarget: EventTarget | null;
  phase: number;
  trusted: boolean;
}

export class Event {
  #type: string;
  #bubbles: boolean;
  #cancelable: boolean;
  #composed: boolean;
  #timeStamp = dateNow();
  #slots: EventSlots = { flags: 0, target: null, currentTarget: null, phase: NONE, trusted: false };

  static {
    eventSlots = (event) => event.#slots;
  }

  constructor(type: string, eventInitDict?: { bubbles?: boolean; cancelable?: boolean; composed?: boolean }) {
    if (arguments.length === 0) throw new TypeErrorCtor("Event constructor: the type argument is required");
    this.#type = toDOMString(type);
    const init = toDictionary(eventInitDict, "Event init");
    this.#bubbles = !!init.bubbles;
    this.#cancelable = !!init.cancelable;
    this.#composed = !!init.composed;
    // DOM: isTrusted is [LegacyUnforgeable], so an own accessor of every event (the same
    // getter for all), which a script can neither redefine nor shadow.
    defineProperty(this, "isTrusted", isTrustedDescriptor);
  }

  get type(): string {
    return this.#type;
  }
  get target(): EventTarget | null {
    return this.#slots.target;
  }
  get srcElement(): EventTarget | null {
    return this.#slots.target;
  }
  get currentTarget(): EventTarget | null {
    return this.#slots.currentTarget;
  }
  composedPath(): EventTarget[] {
    const current = this.#slots.currentTarget;
    return current ? [current] : [];
  }
  get eventPhase(): number {
    return this.#slots.phase;
  }
  stopPropagation(): void {
    this.#slots.flags |= STOP_PROPAGATION;
  }
  get cancelBubble(): boolean {
    return (this.#slots.flags & STOP_PROPAGATION) !== 0;
  }
  set cancelBubble(value: boolean) {
    if (value) this.#slots.flags |= STOP_PROPAGATION;
  }
  stopImmediatePropagation(): void {
    this.#slots.flags |= STOP_PROPAGATION | STOP_IMMEDIATE;
  }
  get bubbles(): boolean {
    return this.#bubbles;
  }
  get cancelable(): boolean {
    return this.#cancelable;
  }
  get returnValue(): boolean {
    return (this.#slots.flags & CANCELED) === 0;
  }
  set returnValue(value: boolean) {
    if (!value) this.preventDefault();
  }
  preventDefault(): void {
    const slots = this.#slots;
    if (this.#cancelable && !(slots.flags & IN_PASSIVE)) slots.flags |= CANCELED;
  }
  get defaultPrevented(): boolean {
    return (this.#slots.flags & CANCELED) !== 0;
  }
  get composed(): boolean {
    return this.#composed;
  }
  get timeStamp(): number {
    return this.#timeStamp;
  }
  initEvent(type: string, bubbles = false, cancelable = false): void {
    if (this.#slots.flags & DISPATCHING) return;
    this.#type = toDOMString(type);
    this.#bubbles = !!bubbles;
    this.#cancelable = !!cancelable;
    this.#slots.flags = 0;
    this.#slots.target = null;
  }
}

webidlInterface(Event, 1);

// Declared for TypeScript; defined on each instance by the constructor.
export interface Event {
  readonly isTrusted: boolean;
}
for (const [name, value] of [["NONE", NONE], ["CAPTURING_PHASE", CAPTURING_PHASE], ["AT_TARGET", AT_TARGET], ["BUBBLING_PHASE", BUBBLING_PHASE]] as const) {
  defineProperty(Event, name, { value, enumerable: true });
  defineProperty(Event.prototype, name, { value, enumerable: true });
}

/** DOM §2.4 CustomEvent: an Event carrying the application's `detail` (null by default). */
export class CustomEvent<T = unknown> extends Event {
  #detail: T | null;

  constructor(type: string, eventInitDict?: { bubbles?: boolean; cancelable?: boolean; composed?: boolean; detail?: T }) {
    if (arguments.length === 0) throw new TypeErrorCtor("CustomEvent constructor: the type argument is required");
    super(type, eventInitDict);
    const detail = toDictionary(eventInitDict, "CustomEvent init").detail as T | undefined;
    this.#detail = detail === undefined ? null : detail;
  }

  get detail(): T | null {
    return this.#detail;
  }

  initCustomEvent(type: string, bubbles = false, cancelable = false, detail: T | null = null): void {
    if (arguments.length === 0) throw new TypeErrorCtor("initCustomEvent: the type argument is required");
    if (eventSlots(this).flags & DISPATCHING) return;
    this.initEvent(type, bubbles, cancelable);
    this.#detail = detail;
  }
}

webidlInterface(CustomEvent, 1);

type Callback = ((event: Event) => unknown) | { handleEvent(event: Event): unknown };

interface Listener {
  type: string;
  callback: Callback;
  capture: boolean;
  once: boolean;
  passive: boolean;
  removed: boolean;
}

/** An error thrown by a listener is reported as an uncaught error, as in Node and Deno. */
function reportError(error: unknown): void {
  queueMicrotask(() => {
    throw error;
  });
}

/** Dispatches an event on a target (DOM §2.9); set by EventTarget's static block. */
let dispatch: (target: EventTarget, event: Event) => boolean;

// Set by abort.ts: EventTarget needs it for the `signal` listener option.
export const signalHooks: {
  isSignal(value: unknown): boolean;
  follow(signal: unknown, algorithm: () => void): void;
  aborted(signal: unknown): boolean;
} = { isSignal: () => false, follow: () => {}, aborted: () => false };

export class EventTarget {
  #listeners: Listener[] = [];

  addEventListener(type: string, callback: Callback | null, options?: boolean | AddEventListenerOptions): void {
    type = toDOMString(type);
    let capture = false;
    let once = false;
    let passive = false;
    let signal: unknown;
    if (typeof options === "boolean") capture = options;
    else {
      const init = toDictionary(options, "addEventListener options");
      capture = !!init.capture;
      once = !!init.once;
      passive = !!init.passive;
      signal = init.signal;
      if (signal !== undefined && !signalHooks.isSignal(signal)) throw new TypeErrorCtor("addEventListener: signal is not an AbortSignal");
    }
    if (callback === null || callback === undefined) return;
    if (typeof callback !== "function" && typeof callback !== "object") throw new TypeErrorCtor("addEventListener: the listener is not an object");
    if (signal !== undefined && signalHooks.aborted(signal)) return;
    const list = this.#listeners;
    for (const l of list) if (l.type === type && l.callback === callback && l.capture === capture) return;
    const listener: Listener = { type, callback, capture, once, passive, removed: false };
    list.push(listener);
    if (signal !== undefined) signalHooks.follow(signal, () => this.#remove(listener));
  }

  removeEventListener(type: string, callback: Callback | null, options?: boolean | EventListenerOptions): void {
    type = toDOMString(type);
    const capture = typeof options === "boolean" ? options : !!toDictionary(options, "removeEventListener options").capture;
    for (const l of this.#listeners) {
      if (l.type === type && l.callback === callback && l.capture === capture) return this.#remove(l);
    }
  }

  dispatchEvent(event: Event): boolean {
    const slots = eventSlots(event); // TypeError when event is not an Event
    if (slots.flags & DISPATCHING) throw new DOMException("The event is already being dispatched.", "InvalidStateError");
    slots.trusted = false;
    return dispatch(this, event);
  }

  #remove(listener: Listener): void {
    listener.removed = true;
    const list = this.#listeners;
    const index = list.indexOf(listener);
    if (index >= 0) list.splice(index, 1);
  }

  static {
    dispatch = (target, event) => {
      const slots = eventSlots(event);
      slots.flags = (slots.flags & CANCELED) | DISPATCHING;
      slots.target = target;
      slots.currentTarget = target;
      slots.phase = AT_TARGET;
      const listeners = target.#listeners.filter((l) => l.type === event.type);
      // DOM "invoke" twice at the target: capturing listeners first, then the others.
      for (const capturePass of [true, false]) {
        if (slots.flags & STOP_PROPAGATION) break;
        for (const listener of listeners) {
          if (listener.removed || listener.capture !== capturePass) continue;
          if (listener.once) target.#remove(listener);
          if (listener.passive) slots.flags |= IN_PASSIVE;
          try {
            const callback = listener.callback;
            if (typeof callback === "function") callback.call(target, event);
            else {
              const handle = callback.handleEvent;
              if (typeof handle !== "function") throw new TypeErrorCtor("The listener has no handleEvent method");
              handle.call(callback, event);
            }
          } catch (error) {
            reportError(error);
          }
          slots.flags &= ~IN_PASSIVE;
          if (slots.flags & STOP_IMMEDIATE) break;
        }
        if (slots.flags & STOP_IMMEDIATE) break;
      }
      slots.phase = NONE;
      slots.currentTarget = null;
      slots.flags &= CANCELED;
      return (slots.flags & CANCELED) === 0;
    };
  }
}

webidlInterface(EventTarget, 0);

interface EventListenerOptions {
  capture?: boolean;
}
interface AddEventListenerOptions extends EventListenerOptions {
  once?: boolean;
  passive?: boolean;
  signal?: unknown;
}

/** Fires a trusted event of the given type at target (DOM "fire an event"). */
export function fireEvent(target: EventTarget, type: string): void {
  const event = new Event(type);
  eventSlots(event).trusted = true;
  dispatch(target, event);
}
