// The http module's figures (issue 3): guest fetch against a node:http server on
// 127.0.0.1 in a child process, beside undici's own fetch called in the host against the
// same server in the same rounds (baselines from bench/fetch-host.mjs). The 8 MiB body is
// also measured against a server in a worker thread of this process (the older setup,
// issue 12), in the same rounds. Used by bench/run.mjs.
import { loadavg } from "node:os";
import { WARM_UP_REQUESTS, benchHostFetchBaseline, benchHostFetchBody, benchTransport, startBenchServer } from "./fetch-host.mjs";
import { median, rateSpread } from "./stats.mjs";

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
  const rounds = quick ? 2 : 7;
  const loadStart = loadavg()[0];
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

    const ratios = (ours, theirs) => ours.map((value, i) => value / theirs[i]);
    const spread = (values) => [Math.min(...values), Math.max(...values)];
    const smallRatios = ratios(guestRps, hostRps);
    return {
      smallGets: {
        n,
        rounds,
        guest: rateSpread(guestRps),
        host: rateSpread(hostRps),
        transport: median(transportRps),
        ratio: rateSpread(smallRatios),
        spread: spread(smallRatios),
        transportRatio: median(ratios(transportRps, hostRps)),
        load: [loadStart, loadavg()[0]],
      },
      largeBody: await benchLargeBody(createSandbox, server, { quick }),
    };
  } finally {
    await server.close();
  }
}

/**
 * 8 MiB bodies, guest arrayBuffer() vs undici.fetch + arrayBuffer() in the host, against
 * the child-process server (`separate`) and a worker-thread server (`sameProcess`). Every
 * round measures all four back to back (guest and host alternating which goes first, the
 * two servers too), so each per-round ratio compares measurements taken moments apart.
 * Per-round throughput and ratios: p50/p90/p99 of the rounds, tails on the slow side (with
 * 20 rounds p99 is the slowest round, p90 the third slowest).
 */
async function benchLargeBody(createSandbox, separateServer, { quick }) {
  const rounds = quick ? 6 : 20;
  const runs = 3; // reads per measurement: one run of the guest script, one host series
  const loadStart = loadavg()[0];
  const threadServer = await startBenchServer({ where: "thread" });
  try {
    const setups = [];
    for (const [name, server] of [["separate", separateServer], ["sameProcess", threadServer]]) {
      // The sandbox needs room for the body in its wasm memory.
      const sandbox = await createSandbox({ net: { allow: [new URL(server.origin).host] }, limits: benchLimits({ memoryBytes: 256 * 1024 * 1024 }) });
      check(await sandbox.run(LARGE_BODY, { input: { url: server.largeUrl, runs: 2 } }), "guest 8 MiB warm-up");
      await benchHostFetchBody(server.largeUrl, 1); // warm-up
      const guest = [];
      const host = [];
      // CPU of this whole process (every thread) per 8 MiB read: less moved by the load than
      // wall time. With the thread server it includes the server's CPU on both sides.
      const guestCpu = [];
      const hostCpu = [];
      const cpuMs = (since) => {
        const { user, system } = process.cpuUsage(since);
        return (user + system) / 1000 / runs;
      };
      const measureGuest = async () => {
        const cpu = process.cpuUsage();
        const start = performance.now();
        const bytes = check(await sandbox.run(LARGE_BODY, { input: { url: server.largeUrl, runs } }), "guest 8 MiB read");
        guest.push(bytes / 1e6 / ((performance.now() - start) / 1000));
        guestCpu.push(cpuMs(cpu));
      };
      const measureHost = async () => {
        const cpu = process.cpuUsage();
        host.push((await benchHostFetchBody(server.largeUrl, runs)).megabytesPerSecond);
        hostCpu.push(cpuMs(cpu));
      };
      setups.push({ name, sandbox, guest, host, guestCpu, hostCpu, measureGuest, measureHost });
    }
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? setups : [...setups].reverse();
      for (const setup of order) await backToBack(round, setup.measureGuest, setup.measureHost);
    }
    const result = { bytes: 8 * 1024 * 1024, runs, rounds, load: [loadStart, loadavg()[0]] };
    for (const { name, sandbox, guest, host, guestCpu, hostCpu } of setups) {
      await sandbox.dispose();
      const ratios = guest.map((value, i) => value / host[i]);
      const cpuRatios = guestCpu.map((value, i) => value / hostCpu[i]);
      result[name] = {
        guest: rateSpread(guest),
        host: rateSpread(host),
        ratio: rateSpread(ratios),
        spread: [Math.min(...ratios), Math.max(...ratios)],
        cpu: { guest: median(guestCpu), host: median(hostCpu), ratio: median(cpuRatios) },
      };
    }
    return result;
  } finally {
    await threadServer.close();
  }
}
