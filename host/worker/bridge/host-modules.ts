// Host modules, worker side: serves `import … from "app"` for the modules the embedder
// declared (their shape and copied values), and relays the guest's calls of host functions
// to the embedder's thread (host/host-modules/call-server.ts) over the worker's host-call
// channel. Every call is checked here first: the function number must be one the
// embedder declared for this activation, the arguments must fit maxHostCallBytes, and the
// activation must not have made more than maxHostCalls calls.
//
// Async calls are pending work of the activation (it waits for them; its end cancels
// them). A synchronous call blocks this thread until the embedder answers, outside the
// guard's CPU accounting: the wait counts toward wallTimeMs only.
import type { QuickJSHandle } from "quickjs-emscripten-core";
import { canMoveBytes, canMoveString } from "../../engine/headroom.js";
import type { ActivationHostCalls, HostCallReply, HostModuleManifest, HostModulesManifest } from "../../host-modules/manifest.js";
import { formatBytes } from "../../limits.js";
import { HostCallChannel } from "../host-calls/channel.js";
import type { Realm } from "../realm.js";
import { BridgeArgumentError, functionArg, integerArg, stringArg } from "./args.js";
import type { BridgeFunctions } from "./index.js";

/** The most byte arrays (Uint8Array, ArrayBuffer, …) one host call's arguments may hold. */
export const MAX_CALL_BUFFERS = 10_000;

interface Attached {
  base: HostModulesManifest | null;
  run: HostModulesManifest | null;
  token: number;
}

const attached = new WeakMap<Realm, Attached>();

/** Gives a realm the host modules (and activation token) of the run or plugin load about to start. */
export function attachHostModules(realm: Realm, base: HostModulesManifest | null | undefined, calls: ActivationHostCalls | undefined): void {
  if (calls === undefined) attached.delete(realm);
  else attached.set(realm, { base: base ?? null, run: calls.modules, token: calls.token });
}

/** A plugin call: same modules as the plugin's load, the call's own token. */
export function renewHostCallToken(realm: Realm, calls: ActivationHostCalls | undefined): void {
  const current = attached.get(realm);
  if (current && calls) current.token = calls.token;
}

function findModule(realm: Realm, name: string): HostModuleManifest | undefined {
  const modules = attached.get(realm);
  if (!modules) return undefined;
  if (modules.run && Object.hasOwn(modules.run, name)) return modules.run[name];
  if (modules.base && Object.hasOwn(modules.base, name)) return modules.base[name];
  return undefined;
}

/** Reserved words cannot be named exports of the generated module (they stay on the default export). */
const RESERVED = new Set(
  "await break case catch class const continue debugger default delete do else enum export extends false finally for function if implements import in instanceof interface let new null package private protected public return static super switch this throw true try typeof var void while with yield".split(
    " ",
  ),
);
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** ES module source for `import … from "<name>"`, or undefined when the realm has no such host module. */
export function hostModuleSource(realm: Realm, name: string): string | undefined {
  const module = findModule(realm, name);
  if (!module) return undefined;
  const names = module.names.filter((key) => IDENTIFIER.test(key) && !RESERVED.has(key));
  return (
    `const m = __scriptbox.import(${JSON.stringify(`host:${name}`)});\n` +
    `export default m;\n` +
    (names.length ? `export const { ${names.join(", ")} } = m;\n` : "")
  );
}

const functionTables = new WeakMap<Attached, Map<number, { label: string; sync: boolean }>>();

/** The label ("app.store.get") and kind of function `id` in this realm's modules. */
function findFunction(modules: Attached, id: number): { label: string; sync: boolean } | undefined {
  let table = functionTables.get(modules);
  if (!table) functionTables.set(modules, (table = new Map()));
  let found = table.get(id);
  if (!found) {
    found = lookUpFunction(modules, id);
    if (found) table.set(id, found);
  }
  return found;
}

/** Each module's functions, parsed once per manifest. */
const parsedFunctions = new WeakMap<HostModuleManifest, Record<number, [string, 0 | 1]>>();

function lookUpFunction(modules: Attached, id: number): { label: string; sync: boolean } | undefined {
  for (const manifest of [modules.run, modules.base]) {
    if (!manifest) continue;
    for (const name of Object.keys(manifest)) {
      const module = manifest[name]!;
      let functions = parsedFunctions.get(module);
      if (!functions) parsedFunctions.set(module, (functions = JSON.parse(module.functions) as Record<number, [string, 0 | 1]>));
      const found = Object.hasOwn(functions, id) ? functions[id] : undefined;
      if (found) return { label: found[0], sync: found[1] === 1 };
    }
  }
  return undefined;
}

