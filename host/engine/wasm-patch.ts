// The patches scriptbox makes to the QuickJS wasm binary before compiling it. Existing
// code and function indices never change: the patches only add exports and append new
// functions after the last one.
//
// 1. An export of the (already growable) function table, so the host can install a
//    trampoline for QuickJS's promise-rejection tracker, which quickjs-emscripten 0.32
//    does not expose (see rejection-tracker.ts).
// 2. Three functions that load the guest library as QuickJS bytecode instead of parsing
//    its source in every realm (see bytecode.ts): parsing costs ~0.15-0.4 ms per KB, and
//    every run gets a fresh realm. quickjs-emscripten exposes JS_WriteObject and
//    JS_ReadObject only as "binary JSON" (QTS_bjson_encode/decode), with the flags that
//    allow bytecode cleared, and nothing that runs a function read back. So we append
//      - BYTECODE_WRITE: a copy of QTS_bjson_encode whose writer state allows bytecode,
//      - BYTECODE_READ: a copy of QTS_bjson_decode whose reader state allows bytecode,
//      - BYTECODE_EVAL: (ctx, JSValue*) -> JSValue*: JS_EvalFunction on the value, which
//        it takes over (the slot is left holding undefined, so freeing the handle frees
//        nothing twice).
//    The copies differ from the originals in one constant: the initial value of the
//    reader's or writer's flag fields, located by shape (the i64 constant stored at the
//    flags' offset), which must match exactly once. JS_EvalFunction and the library's
//    jsvalue_to_heap are located by signature among the functions QTS_Eval calls. When
//    any of this is not found (another build of the engine, such as the debug variant),
//    only patch 1 is made and the host parses source as before. The originals stay as they
//    are: the bytecode reader trusts its input, so only the host ever feeds it (its own
//    compiler's output), and the guest reaches none of these functions.
// 3. A custom section (MEMORY_LAYOUT_SECTION) saying where the module's static data ends and
//    where its C stack starts (the heap begins there): a realm's memory image
//    (memory-image.ts) copies the statics and the heap, not the stack between them. Read
//    from the data segments and the stack pointer's initial value (the module's first
//    mutable i32 global); when the module does not have that shape, no section is added
//    and sandboxes build every realm.

export const TABLE_EXPORT_NAME = "scriptboxTable";
export const BYTECODE_WRITE_EXPORT = "scriptboxWriteBytecode";
export const BYTECODE_READ_EXPORT = "scriptboxReadBytecode";
export const BYTECODE_EVAL_EXPORT = "scriptboxEvalBytecode";
export const MEMORY_LAYOUT_SECTION = "scriptbox.memory-layout";

// quickjs-emscripten's export names for the functions we copy or look into (the glue's
// `Module._QTS_…` map them to minified export names, which we read from it).
const SECTION = { custom: 0, type: 1, import: 2, function: 3, table: 4, global: 6, export: 7, code: 10, data: 11 } as const;
const KIND_FUNCTION = 0;
const KIND_TABLE = 1;
const I32 = 0x7f;
const I64 = 0x7e;

const OP = { i64Const: 0x42, i64Store: 0x37, i64Load: 0x29, call: 0x10, localGet: 0x20, localSet: 0x21, end: 0x0b } as const;

/**
 * The writer state's flag bytes and first_atom (offset 28 of BCWriterState on wasm32):
 * allow_bytecode=0, allow_sab=0, allow_reference=1, first_atom=1 as QTS_bjson_encode sets
 * them; patched: allow_bytecode=1 and no object references (a bytecode function never
 * needs them; the write fails rather than emit one). first_atom stays 1 on both sides, so
 * every atom is written as its string and the bytes are valid in any runtime.
 */
const WRITER_FLAGS = { offset: 28, original: 0x1_0001_0000n, patched: 0x1_0000_0001n };
/** The reader's error_state and flag bytes (offset 40: error_state, allow_sab, allow_bytecode, …): all 0; patched allow_bytecode=1. */
const READER_FLAGS = { offset: 40, original: 0n, patched: 1n << 40n };
/** JS_UNDEFINED, NaN-boxed as the wasm32 build stores JSValue (tag 3 in the high word). */
const JS_UNDEFINED_BITS = 3n << 32n;

// ---- LEB128 -------------------------------------------------------------------------

