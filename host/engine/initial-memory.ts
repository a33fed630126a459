// The emscripten build asks for 16 MiB of initial memory; a cap below that cannot work.
// Its own module so that validating limits on the embedder's thread does not load the
// engine library (quickjs-emscripten and its glue) at `import "scriptbox"`.
export const ENGINE_INITIAL_MEMORY_BYTES = 16 * 1024 * 1024;

// The build's wasm module declares a memory of at most 32,768 pages (2 GiB): an instance's
// Memory with a larger maximum cannot be imported ("memory import has a larger maximum size
// than the module's declared maximum"). So 2 GiB is the highest memoryBytes a sandbox can
// have; above it, a sandbox was accepted and then failed at its first run.
export const ENGINE_MAXIMUM_MEMORY_BYTES = 2048 * 1024 * 1024;
