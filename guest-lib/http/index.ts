// The http module (spec: shared/spec/http-module.md): fetch and its value classes. Loaded
// into a sandbox the first time a script touches one of these globals or imports "http".
export { Blob, File } from "./blob";
export { Headers } from "./headers";
export { Request } from "./request";
export { Response } from "./response";
export { FormData } from "./form-data";
export { fetch } from "./fetch";