export function readU(bytes: Uint8Array, start: number): [value: number, next: number] {
  let value = 0;
  let scale = 1;
  let pos = start;
  for (;;) {
    const byte = bytes[pos++];
    if (byte === undefined) throw new Error("wasm patch: truncated LEB128");
    value += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) return [value, pos];
    scale *= 128;
  }
}

function readS(bytes: Uint8Array, start: number): [value: bigint, next: number] {
  let value = 0n;
  let shift = 0n;
  let pos = start;
  let byte: number;
  do {
    byte = bytes[pos++]!;
    if (byte === undefined) throw new Error("wasm patch: truncated LEB128");
    value |= BigInt(byte & 0x7f) << shift;
    shift += 7n;
  } while (byte & 0x80);
  if (byte & 0x40) value -= 1n << shift;
  return [value, pos];
}

function encodeU(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  do {
    let byte = rest % 128;
    rest = Math.floor(rest / 128);
    if (rest !== 0) byte |= 0x80;
    out.push(byte);
  } while (rest !== 0);
  return out;
}

function encodeS(value: bigint): number[] {
  const out: number[] = [];
  let rest = value;
  for (;;) {
    const byte = Number(rest & 0x7fn);
    rest >>= 7n;
    if ((rest === 0n && (byte & 0x40) === 0) || (rest === -1n && (byte & 0x40) !== 0)) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
}

function encodeName(name: string): number[] {
  const bytes = new TextEncoder().encode(name);
  return [...encodeU(bytes.length), ...bytes];
}

// ---- reading the module ------------------------------------------------------------------

interface Section {
  id: number;
  /** Where the section starts (its id byte) and where its content starts and ends. */
  at: number;
  start: number;
  end: number;
}

interface Instruction {
  at: number;
  length: number;
  op: number;
  /** Immediates that matter here: call's function index, a memory access's offset, a constant. */
  imm: (number | bigint)[];
}

class WasmModuleView {
  readonly sections: Section[] = [];
  private readonly types: { params: number[]; results: number[] }[] = [];
  importedFunctions = 0;
  /** Type index of each function defined in the module. */
  readonly functionTypes: number[] = [];
  readonly functionExports = new Map<string, number>();
  private readonly bodies: { start: number; end: number }[] = [];

  constructor(readonly bytes: Uint8Array) {
    for (let pos = 8; pos < bytes.length; ) {
      const [size, start] = readU(bytes, pos + 1);
      this.sections.push({ id: bytes[pos]!, at: pos, start, end: start + size });
      pos = start + size;
    }
    const section = (id: number) => this.sections.find((s) => s.id === id);
    const types = section(SECTION.type);
    if (types) this.forEach(types, (pos) => this.readType(pos));
    const imports = section(SECTION.import);
    if (imports) this.forEach(imports, (pos) => this.readImport(pos));
    const functions = section(SECTION.function);
    if (functions) {
      this.forEach(functions, (pos) => {
        const [type, next] = readU(bytes, pos);
        this.functionTypes.push(type);
        return next;
      });
    }
    const exports = section(SECTION.export);
    if (exports) {
      this.forEach(exports, (pos) => {
        const [length, nameStart] = readU(bytes, pos);
        const name = new TextDecoder().decode(bytes.subarray(nameStart, nameStart + length));
        const kind = bytes[nameStart + length]!;
        const [index, next] = readU(bytes, nameStart + length + 1);
        if (kind === KIND_FUNCTION) this.functionExports.set(name, index);
        return next;
      });
    }
    const code = section(SECTION.code);
    if (code) {
      this.forEach(code, (pos) => {
        const [size, start] = readU(bytes, pos);
        this.bodies.push({ start, end: start + size });
        return start + size;
      });
    }
  }

  private forEach(section: Section, read: (pos: number) => number): void {
    let [count, pos] = readU(this.bytes, section.start);
    while (count-- > 0) pos = read(pos);
  }

  private readType(pos: number): number {
    if (this.bytes[pos] !== 0x60) throw new Error("wasm patch: unexpected type form");
    const [paramCount, paramsStart] = readU(this.bytes, pos + 1);
    const params = [...this.bytes.subarray(paramsStart, paramsStart + paramCount)];
    const [resultCount, resultsStart] = readU(this.bytes, paramsStart + paramCount);
    const results = [...this.bytes.subarray(resultsStart, resultsStart + resultCount)];
    this.types.push({ params, results });
    return resultsStart + resultCount;
  }

  private readImport(pos: number): number {
    const skipName = (at: number) => {
      const [length, start] = readU(this.bytes, at);
      return start + length;
    };
    let next = skipName(skipName(pos));
    const kind = this.bytes[next++]!;
    const limits = (at: number) => {
      const flags = this.bytes[at]!;
      let after = readU(this.bytes, at + 1)[1];
      if (flags & 1) after = readU(this.bytes, after)[1];
      return after;
    };
    if (kind === 0) {
      this.importedFunctions++;
      return readU(this.bytes, next)[1];
    }
    if (kind === 1) return limits(next + 1); // table: element type, limits
    if (kind === 2) return limits(next); // memory
    if (kind === 3) return next + 2; // global: value type, mutability
    throw new Error(`wasm patch: unknown import kind ${kind}`);
  }

  get functionCount(): number {
    return this.importedFunctions + this.functionTypes.length;
  }

  signature(fn: number): string {
    if (fn < this.importedFunctions) return "import";
    const type = this.types[this.functionTypes[fn - this.importedFunctions]!]!;
    const name = (t: number) => (t === I32 ? "i32" : t === I64 ? "i64" : `0x${t.toString(16)}`);
    return `(${type.params.map(name).join(",")})->(${type.results.map(name).join(",")})`;
  }

  typeIndex(fn: number): number {
    return this.functionTypes[fn - this.importedFunctions]!;
  }

  body(fn: number): { start: number; end: number } {
    const body = this.bodies[fn - this.importedFunctions];
    if (!body) throw new Error(`wasm patch: no body for function ${fn}`);
    return body;
  }

  /**
   * Where the static data ends (the last active data segment's end) and the C stack's top
   * (the first mutable i32 global's initial value, emscripten's stack pointer), or null when
   * the module is not laid out that way (an imported global, a non-constant offset, a stack
   * below the data).
   */
  memoryLayout(): { dataEnd: number; stackTop: number } | null {
    const globals = this.sections.find((s) => s.id === SECTION.global);
    const data = this.sections.find((s) => s.id === SECTION.data);
    if (!globals || !data) return null;
    let stackTop: number | null = null;
    this.forEach(globals, (pos) => {
      const valueType = this.bytes[pos]!;
      const mutable = this.bytes[pos + 1] === 1;
      const op = this.bytes[pos + 2]!;
      if (op !== 0x41) throw new Error("wasm patch: a global's initialiser is not i32.const");
      const [value, next] = readS(this.bytes, pos + 3);
      if (this.bytes[next] !== OP.end) throw new Error("wasm patch: a global's initialiser is not one constant");
      if (stackTop === null && valueType === I32 && mutable) stackTop = Number(value);
      return next + 1;
    });
    let dataEnd = 0;
    this.forEach(data, (pos) => {
      const [flags, next] = readU(this.bytes, pos);
      if (flags !== 0 || this.bytes[next] !== 0x41) throw new Error("wasm patch: a data segment that is not active at a constant offset");
      const [offset, afterOffset] = readS(this.bytes, next + 1);
      if (this.bytes[afterOffset] !== OP.end) throw new Error("wasm patch: a data segment's offset is not one constant");
      const [size, contentStart] = readU(this.bytes, afterOffset + 1);
      dataEnd = Math.max(dataEnd, Number(offset) + size);
      return contentStart + size;
    });
    if (stackTop === null || stackTop <= dataEnd) return null;
    return { dataEnd, stackTop };
  }

  /** Decodes a function body (MVP, sign-extension and bulk-memory opcodes; no SIMD). */
  instructions(fn: number): Instruction[] {
    const bytes = this.bytes;
    const { start, end } = this.body(fn);
    let [groups, pos] = readU(bytes, start);
    while (groups-- > 0) pos = readU(bytes, pos)[1] + 1;
    const out: Instruction[] = [];
    while (pos < end) {
      const at = pos;
      const op = bytes[pos++]!;
      const imm: (number | bigint)[] = [];
      const u = () => {
        const [value, next] = readU(bytes, pos);
        imm.push(value);
        pos = next;
      };
      if (op === 0x02 || op === 0x03 || op === 0x04) pos = readS(bytes, pos)[1];
      else if (op === 0x0c || op === 0x0d || op === 0x10 || (op >= 0x20 && op <= 0x26) || op === 0xd2) u();
      else if (op === 0x0e) {
        const [count, next] = readU(bytes, pos);
        pos = next;
        for (let i = 0; i <= count; i++) u();
      } else if (op === 0x11) {
        u();
        u();
      } else if (op >= 0x28 && op <= 0x3e) {
        u(); // alignment
        u(); // offset
      } else if (op === 0x3f || op === 0x40 || op === 0xd0) pos++;
      else if (op === 0x41 || op === 0x42) {
        const [value, next] = readS(bytes, pos);
        imm.push(value);
        pos = next;
      } else if (op === 0x43) pos += 4;
      else if (op === 0x44) pos += 8;
      else if (op === 0x1c) {
        const [count, next] = readU(bytes, pos);
        pos = next + count;
      } else if (op === 0xfc) {
        const [sub, next] = readU(bytes, pos);
        pos = next;
        if (sub === 8) {
          u();
          pos++;
        } else if (sub === 9 || sub === 13 || sub >= 15) u();
        else if (sub === 10) pos += 2;
        else if (sub === 11) pos++;
        else if (sub === 12 || sub === 14) {
          u();
          u();
        }
      } else if (op === 0xfd || op === 0xfe) throw new Error("wasm patch: SIMD and atomics are not decoded");
      out.push({ at, length: pos - at, op, imm });
    }
    if (pos !== end) throw new Error("wasm patch: function body decoded past its end");
    return out;
  }

  calls(fn: number): Set<number> {
    return new Set(this.instructions(fn).filter((i) => i.op === OP.call).map((i) => i.imm[0] as number));
  }
}

// ---- patches ---------------------------------------------------------------------------

interface NewFunction {
  name: string;
  type: number;
  body: number[];
}

/** A copy of `fn`'s body where the i64 constant stored at `flags.offset` changes value. */
function bodyWithFlags(view: WasmModuleView, fn: number, flags: { offset: number; original: bigint; patched: bigint }): number[] | null {
  const code = view.instructions(fn);
  const sites = code.filter(
    (ins, i) => ins.op === OP.i64Const && ins.imm[0] === flags.original && code[i + 1]?.op === OP.i64Store && code[i + 1]!.imm[1] === flags.offset,
  );
  if (sites.length !== 1) return null;
  const site = sites[0]!;
  const { start, end } = view.body(fn);
  const bytes = view.bytes;
  // The body as stored starts with its locals; the size prefix is written by the caller.
  return [...bytes.subarray(start, site.at), OP.i64Const, ...encodeS(flags.patched), ...bytes.subarray(site.at + site.length, end)];
}

function bytecodeFunctions(view: WasmModuleView, glueExports: Record<string, string>): NewFunction[] {
  const exported = (name: string) => {
    const exportName = glueExports[name];
    return exportName === undefined ? undefined : view.functionExports.get(exportName);
  };
  const encode = exported("QTS_bjson_encode");
  const decode = exported("QTS_bjson_decode");
  const evaluate = exported("QTS_Eval");
  if (encode === undefined || decode === undefined || evaluate === undefined) return [];
  const evalCalls = view.calls(evaluate);
  const decodeCalls = view.calls(decode);
  // JS_EvalFunction(ctx, JSValue) -> JSValue: the one callee of QTS_Eval with that shape.
  const evalFunction = [...evalCalls].filter((fn) => view.signature(fn) === "(i32,i64)->(i64)");
  // jsvalue_to_heap(JSValue) -> JSValue*: called by QTS_Eval and QTS_bjson_decode alike.
  const toHeap = [...evalCalls].filter((fn) => decodeCalls.has(fn) && view.signature(fn) === "(i64)->(i32)");
  if (evalFunction.length !== 1 || toHeap.length !== 1) return [];
  if (view.signature(encode) !== "(i32,i32)->(i32)" || view.signature(decode) !== "(i32,i32)->(i32)") return [];
  const write = bodyWithFlags(view, encode, WRITER_FLAGS);
  const read = bodyWithFlags(view, decode, READER_FLAGS);
  if (write === null || read === null) return [];
  const type = view.typeIndex(encode); // (i32, i32) -> i32, shared by all three
  // (ctx, JSValue* slot) -> JSValue*: value = *slot; *slot = undefined;
  // return jsvalue_to_heap(JS_EvalFunction(ctx, value)).
  const evalBody = [
    1, 1, I64, // one local: the value
    OP.localGet, 1, OP.i64Load, 3, 0, OP.localSet, 2,
    OP.localGet, 1, OP.i64Const, ...encodeS(JS_UNDEFINED_BITS), OP.i64Store, 3, 0,
    OP.localGet, 0, OP.localGet, 2, OP.call, ...encodeU(evalFunction[0]!), OP.call, ...encodeU(toHeap[0]!),
    OP.end,
  ];
  return [
    { name: BYTECODE_WRITE_EXPORT, type, body: write },
    { name: BYTECODE_READ_EXPORT, type, body: read },
    { name: BYTECODE_EVAL_EXPORT, type, body: evalBody },
  ];
}

/** Section content with `count` more entries and `extra` appended. */
function extendVector(bytes: Uint8Array, section: Section, count: number, extra: number[]): Uint8Array {
  const [existing, entriesStart] = readU(bytes, section.start);
  const head = encodeU(existing + count);
  const out = new Uint8Array(head.length + (section.end - entriesStart) + extra.length);
  out.set(head, 0);
  out.set(bytes.subarray(entriesStart, section.end), head.length);
  out.set(extra, head.length + (section.end - entriesStart));
  return out;
}

/**
 * Returns a patched copy of `wasm`: the table export always, the bytecode functions when
 * this build has what they need. `glueExports` maps the glue's names (QTS_Eval, …) to the
 * module's export names (see glueExportNames).
 */
export function patchEngineWasm(wasm: Uint8Array, glueExports: Record<string, string>): Uint8Array<ArrayBuffer> {
  const view = new WasmModuleView(wasm);
  if (!view.sections.some((s) => s.id === SECTION.table)) throw new Error("wasm patch: the module defines no function table");
  let added: NewFunction[] = [];
  try {
    added = bytecodeFunctions(view, glueExports);
  } catch {
    added = []; // a build we cannot read: no bytecode, sources are parsed as before
  }
  const first = view.functionCount;
  const replaced = new Map<number, Uint8Array>();
  for (const section of view.sections) {
    if (section.id === SECTION.function && added.length) {
      replaced.set(section.id, extendVector(wasm, section, added.length, added.flatMap((fn) => encodeU(fn.type))));
    } else if (section.id === SECTION.code && added.length) {
      replaced.set(section.id, extendVector(wasm, section, added.length, added.flatMap((fn) => [...encodeU(fn.body.length), ...fn.body])));
    } else if (section.id === SECTION.export) {
      const entries = [
        ...added.flatMap((fn, i) => [...encodeName(fn.name), KIND_FUNCTION, ...encodeU(first + i)]),
        ...encodeName(TABLE_EXPORT_NAME), KIND_TABLE, 0,
      ];
      replaced.set(section.id, extendVector(wasm, section, added.length + 1, entries));
    }
  }
  if (!replaced.has(SECTION.export)) throw new Error("wasm patch: no export section");
  const parts: Uint8Array[] = [wasm.subarray(0, 8)];
  for (const section of view.sections) {
    const content = replaced.get(section.id);
    if (content === undefined) parts.push(wasm.subarray(section.at, section.end));
    else parts.push(new Uint8Array([section.id, ...encodeU(content.length)]), content);
  }
  let layout: { dataEnd: number; stackTop: number } | null = null;
  try {
    layout = view.memoryLayout();
  } catch {
    layout = null; // a layout we cannot read: no images, every realm is built
  }
  if (layout) {
    const content = [...encodeName(MEMORY_LAYOUT_SECTION), ...encodeU(layout.dataEnd), ...encodeU(layout.stackTop)];
    parts.push(new Uint8Array([SECTION.custom, ...encodeU(content.length), ...content]));
  }
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let pos = 0;
  for (const part of parts) {
    out.set(part, pos);
    pos += part.length;
  }
  return out;
}

/**
 * The emscripten glue assigns `d._QTS_Eval=b.pa` (and so on) when the instance is ready:
 * read those pairs from its source, so no minified name is written down here.
 */
export function glueExportNames(glueSource: string): Record<string, string> {
  const names: Record<string, string> = {};
  for (const match of glueSource.matchAll(/\._(QTS_[A-Za-z_]+)=\w+\.(\w+)[;}]/g)) names[match[1]!] = match[2]!;
  return names;
}
