// Value marshalling and error description, for the host (see core's hooks).
export { serialize, serializeWithin, deserialize } from "./values.js";
export { describeError } from "./errors.js";
