// The http module's figures (issue 3): guest fetch against a node:http server on
// 127.0.0.1, beside undici's own fetch called in the host against the same server in the
// same run (baselines from bench/fetch-host.mjs). Used by bench/run.mjs.
import { WARM_UP_REQUESTS, benchHostFetchBaseline, benchHostFetchBody, benchTransport, startBenchServer } from "./fetch-host.mjs";
import { median } from "./stats.mjs";

const distIndex = new URL("../dist/src/index.js", import.meta.url).href;

const SMALL_GETS = `export default async ({ url, n }) => {
  let bytes = 0;
  const start = Date.now();
  for (let i = 0; i < n; i++) {
    const res = await fetch(url);
    bytes += (await res.text()).length;
  }
  return { ms: Date.now() - start, bytes };
};`;

const LARGE_BODY = `export default async ({ url, runs }) => {
  let bytes = 0;
  for (let i = 0; i < runs; i++) {
    const res = await fetch(url);
    bytes += (await res.arrayBuffer()).byteLength;
  }
  return bytes;
};`;

function check(result, what) {
  if (!result.ok) throw new Error(`${what}: ${result.error.kind}: ${result.error.name}: ${result.error.message}`);
  return result.value;
}

/** The limits a bench run needs (the defaults allow 50 fetches per run). */
function benchLimits(extra = {}) {
  return { maxFetches: 100_000, cpuTimeMs: 120_000, wallTimeMs: 120_000, ...extra };
}

/** One round: both measurements back to back, the first of them alternating between rounds. */
async function backToBack(round, guest, host) {
  const [first, second] = round % 2 === 0 ? [guest, host] : [host, guest];
  await first();
  await second();
}

export async function benchHttp({ quick = false } = {}) {
  const { createSandbox } = await import(distIndex);
  const server = await startBenchServer();
  const { host } = new URL(server.origin);
  const n = quick ? 500 : 2000;
  // This machine is noisy (2 cores shared by the client, the server thread and whatever
  // else runs): each round measures guest and host back to back, alternating which goes
  // first, and the ratio reported is the median of the per-round ratios.
  const rounds = quick ? 1 : 5;
  try {
    // Small GETs: one run per round doing n sequential fetches; host baseline in between.
    const small = await createSandbox({ net: { allow: [host] }, limits: benchLimits() });
    check(await small.run(SMALL_GETS, { input: { url: server.smallUrl, n: WARM_UP_REQUESTS } }), "guest fetch warm-up");
    const guestRps = [];
    const hostRps = [];
    const transportRps = [];
    const measureGuest = async () => {
      const start = performance.now();
      check(await small.run(SMALL_GETS, { input: { url: server.smallUrl, n } }), "guest fetch");
      guestRps.push((n * 1000) / (performance.now() - start));
    };
    const measureHost = async () => hostRps.push((await benchHostFetchBaseline(server.smallUrl, n)).requestsPerSecond);
    for (let round = 0; round < rounds; round++) {
      await backToBack(round, measureGuest, measureHost);
      transportRps.push((await benchTransport(server.smallUrl, n)).requestsPerSecond);
    }
    await small.dispose();

    // 8 MiB bodies: the sandbox needs room for the body (and its copy) in its wasm memory.
    const runs = quick ? 2 : 5;
    const large = await createSandbox({ net: { allow: [host] }, limits: benchLimits({ memoryBytes: 256 * 1024 * 1024 }) });
    check(await large.run(LARGE_BODY, { input: { url: server.largeUrl, runs: 1 } }), "guest 8 MiB warm-up");
    const guestMBps = [];
    const hostMBps = [];
    const measureGuestBody = async () => {
      const start = performance.now();
      const bytes = check(await large.run(LARGE_BODY, { input: { url: server.largeUrl, runs } }), "guest 8 MiB read");
      guestMBps.push(bytes / 1e6 / ((performance.now() - start) / 1000));
    };
    const measureHostBody = async () => hostMBps.push((await benchHostFetchBody(server.largeUrl, runs)).megabytesPerSecond);
    for (let round = 0; round < rounds; round++) await backToBack(round, measureGuestBody, measureHostBody);
    await large.dispose();
    const ratios = (ours, theirs) => ours.map((value, i) => value / theirs[i]);
    const spread = (values) => [Math.min(...values), Math.max(...values)];
    const smallRatios = ratios(guestRps, hostRps);
    const largeRatios = ratios(guestMBps, hostMBps);
    return {
      smallGets: { n, rounds, guest: median(guestRps), host: median(hostRps), transport: median(transportRps), ratio: median(smallRatios), spread: spread(smallRatios), transportRatio: median(ratios(transportRps, hostRps)) },
      largeBody: { bytes: 8 * 1024 * 1024, runs, rounds, guest: median(guestMBps), host: median(hostMBps), ratio: median(largeRatios), spread: spread(largeRatios) },
    };
  } finally {
    await server.close();
  }
}
