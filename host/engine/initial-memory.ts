// The emscripten build asks for 16 MiB of initial memory; a cap below that cannot work.
// Its own module so that validating limits on the embedder's thread does not load the
// engine library (quickjs-emscripten and its glue) at `import "scriptbox"`.
export const ENGINE_INITIAL_MEMORY_BYTES = 16 * 1024 * 1024;