/** Text for newString, which goes through a C string: no NULs, no lone surrogates. */
function cText(text: string): string {
  return text.replace(/\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\uFFFD");
}

export function hostModuleFunctions(realm: Realm): BridgeFunctions {
  const ctx = realm.context;

  /** Moves JSON text and buffers into the guest as [json, buffers], or null when memory is short. */
  const moveIn = (json: string, buffers: ArrayBuffer[]): [QuickJSHandle, QuickJSHandle] | null => {
    const engine = realm.services.engine;
    const total = buffers.reduce((sum, buffer) => sum + buffer.byteLength, 0);
    if (!canMoveString(engine, json.length) || !canMoveBytes(engine, total)) return null;
    const array = ctx.newArray();
    buffers.forEach((buffer, i) => {
      const handle = ctx.newArrayBuffer(buffer);
      ctx.setProp(array, i, handle);
      handle.dispose();
    });
    return [ctx.newString(json), array];
  };

  /** Checks a call and copies its arguments out of the guest. */
  const prepareCall = (idHandle: QuickJSHandle | undefined, jsonHandle: QuickJSHandle | undefined, buffersHandle: QuickJSHandle | undefined, sync: boolean) => {
    const activation = realm.activation;
    const modules = attached.get(realm);
    if (!activation || !modules) throw new BridgeArgumentError("no host modules are available here");
    const id = integerArg(ctx, idHandle, "host function", 0, 1_000_000);
    const fn = findFunction(modules, id);
    if (!fn || fn.sync !== sync) throw new BridgeArgumentError(`no ${sync ? "synchronous" : "async"} host function ${id}`);
    const limits = activation.limits;
    activation.hostCallCount++;
    if (activation.hostCallCount > limits.maxHostCalls) {
      const message = `limit: maxHostCalls (${limits.maxHostCalls}) exceeded: ${fn.label} was called once too often in this run`;
      realm.stopForLimit(message);
      throw new RangeError(message);
    }
    const json = stringArg(ctx, jsonHandle, "arguments");
    const tooLarge = (size: number) =>
      new RangeError(`limit: maxHostCallBytes (${formatBytes(limits.maxHostCallBytes)}) exceeded: the arguments of ${fn.label} are ${size} bytes or more`);
    let size = json.length;
    if (size > limits.maxHostCallBytes) throw tooLarge(size);
    const buffers: ArrayBuffer[] = [];
    const bufferType = buffersHandle === undefined ? "undefined" : ctx.typeof(buffersHandle);
    if (bufferType !== "undefined" && bufferType !== "object") throw new BridgeArgumentError("buffers must be an array of ArrayBuffers or undefined");
    let count = 0;
    if (bufferType === "object") {
      const lengthHandle = ctx.getProp(buffersHandle!, "length");
      count = ctx.typeof(lengthHandle) === "number" ? ctx.getNumber(lengthHandle) : -1;
      lengthHandle.dispose();
    }
    if (!Number.isInteger(count) || count < 0) throw new BridgeArgumentError("buffers must be an array of ArrayBuffers");
    // Each one is host work the interrupt cannot stop (~2 µs here, then a message part):
    // 100,000 held the worker past its CPU deadline and got it terminated.
    if (count > MAX_CALL_BUFFERS) throw new RangeError(`limit: a host call carries at most ${MAX_CALL_BUFFERS} byte arrays; the arguments of ${fn.label} have ${count}`);
    for (let i = 0; i < count; i++) {
      const handle = ctx.getProp(buffersHandle!, i);
      try {
        let view;
        try {
          view = ctx.getArrayBuffer(handle);
        } catch {
          throw new BridgeArgumentError("buffers must be an array of ArrayBuffers");
        }
        // The view dies when the wasm heap grows: copy at once.
        const bytes = view.consume((v) => v.value.slice());
        size += bytes.byteLength;
        if (size > limits.maxHostCallBytes) throw tooLarge(size);
        buffers.push(bytes.buffer);
      } finally {
        handle.dispose();
      }
    }
    if (!sync) {
      // What the run's unanswered calls carry stays within its own memory limit: a script
      // firing un-awaited 8 MiB calls at a slow function made the embedder hold ~2 GB.
      // Checked before the call counts as an effect: refused, it never reached the embedder.
      const inFlightMax = Math.max(limits.memoryBytes, limits.maxHostCallBytes);
      if (activation.hostCallBytesInFlight + size > inFlightMax) {
        throw new RangeError(
          `limit: the arguments of the host calls waiting for an answer may carry at most memoryBytes (${formatBytes(inFlightMax)}); ${fn.label} would add ${size} bytes to ${activation.hostCallBytesInFlight}`,
        );
      }
    }
    const channel = HostCallChannel.current();
    if (!channel) throw new BridgeArgumentError("host calls need the sandbox's worker");
    // The embedder's function is about to run: a run that loses its worker after this
    // point is not re-run transparently (it ends "evicted"; see host/tenancy-outcomes.ts).
    activation.noteEffect();
    return { activation, token: modules.token, id, label: fn.label, json, buffers, channel, bytes: size };
  };

  return {
    /** [membersJson, valuesJson, valueBuffers, maxHostCallBytes] of host module `name`. */
    hostModule(nameHandle) {
      const name = stringArg(ctx, nameHandle, "module name");
      const module = findModule(realm, name);
      if (!module) throw new BridgeArgumentError(`no host module named "${name}"`);
      const values = moveIn(module.values.json, module.values.buffers.map((buffer) => buffer.slice(0)));
      if (values === null) throw new RangeError(`limit: memoryBytes: no room for the values of host module "${name}"`);
      const out = ctx.newArray();
      const members = ctx.newString(cText(module.members));
      ctx.setProp(out, 0, members);
      ctx.setProp(out, 1, values[0]);
      ctx.setProp(out, 2, values[1]);
      // The stubs refuse arguments past it while encoding them (guest-lib/marshal serializeWithin).
      const maxCallBytes = ctx.newNumber(realm.services.config().limits.maxHostCallBytes);
      ctx.setProp(out, 3, maxCallBytes);
      for (const handle of [members, ...values, maxCallBytes]) handle.dispose();
      return out;
    },

    /** Starts an async call; `onSettle(true, json, buffers)` or `onSettle(false, name, message, code)` runs once. */
    hostCall(idHandle, jsonHandle, buffersHandle, onSettleHandle) {
      const call = prepareCall(idHandle, jsonHandle, buffersHandle, false);
      const { activation, channel, label, bytes } = call;
      const onSettle = realm.own(functionArg(ctx, onSettleHandle, "onSettle"));
      activation.hostCallBytesInFlight += bytes;
      let settled = false;
      // Once, when the answer comes or the call is aborted. Captures no argument: they are
      // garbage here once posted (the settle callback lives as long as the call).
      const release = () => {
        if (settled) return;
        settled = true;
        activation.hostCallBytesInFlight -= bytes;
        if (realm.alive && onSettle.alive) {
          realm.disown(onSettle);
          onSettle.dispose();
        }
      };
      const callId = channel.callAsync(call.token, call.id, call.json, call.buffers, (reply) => {
        realm.guestTask(() => {
          if (realm.activation !== activation || !activation.hostCalls.delete(callId)) return;
          const args = replyArguments(reply, label);
          const done = realm.enterGuest(() => ctx.callFunction(onSettle, ctx.undefined, args));
          for (const handle of args) handle.dispose();
          done?.dispose();
        });
        release();
      });
      activation.hostCalls.set(callId, {
        abort: () => {
          channel.forget(callId);
          release();
        },
      });
      return undefined;
    },

    /** Runs a synchronous host function: its result's JSON text, [true, json, buffers], or [false, name, message, code]. */
    hostCallSync(idHandle, jsonHandle, buffersHandle) {
      const call = prepareCall(idHandle, jsonHandle, buffersHandle, true);
      const { activation } = call;
      const outcome = realm.guard.outsideGuest(
        () => call.channel.callSync(call.token, call.id, call.json, call.buffers, activation.wallDeadline),
        () => call.channel.lastSyncSleptMs,
      );
      if (outcome === "timeout") {
        const message = `${activation.wallLimitMessage()} while waiting for ${call.label} (a synchronous host function)`;
        activation.failLimit("timeout", message);
        realm.guard.stopNow("timeout");
        throw new Error(message);
      }
      if (outcome.ok && outcome.b.length === 0 && canMoveString(realm.services.engine, outcome.j.length)) return ctx.newString(outcome.j);
      const args = replyArguments(outcome, call.label);
      const out = ctx.newArray();
      args.forEach((handle, i) => {
        ctx.setProp(out, i, handle);
        handle.dispose();
      });
      return out;
    },
  };

  /** The guest's view of an answer: [true, json, buffers or undefined] or [false, name, message, code]. */
  function replyArguments(reply: HostCallReply, label: string): QuickJSHandle[] {
    if (reply.ok) {
      // No buffers (the common answer): the guest gets undefined rather than an empty array.
      if (reply.b.length === 0 && canMoveString(realm.services.engine, reply.j.length)) return [ctx.true, ctx.newString(reply.j), ctx.undefined];
      const moved = reply.b.length === 0 ? null : moveIn(reply.j, reply.b);
      if (moved !== null) return [ctx.true, ...moved];
      const size = reply.j.length + reply.b.reduce((sum, buffer) => sum + buffer.byteLength, 0);
      return [ctx.false, ctx.newString("RangeError"), ctx.newString(`limit: memoryBytes: no room in the sandbox for the result of ${label} (${size} bytes)`)];
    }
    const { name, message, code } = reply.e;
    const codeHandle = typeof code === "number" ? ctx.newNumber(code) : typeof code === "string" ? ctx.newString(cText(code)) : ctx.undefined;
    return [ctx.false, ctx.newString(name), ctx.newString(cText(message)), codeHandle];
  }
}
