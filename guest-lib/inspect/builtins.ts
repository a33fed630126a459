// The builtins this module uses, captured when it loads. The core loads guest modules with
// the original builtins in place (guest-lib/core/modules.ts), so these are the originals
// even if the script has deleted or replaced the globals by the time it logs something.
const g = globalThis;
export const Map = g.Map;
export const Set = g.Set;
export const WeakMap = g.WeakMap;
export const WeakSet = g.WeakSet;
export const Promise = g.Promise;
export const RegExp = g.RegExp;
export const Date = g.Date;
export const Error = g.Error;
export const ArrayBuffer = g.ArrayBuffer;
export const DataView = g.DataView;
export const Uint8Array = g.Uint8Array;
export const Number = g.Number;
export const String = g.String;
export const Boolean = g.Boolean;
export const Object = g.Object;
export const Array = g.Array;
export const Math = g.Math;
export const Symbol = g.Symbol;
export const JSON = g.JSON;
export const Function = g.Function;
export const parseInt = g.parseInt;
export const parseFloat = g.parseFloat;
