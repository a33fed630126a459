// `npm run bench`: the project's figures as p50 / p90 / p99, each beside a baseline measured
// in the same run, as ratios. A script that reports, never a test that asserts: this machine is
// noisy, so compare ratios, not absolute times, between runs.
//
//   node bench/run.mjs [--quick] [--only sandbox,lifecycle,values,host-modules,http,webapis,packages,emulator,tenancy,queue] [--markdown]
//
// --quick      fewer samples (a smoke run, ~30 s)
// --only       run some sections only (sandbox, lifecycle, values, host-modules, http, webapis, packages, queue, emulator, tenancy)
// --markdown   also print the figures as rows of the table in docs/performance.md
//
// Needs the built package (npm run bench builds first). Re-executes itself with
// --expose-gc so that memory figures are taken after a full GC.
import { spawnSync } from "node:child_process";
import { cpus, loadavg, totalmem } from "node:os";
import { fileURLToPath } from "node:url";
import { formatBytes, formatMs, formatRate, formatSpread, ratio, table } from "./stats.mjs";

if (typeof globalThis.gc !== "function" && !process.env.SCRIPTBOX_BENCH_REEXEC) {
  const child = spawnSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...process.env, SCRIPTBOX_BENCH_REEXEC: "1" },
  });
  process.exit(child.status ?? 1);
}

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const markdown = args.includes("--markdown");
const onlyIndex = args.indexOf("--only");
const only = onlyIndex === -1 ? null : new Set(args[onlyIndex + 1]?.split(","));
const wanted = (section) => only === null || only.has(section);

const TARGETS = {
  createRun: "< 1.5 ms",
  reusedRuns: ">= 1,500 runs/s and >= 0.6x bare",
  realmBuild: "<= 0.5 ms",
  rssPerSandbox: "<= 1.3x bare",
  pluginCall: "< 100 µs",
  limit: "within 25 ms",
  smallGets: ">= 1.0x of undici.fetch",
  largeBody: ">= 0.8x of undici.fetch",
  largeBodySeparate: ">= 0.9x of undici.fetch",
  tenancyP99: "<= 2x of no hostile",
  tenancySuccess: "100%",
  asyncHostCall: "<= 40 µs",
  syncHostCall: "<= 25 µs",
  loadedPluginCall: "p90 <= 60 µs",
  moduleCreateCost: "<= 0.3 ms added",
  cycleP99: "p99 <= 5 ms",
  cycleP50: "p50 <= 1.5x bare",
  burstFirst: "<= 100 ms",
  firstSandbox: "<= 50 ms",
};

const met = (ok) => (ok ? "met" : "MISSED");
const out = (line = "") => process.stdout.write(`${line}\n`);
const mdRows = [];
const md = (figure, ours, bare, r, target) => mdRows.push([figure, ours, bare, r, target]);
let failed = false;

const startedAt = new Date();
const cpu = cpus();
const loadAtStart = loadavg()[0];
const machine = `${cpu.length}x ${cpu[0]?.model.trim() ?? "unknown CPU"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, load average ${loadAtStart.toFixed(2)} at start`;
out(`scriptbox bench, ${startedAt.toISOString()}${quick ? " (--quick)" : ""}`);
out(`machine: ${machine}`);
out("Distributions are shown as p50 (the main column) with p90/p99 beside it. ratio = ours / baseline: for times and sizes lower is better, for rates higher is better.");

async function section(name, title, body) {
  if (!wanted(name)) return;
  out();
  out(`== ${title} ==`);
  const started = performance.now();
  try {
    await body();
  } catch (error) {
    if (name === "sandbox") failed = true;
    out(`${name === "sandbox" ? "FAILED" : "skipped"}: ${error?.stack ?? error}`);
  }
  out(`(${((performance.now() - started) / 1000).toFixed(1)} s, load average ${loadavg()[0].toFixed(2)} at the end)`);
}

await section("sandbox", "Sandbox host (issue 2): ours vs bare quickjs-emscripten (no guest library, no limits, no workers), same process", async () => {
  const { benchSandbox } = await import("./sandbox.mjs");
  const r = await benchSandbox({ quick });
  const rows = [];
  const timeRow = (figure, x, target) => {
    const ok = x.ours < 1.5;
    const bareHow = x.pauseMs ? `bare engine, before the package is loaded, ${x.pauseMs} ms between cycles` : "bare engine, before the package is loaded";
    rows.push([figure, formatMs(x.ours), formatMs(x.bare), ratio(x.ours, x.bare), target ? `${target} (${met(ok)})` : "", `ours ${formatSpread(x.oursSpread)}; bare ${formatSpread(x.bareSpread)} (p50 / p90 / p99${x.pauseMs ? `, ${x.pauseMs} ms between cycles` : ""}), n=${x.samples}`]);
    md(`${figure} (p50 / p90 / p99)`, formatSpread(x.oursSpread), `${formatSpread(x.bareSpread)} (${bareHow})`, ratio(x.ours, x.bare), target ? `${target} at p50 (${met(ok)})` : "");
  };
  timeRow(`create + run, idle pool (${r.idleCreateRun.pauseMs} ms between cycles)`, r.idleCreateRun, TARGETS.createRun);
  timeRow("create + run + dispose, idle pool", r.idleCreateRunDispose);
  timeRow("create + run, back to back", r.createRun, TARGETS.createRun);
  timeRow("create + run + dispose, back to back", r.createRunDispose);
  rows.push([
    "  bare create + run (+ dispose), package loaded",
    "",
    `${formatMs(r.bareLoaded.createRun.p50)} (${formatMs(r.bareLoaded.createRunDispose.p50)})`,
    "",
    "",
    `bare in blocks alternating with ours: a bigger heap to GC per wasm memory; ${formatSpread(r.bareLoaded.createRun)} (${formatSpread(r.bareLoaded.createRunDispose)})`,
  ]);

  const runsPerSecond = (ms) => 1000 / ms;
  const reused = r.reusedRun;
  const spreadMs = (x) => `p50 ${formatMs(x.p50)}, p90 ${formatMs(x.p90)}, p99 ${formatMs(x.p99)}, n=${x.n}`;
  rows.push([
    "runs/s in a reused sandbox (fresh realm per run)",
    formatRate(runsPerSecond(reused.ours), "runs/s"),
    `${formatRate(runsPerSecond(reused.bareFresh), "runs/s")} (fresh runtime+context)`,
    ratio(runsPerSecond(reused.ours), runsPerSecond(reused.bareFresh)),
    `${TARGETS.reusedRuns} (${met(runsPerSecond(reused.ours) >= 1500 && reused.bareFresh / reused.ours >= 0.6)})`,
    `one run: ours ${spreadMs(reused.oursSpread)}; bare ${spreadMs(reused.bareFreshSpread)}`,
  ]);
  rows.push([
    "",
    "",
    `${formatRate(runsPerSecond(reused.bareReused), "runs/s")} (one reused context)`,
    ratio(runsPerSecond(reused.ours), runsPerSecond(reused.bareReused)),
    "",
    "",
  ]);
  md("runs per second in a reused sandbox", `${formatRate(runsPerSecond(reused.ours), "runs/s")} (one run ${spreadMs(reused.oursSpread)})`, `${formatRate(runsPerSecond(reused.bareFresh), "runs/s")} (fresh runtime+context per run; one run ${spreadMs(reused.bareFreshSpread)}); ${formatRate(runsPerSecond(reused.bareReused), "runs/s")} (reused context)`, `${ratio(runsPerSecond(reused.ours), runsPerSecond(reused.bareFresh))}; ${ratio(runsPerSecond(reused.ours), runsPerSecond(reused.bareReused))}`, TARGETS.reusedRuns);
  // The same runs' floor on a worker thread (bench/worker-runs.mjs): what a design that runs
  // each run on a worker reaches with the bare engine, building a runtime + context per run
  // or restoring one from a memory image.
  const onWorker = r.workerRuns;
  for (const [mode, label] of [["build", "runtime+context built per run"], ["image", `restored from a ${formatBytes(onWorker.imageBytes)} memory image per run`]]) {
    const x = onWorker[mode];
    rows.push([
      mode === "build" ? "  same, against the bare engine on a worker thread" : "",
      "",
      `${formatRate(runsPerSecond(x.p50), "runs/s")} (${label})`,
      ratio(runsPerSecond(reused.ours), runsPerSecond(x.p50)),
      "",
      `bare on a worker, one run (embedder's clock): ${spreadMs(x)}`,
    ]);
    md(`runs per second, bare engine on a worker thread (${label})`, "", `${formatRate(runsPerSecond(x.p50), "runs/s")} (one run ${spreadMs(x)})`, ratio(runsPerSecond(reused.ours), runsPerSecond(x.p50)), "");
  }

  const realmRow = (figure, x, baseline, target) => {
    rows.push([figure, formatMs(x.ours.p50), `${formatMs(x.bare.p50)} (${baseline})`, ratio(x.ours.p50, x.bare.p50), target ? `${target} (${met(x.ours.p50 <= 0.5)})` : "", `ours ${spreadMs(x.ours)}; bare ${spreadMs(x.bare)}`]);
    md(figure, `${formatMs(x.ours.p50)} (p90 ${formatMs(x.ours.p90)}, p99 ${formatMs(x.ours.p99)})`, `${formatMs(x.bare.p50)} (${baseline}; p90 ${formatMs(x.bare.p90)}, p99 ${formatMs(x.bare.p99)})`, ratio(x.ours.p50, x.bare.p50), target ?? "");
  };
  realmRow("fresh realm: build (runtime, context, bridge, guest core)", r.realmBuild, "bare newRuntime + newContext", TARGETS.realmBuild);
  realmRow("fresh realm: build + free", r.realmCycle, "bare, + dispose");
  realmRow("fresh realm from the sandbox's memory image: restore + make", r.realmFromImage, "bare newRuntime + newContext", TARGETS.realmBuild);
  realmRow("fresh realm from the memory image: restore + make + end", r.realmFromImageCycle, "bare, + dispose");

  const call = r.pluginCall;
  const callOk = call.ours.p50 < 0.1;
  rows.push([
    "plugin.call round trip (embedder thread)",
    formatMs(call.ours.p50),
    `${formatMs(call.bare.p50)} (callFunction)`,
    ratio(call.ours.p50, call.bare.p50),
    `${TARGETS.pluginCall} (${met(callOk)})`,
    `ours ${formatSpread(call.ours)}; callFunction ${formatSpread(call.bare)} (p50 / p90 / p99), n=${call.ours.n}`,
  ]);
  rows.push(["", "", `${formatMs(call.echo.p50)} (worker postMessage echo)`, ratio(call.ours.p50, call.echo.p50), "", `floor of any call into a worker; ${formatSpread(call.echo)}`]);
  md("plugin.call round trip (p50 / p90 / p99)", formatSpread(call.ours), `${formatSpread(call.bare)} (callFunction); ${formatSpread(call.echo)} (worker postMessage echo)`, `${ratio(call.ours.p50, call.bare.p50)}; ${ratio(call.ours.p50, call.echo.p50)}`, `${TARGETS.pluginCall} at p50 (${met(callOk)})`);

  const rss = r.rssPerSandbox;
  const spreadBytes = (x) => `p50 ${formatBytes(x.p50)}, p90 ${formatBytes(x.p90)}, p99 ${formatBytes(x.p99)}, n=${x.n}`;
  rows.push(["RSS per idle live sandbox, 100 alive", formatBytes(rss.ours), formatBytes(rss.bare), ratio(rss.ours, rss.bare), `${TARGETS.rssPerSandbox} (${met(rss.ours <= 1.3 * rss.bare)})`, `process RSS delta / 100 after GC, fresh processes: ours ${spreadBytes(rss.oursSpread)}; bare ${spreadBytes(rss.bareSpread)}`]);
  md("RSS per idle live sandbox (100 alive)", `${formatBytes(rss.ours)} (${spreadBytes(rss.oursSpread)})`, `${formatBytes(rss.bare)} (${spreadBytes(rss.bareSpread)})`, ratio(rss.ours, rss.bare), TARGETS.rssPerSandbox);
  // The same sandboxes run 3 times each: each then holds its fresh realm's memory image.
  const imaged = r.rssPerImagedSandbox;
  rows.push(["  same, each sandbox run 3 times (holds a memory image)", formatBytes(imaged.ours), formatBytes(imaged.bare), ratio(imaged.ours, imaged.bare), "", `ours ${spreadBytes(imaged.oursSpread)}; bare ${spreadBytes(imaged.bareSpread)}`]);
  md("RSS per idle live sandbox run 3 times, holding a memory image (100 alive)", `${formatBytes(imaged.ours)} (${spreadBytes(imaged.oursSpread)})`, `${formatBytes(imaged.bare)} (${spreadBytes(imaged.bareSpread)})`, ratio(imaged.ours, imaged.bare), "");
  const imported = r.importRss;
  rows.push(["RSS added by import \"scriptbox\" (fresh process)", formatBytes(imported.ours.p50), `${formatBytes(imported.bare.p50)} (import of the bare engine library)`, ratio(imported.ours.p50, imported.bare.p50), "", `ours ${spreadBytes(imported.ours)}; bare ${spreadBytes(imported.bare)}`]);
  md("RSS added by `import \"scriptbox\"`", `${formatBytes(imported.ours.p50)} (${spreadBytes(imported.ours)})`, `${formatBytes(imported.bare.p50)} (quickjs-emscripten-core + release variant; ${spreadBytes(imported.bare)})`, ratio(imported.ours.p50, imported.bare.p50), "");

  const limit = r.limit;
  const limitOk = limit.statsWallOver.p50 < 25;
  const limitNote = (x) => `${formatSpread(x)} (p50 / p90 / p99), n=${x.n}`;
  rows.push([`cpuTimeMs ${limit.cpuTimeMs} stops for(;;){}: past the deadline (run's wall time)`, formatMs(limit.statsWallOver.p50), "", "", `${TARGETS.limit} (${met(limitOk)})`, limitNote(limit.statsWallOver)]);
  rows.push(["  same, by the run's cpu time", formatMs(limit.cpuOver.p50), "", "", "", limitNote(limit.cpuOver)]);
  rows.push(["  same, embedder's clock around run()", formatMs(limit.wallOver.p50), "", "", "", `${limitNote(limit.wallOver)}; includes the request path`]);
  md(
    `cpuTimeMs ${limit.cpuTimeMs} stops for(;;){}: past the deadline, p50 / p90 / p99 (run's wall time; its cpu time; embedder's clock)`,
    `${formatSpread(limit.statsWallOver)}; ${formatSpread(limit.cpuOver)}; ${formatSpread(limit.wallOver)}`,
    "",
    "",
    `${TARGETS.limit} at p50 (${met(limitOk)})`,
  );

  for (const line of table(["figure", "ours", "bare", "ratio", "target", "note"], rows)) out(line);
  out("dispose: \"create + run\" stops the clock when run() resolves; \"+ dispose\" also awaits sandbox.dispose().");
});

await section("lifecycle", "Sandbox lifecycle (issue 12): create + run + dispose, a 200-sandbox burst, the first sandbox of a process; each scenario in a fresh process", async () => {
  const { benchLifecycle } = await import("./lifecycle.mjs");
  const r = await benchLifecycle({ quick });
  const { cycle, bursts, first } = r;
  const rows = [];
  // Each against the bare cycle timed the same way: back to back, or after the same pause
  // (older runs of the bench had no idle bare series: their idle row compared with the back-to-back one).
  const bareIdle = cycle.bareIdle ?? cycle.bare;
  for (const [title, x, bare, how] of [
    ["create + run + dispose, back to back", cycle.backToBack, cycle.bare, "bare engine cycle"],
    [`create + run + dispose, idle pool (25 ms between)`, cycle.idle, bareIdle, "bare engine cycle, 25 ms between"],
  ]) {
    const ok = x.p99 <= 5 && x.p50 <= 1.5 * bare.p50;
    rows.push([title, formatSpread(x), `${formatSpread(bare)} (${how})`, ratio(x.p50, bare.p50), `${TARGETS.cycleP99}, ${TARGETS.cycleP50} (${met(ok)})`, `n=${x.n}; bare with the package loaded: ${formatSpread(cycle.bareLoaded)}`]);
    md(`${title} (p50 / p90 / p99)`, formatSpread(x), `${formatSpread(bare)} (${how})`, ratio(x.p50, bare.p50), `${TARGETS.cycleP99}, ${TARGETS.cycleP50} (${met(ok)})`);
  }
  const { ours, vm } = bursts;
  const burstOk = ours.first.p50 <= 100;
  rows.push([`${bursts.burst} createSandbox + run (50 ms timer) at once: first result`, formatSpread(ours.first), `${formatSpread(vm.first)} (node:vm)`, ratio(ours.first.p50, vm.first.p50), `${TARGETS.burstFirst} (${met(burstOk)})`, `${bursts.rounds} bursts`]);
  rows.push(["  same: all results", formatSpread(ours.all), `${formatSpread(vm.all)} (node:vm)`, ratio(ours.all.p50, vm.all.p50), "", `each result: ${formatSpread(ours.each)}`]);
  md(`${bursts.burst} sandboxes submitted at once, each waiting 50 ms: first result (p50 / p90 / p99)`, formatSpread(ours.first), `${formatSpread(vm.first)} (node:vm contexts)`, ratio(ours.first.p50, vm.first.p50), `${TARGETS.burstFirst} (${met(burstOk)})`);
  md(`${bursts.burst} sandboxes submitted at once: all results`, formatSpread(ours.all), `${formatSpread(vm.all)} (node:vm contexts)`, ratio(ours.all.p50, vm.all.p50), "");
  const modes = [
    ["lazy", "first sandbox, fresh process: workers start at the first createSandbox (default)"],
    ["warm", "  warmPool() right after the import, createSandbox at once"],
    ["lazy-gap", `  default, ${r.gapMs} ms of other start-up before createSandbox`],
    ["warm-gap", `  warmPool(), ${r.gapMs} ms of other start-up, then createSandbox`],
  ];
  for (const [mode, title] of modes) {
    const x = first[mode];
    if (x.n === 0) continue;
    const ok = x.p50 <= 50;
    rows.push([title, formatSpread(x), `${formatSpread(first.bare)} (worker + bare engine)`, ratio(x.p50, first.bare.p50), `${TARGETS.firstSandbox} (${met(ok)})`, `n=${x.n} processes; createSandbox → first result`]);
    md(`${title.trim()} (p50 / p90 / p99)`, formatSpread(x), `${formatSpread(first.bare)} (new worker thread + bare engine cycle)`, ratio(x.p50, first.bare.p50), `${TARGETS.firstSandbox} (${met(ok)})`);
  }
  rows.push(["  import \"scriptbox\" (for scale)", formatSpread(r.importMs), "", "", "", ""]);
  for (const line of table(["figure", "ours p50 / p90 / p99", "baseline p50 / p90 / p99", "p50 ratio", "target", "note"], rows)) out(line);
  out(`load average at the end of the section: ${loadavg().map((x) => x.toFixed(2)).join(", ")}`);
});

await section("host-modules", "Host modules (issue 9): host function calls from the guest, beside the floors measured in the same run", async () => {
  const { benchHostModules } = await import("./host-modules.mjs");
  const r = await benchHostModules({ quick });
  const pcts = (x) => `p90 ${formatMs(x.p90)}, p99 ${formatMs(x.p99)}, n=${x.n}, load ${x.load.toFixed(2)}`;
  const { trips, echo, bare, flow, create } = r;
  const asyncOk = trips.async.p50 <= 0.04;
  const syncOk = trips.sync.p50 <= 0.025;
  const createOk = create.added <= 0.3;
  const rows = [
    [`async round trip (await app.echo(i), ${r.calls} sequential)`, formatMs(trips.async.p50), `${formatMs(echo.p50)} (worker postMessage echo)`, ratio(trips.async.p50, echo.p50), `${TARGETS.asyncHostCall} (${met(asyncOk)})`, pcts(trips.async)],
    [`sync round trip (hostSync echo, ${r.calls} sequential)`, formatMs(trips.sync.p50), `${formatMs(bare.p50)} (bare newFunction, same thread)`, ratio(trips.sync.p50, bare.p50), `${TARGETS.syncHostCall} (${met(syncOk)})`, pcts(trips.sync)],
    [
      `throughput, 8 sandboxes awaiting host calls (${flow.calls} calls, ${flow.rounds} rounds)`,
      formatRate(flow.callsPerSecond.p50, "calls/s"),
      "",
      "",
      "",
      `rounds p50 / p90 / p99 ${formatSpread(flow.callsPerSecond, (v) => formatRate(v, "calls/s"))} (slow side); embedder thread CPU ${formatMs(flow.embedderCpuPerCallMs)} per call${flow.cpuIsThreadTime ? "" : " (wall clock: no per-thread CPU clock here)"}`,
    ],
    ["create + run, 50-function module", formatMs(create.withModule.p50), `${formatMs(create.plain.p50)} (no modules)`, ratio(create.withModule.p50, create.plain.p50), `${TARGETS.moduleCreateCost} (${met(createOk)}: ${formatMs(create.added)})`, `${formatSpread(create.withModule)} vs ${formatSpread(create.plain)} (p50 / p90 / p99), n=${create.plain.n} each, alternating`],
  ];
  md("async host call round trip, p50 / p90 / p99", formatSpread(trips.async), `${formatSpread(echo)} (worker postMessage echo)`, ratio(trips.async.p50, echo.p50), `${TARGETS.asyncHostCall} (${met(asyncOk)}); load ${trips.async.load.toFixed(2)}`);
  md("sync host call round trip, p50 / p90 / p99", formatSpread(trips.sync), `${formatSpread(bare)} (bare newFunction)`, ratio(trips.sync.p50, bare.p50), `${TARGETS.syncHostCall} (${met(syncOk)}); load ${trips.sync.load.toFixed(2)}`);
  md(`8 sandboxes making async host calls, p50 / p90 / p99 of ${flow.rounds} rounds (slow side)`, formatSpread(flow.callsPerSecond, (v) => formatRate(v, "calls/s")), `embedder CPU ${formatMs(flow.embedderCpuPerCallMs)}/call`, "", "");
  md("create + run with a 50-function module, p50 / p90 / p99", formatSpread(create.withModule), `${formatSpread(create.plain)} (no modules)`, ratio(create.withModule.p50, create.plain.p50), `${TARGETS.moduleCreateCost} at p50 (${met(createOk)})`);
  const { benchPluginCalls } = await import("./plugin-calls.mjs");
  const p = await benchPluginCalls({ quick });
  const loadNote = (x) => `p50 ${formatMs(x.ours.p50)}, p99 ${formatMs(x.ours.p99)}; echo p50 ${formatMs(x.echo.p50)}, p90 ${formatMs(x.echo.p90)}, p99 ${formatMs(x.echo.p99)}; Atomics floor ${formatSpread(x.floor)}; n=${x.ours.n}; load ${x.load.toFixed(2)}`;
  const loadedOk = p.loaded.ours.p90 <= 0.06;
  rows.push([`plugin.call p90, no added load`, formatMs(p.quiet.ours.p90), `${formatMs(p.quiet.echo.p90)} (worker postMessage echo)`, ratio(p.quiet.ours.p90, p.quiet.echo.p90), "", loadNote(p.quiet)]);
  rows.push([`plugin.call p90, + ${p.hogs} CPU hogs (one per core)`, formatMs(p.loaded.ours.p90), `${formatMs(p.loaded.echo.p90)} (same echo, same load)`, ratio(p.loaded.ours.p90, p.loaded.echo.p90), `${TARGETS.loadedPluginCall} (${met(loadedOk)})`, loadNote(p.loaded)]);
  md("`plugin.call` p50 / p90 / p99, no added load", formatSpread(p.quiet.ours), `${formatSpread(p.quiet.echo)} (worker postMessage echo)`, ratio(p.quiet.ours.p90, p.quiet.echo.p90), `load ${p.quiet.load.toFixed(2)}`);
  md(`\`plugin.call\` p50 / p90 / p99, + ${p.hogs} CPU hogs (one per core)`, formatSpread(p.loaded.ours), `${formatSpread(p.loaded.echo)} (same echo, same load); ${formatSpread(p.loaded.floor)} (Atomics ping-pong, blocking: the floor no event loop reaches)`, ratio(p.loaded.ours.p90, p.loaded.echo.p90), `${TARGETS.loadedPluginCall} (${met(loadedOk)}); load ${p.loaded.load.toFixed(2)}`);
  for (const line of table(["figure", "ours", "baseline", "ratio", "target", "note"], rows)) out(line);
  out("Round trips are the gaps between consecutive arrivals in the host function (one call each), after 500 warm-up calls.");
  out("plugin.call rows: p90 compared (ours vs echo, alternating blocks of 250, with an Atomics ping-pong floor in which the caller blocks); CPU hogs are child processes spinning for (;;) {}, killed after; load = 1-min load average during the row.");
});

await section("http", "HTTP (issue 3): guest fetch vs undici.fetch in the host, same server (node:http on 127.0.0.1, a child process), same rounds", async () => {
  const { benchHttp } = await import("./http.mjs");
  const r = await benchHttp({ quick });
  const { smallGets: s, largeBody: l } = r;
  // Ratios are medians of per-round ratios (each round measures both sides back to back).
  const x = (value) => `${value.toFixed(2)}x`;
  const range = ([low, high]) => `rounds ${low.toFixed(2)}-${high.toFixed(2)}x`;
  // p50/p90/p99 of per-round rates and ratios (tails on the slow side).
  const smallOk = s.ratio.p50 >= 1;
  const smallLoad = `load ${s.load[0].toFixed(2)} → ${s.load[1].toFixed(2)}`;
  const rows = [
    [`${s.n} sequential small GETs (fetch + text())`, formatRate(s.guest.p50, "req/s"), formatRate(s.host.p50, "req/s"), x(s.ratio.p50), `${TARGETS.smallGets} (${met(smallOk)})`, `${s.rounds} rounds, ${range(s.spread)}`],
    ["  p50 / p90 / p99 of rounds", formatSpread(s.guest, (v) => Math.round(v)), formatSpread(s.host, (v) => Math.round(v)), formatSpread(s.ratio, (v) => v.toFixed(2)), "", smallLoad],
    ["  host transport alone (no guest, no bridge)", formatRate(s.transport, "req/s"), formatRate(s.host.p50, "req/s"), x(s.transportRatio), "", "bench/fetch-host.mjs"],
  ];
  md(`${s.n} sequential small GETs from the guest, p50 / p90 / p99 of ${s.rounds} rounds`, `${formatSpread(s.guest, (v) => Math.round(v))} req/s`, `${formatSpread(s.host, (v) => Math.round(v))} req/s (undici.fetch in the host)`, formatSpread(s.ratio, x), `${TARGETS.smallGets} at p50 (${met(smallOk)}); ${smallLoad}`);
  const mbps = (v) => formatRate(v, "MB/s");
  const load = `load ${l.load[0].toFixed(2)} → ${l.load[1].toFixed(2)}`;
  for (const [key, where] of [["separate", "server in a child process"], ["sameProcess", "server in a worker thread of this process"]]) {
    const b = l[key];
    const ok = key === "separate" ? b.ratio.p50 >= 0.9 : b.ratio.p50 >= 0.8;
    const target = key === "separate" ? `${TARGETS.largeBodySeparate} (${met(ok)})` : `${TARGETS.largeBody} (${met(ok)})`;
    rows.push([`8 MiB body with arrayBuffer(), ${l.runs} reads, ${where}`, mbps(b.guest.p50), mbps(b.host.p50), x(b.ratio.p50), target, `${l.rounds} rounds, ${range(b.spread)}`]);
    rows.push(["  p50 / p90 / p99 of rounds", formatSpread(b.guest, (v) => Math.round(v)), formatSpread(b.host, (v) => Math.round(v)), formatSpread(b.ratio, (v) => v.toFixed(2)), "", load]);
    rows.push(["  process CPU per 8 MiB read (median)", formatMs(b.cpu.guest), formatMs(b.cpu.host), x(b.cpu.ratio), "", "all threads; lower is better"]);
    md(`8 MiB response read with arrayBuffer() in the guest, ${where}`, `${formatSpread(b.guest, (v) => Math.round(v))} MB/s`, `${formatSpread(b.host, (v) => Math.round(v))} MB/s (undici.fetch in the host)`, formatSpread(b.ratio, x), `${target}; ${load}`);
  }
  for (const line of table(["figure", "guest", "host undici.fetch", "ratio", "target", "note"], rows)) out(line);
  out("Rates are medians over rounds (p50 / p90 / p99 rows: tails on the slow side); each ratio is over the rounds' own ratios (guest and host measured back to back, alternating which goes first).");
  out("The host baseline reads each small body with arrayBuffer() (bench/fetch-host.mjs); the guest with text().");
  out("8 MiB rows: p50 / p90 / p99 over rounds of per-round rates and ratios, tails on the slow side (p99 = the slowest round); the two servers' rounds interleave.");
});

await section("queue", "Script queue (issue 14): BullMQ on redis-server (another process), `scriptbox worker` processes vs an in-process sandbox.run loop", async () => {
  const { benchQueue } = await import("./queue.mjs");
  const r = await benchQueue({ quick });
  const lat = (x) => `p50 ${formatMs(x.p50)}, p90 ${formatMs(x.p90)}, p99 ${formatMs(x.p99)}`;
  const windows = (x, unit) => formatSpread(x, (v) => formatRate(v, unit));
  const rows = [
    [`${r.jobs} tiny jobs, 1 worker process (concurrency ${r.concurrency})`, formatRate(r.rate1, "jobs/s"), formatRate(r.baselineRate, "runs/s"), ratio(r.rate1, r.baselineRate), `submit → result, 200 in flight; windows of 200 p50 / p90 / p99 ${windows(r.windows1, "jobs/s")}, baseline ${windows(r.baselineWindows, "runs/s")}`],
    [`${r.jobs} tiny jobs, 2 worker processes`, formatRate(r.rate2, "jobs/s"), formatRate(r.baselineRate, "runs/s"), ratio(r.rate2, r.baselineRate), `2 cores shared with the submitter and Redis; windows ${windows(r.windows2, "jobs/s")}`],
    ["submit → result latency, idle queue (p50)", formatMs(r.latency.p50), formatMs(r.baselineLatency.p50), ratio(r.latency.p50, r.baselineLatency.p50), `${lat(r.latency)}; baseline ${lat(r.baselineLatency)}, n=${r.latencySamples}`],
    [`Redis commands per job (INFO commandstats, ${r.statJobs} jobs)`, r.commandsPerJob.toFixed(1), "", "", `top: ${r.topCommands.join(", ")}`],
    ["Redis CPU per job (INFO cpu, same jobs)", formatMs(r.redisCpuMsPerJob), "", "", `one Redis core's ceiling ≈ ${formatRate(1000 / r.redisCpuMsPerJob, "jobs/s")}`],
  ];
  md(`${r.jobs} tiny jobs through the queue, 1 worker process: overall; p50 / p90 / p99 of windows of 200 (slow side)`, `${formatRate(r.rate1, "jobs/s")}; ${windows(r.windows1, "jobs/s")}`, `${formatRate(r.baselineRate, "runs/s")}; ${windows(r.baselineWindows, "runs/s")} (in-process sandbox.run loop)`, ratio(r.rate1, r.baselineRate), "");
  md(`${r.jobs} tiny jobs through the queue, 2 worker processes: overall; windows`, `${formatRate(r.rate2, "jobs/s")}; ${windows(r.windows2, "jobs/s")}`, `${formatRate(r.baselineRate, "runs/s")} (in-process sandbox.run loop)`, ratio(r.rate2, r.baselineRate), "");
  md("queue submit → result latency, idle queue", lat(r.latency), `${lat(r.baselineLatency)} (sandbox.run)`, ratio(r.latency.p50, r.baselineLatency.p50), "");
  md(`Redis commands per queue job (a count over ${r.statJobs} jobs)`, r.commandsPerJob.toFixed(1), "", "", "");
  md(`Redis CPU per queue job (INFO cpu over the same ${r.statJobs} jobs: a total, no distribution)`, formatMs(r.redisCpuMsPerJob), "", "", "");
  for (const line of table(["figure", "queue", "in-process sandbox.run", "ratio", "note"], rows)) out(line);
  out("Baseline: one sandbox in this process running the same script back to back (no Redis, no other process).");
});

await section("values", "Values crossing the boundary: a run's CPU time (stats) returning or receiving structured data vs the engine's own JSON writer or parser on the same data, same sandbox, blocks alternating", async () => {
  const { benchValues } = await import("./values.mjs");
  const r = await benchValues({ quick });
  const pct = (x) => `p50 ${formatMs(x.p50)}, p90 ${formatMs(x.p90)}, p99 ${formatMs(x.p99)}`;
  const rows = [];
  for (const [figure, x, baseline] of [
    ["result: 10,000 records (4 fields)", r.recordsOut, "the run returns JSON.stringify(records)"],
    ["result: 100,000 numbers", r.numbersOut, "the run returns JSON.stringify(numbers)"],
    ["input: 10,000 records (4 fields)", r.recordsIn, "the records as JSON text, JSON.parse in the run"],
  ]) {
    rows.push([figure, formatMs(x.ours.p50), `${formatMs(x.floor.p50)} (${baseline})`, ratio(x.ours.p50, x.floor.p50), `ours ${pct(x.ours)}; floor ${pct(x.floor)}; n=${x.ours.n}`]);
    md(`${figure}, run CPU (p50 / p90 / p99)`, formatSpread(x.ours), `${formatSpread(x.floor)} (${baseline})`, ratio(x.ours.p50, x.floor.p50), "");
  }
  for (const line of table(["figure", "ours (p50)", "engine's JSON (p50)", "ratio", "note"], rows)) out(line);
  out("Both columns include building the data in the run; the baseline's string crosses without the marshal module.");
});

await section("webapis", "Web APIs computed by the host (issue 13): each operation timed inside the sandbox vs the host doing it directly, same run", async () => {
  const { benchWebApis } = await import("./webapis.mjs");
  const r = await benchWebApis({ quick });
  const pct = (x) => `p50 ${formatMs(x.p50)}, p90 ${formatMs(x.p90)}, p99 ${formatMs(x.p99)}`;
  const rows = [["an empty awaited op (the timing loop's own cost)", formatMs(r.empty.p50), "", "", `${pct(r.empty)}, n=${r.empty.n}`]];
  for (const [figure, x, baseline] of [
    ["crypto.subtle.sign HMAC-SHA-256, 1 KiB", r.hmac1k, "node:crypto createHmac"],
    ["crypto.subtle.digest SHA-256, 1 MiB", r.digest1m, "node:crypto createHash"],
    ["Intl.NumberFormat#format (cached formatter)", r.intlFormat, "host Intl"],
  ]) {
    rows.push([figure, formatMs(x.ours.p50), `${formatMs(x.host.p50)} (${baseline})`, ratio(x.ours.p50, x.host.p50), `ours ${pct(x.ours)}; host ${pct(x.host)}; n=${x.ours.n}`]);
    md(`${figure} (p50 / p90 / p99)`, formatSpread(x.ours), `${formatSpread(x.host)} (${baseline})`, ratio(x.ours.p50, x.host.p50), "");
  }
  rows.push(["performance.now()", formatMs(r.now.p50), "", "", `${pct(r.now)}, n=${r.now.n}`]);
  for (const line of table(["figure", "in the sandbox (p50)", "host directly (p50)", "ratio", "note"], rows)) out(line);
  out("Timed in the guest with performance.now() (5 µs steps): figures below ~10 µs are at the clock's resolution.");
});

await section("packages", "Packages in scripts (issue 13): a zod script vs the same check without a package, as files (runFile)", async () => {
  const { benchPackages } = await import("./packages.mjs");
  const rows = await benchPackages({ quick });
  for (const [figure, , , r, , , spreads] of rows) md(`packages: ${figure.trim()} (p50 / p90 / p99)`, formatSpread(spreads.ours), `${formatSpread(spreads.base)} (no package)`, r, "");
  for (const line of table(["figure", "zod script", "no package", "ratio", "spread", "note"], rows.map((row) => row.slice(0, 6)))) out(line);
});

await section("emulator", "Emulator (issue 4)", async () => {
  let module;
  try {
    module = await import("./emulator.mjs");
  } catch (error) {
    throw new Error(`bench/emulator.mjs could not be loaded: ${error.message}`);
  }
  if (typeof module.benchEmulator !== "function") throw new Error("bench/emulator.mjs does not export benchEmulator()");
  const r = await module.benchEmulator();
  for (const line of module.emulatorLines(r)) out(line);
  const perSecond = (x) => formatSpread(x.perSecond, (v) => formatRate(v, "req/s"));
  md(`emulator: GET /api/v1/team (PAT), ${r.connections} connections, server in a child process: rate of each of ${r.team.perSecond.n} seconds, p50 / p90 / p99 (slow side)`, perSecond(r.team), `${perSecond(r.bare)} (bare fastify route)`, ratio(r.team.perSecond.p50, r.bare.perSecond.p50), "");
  md("  same: request latency p50 / p90 / p99", formatSpread(r.team.latency), `${formatSpread(r.bare.latency)} (bare fastify route)`, ratio(r.team.latency.p50, r.bare.latency.p50), "");
});

await section("tenancy", "Mixed tenancy (issue 10): runScript at 50 concurrent, 10% hostile (loops, native hogs, log floods) vs none, each scenario in a fresh process", async () => {
  const { benchTenancy } = await import("./tenancy.mjs");
  const r = await benchTenancy({ quick });
  const rows = [];
  const percent = (x) => `${(100 * x).toFixed(1)}%`;
  for (const mode of ["shared", "isolate"]) {
    const base = r.results[mode];
    const mixed = r.results[`${mode}-hostile`];
    const p99Ratio = mixed.p99 / base.p99;
    const label = mode === "shared" ? "shared workers" : "isolate: true";
    for (const [x, title] of [[base, `${label}, no hostile (baseline)`], [mixed, `${label}, 10% hostile`]]) {
      rows.push([
        title,
        `${formatMs(x.p50)} / ${formatMs(x.p90)} / ${formatMs(x.p99)}`,
        x === base ? "" : ratio(x.p99, base.p99),
        `${percent(x.successRate)} (${x.evicted} evicted, ${x.other} other, ${x.rejected} rejected)`,
        formatRate(x.throughput, "runs/s"),
        x === base ? "" : `p99 ${TARGETS.tenancyP99} (${met(p99Ratio <= 2)}); success ${TARGETS.tenancySuccess} (${met(x.successRate === 1)})`,
        `load ${x.loadAtStart?.toFixed(1)}; queued p50/p99 ${formatMs(x.queued.p50)} / ${formatMs(x.queued.p99)}, running ${formatMs(x.running.p50)} / ${formatMs(x.running.p99)}; peak RSS ${formatBytes(x.peakRss)}${x === base ? "" : `; hostile ended ${JSON.stringify(x.hostileKinds)}`}${x.other ? `; ordinary failures ${JSON.stringify(x.otherKinds)}, e.g. ${JSON.stringify(x.otherSamples)}` : ""}`,
      ]);
    }
    md(
      `mixed tenancy, ${label}: ordinary p50/p90/p99 with 10% hostile (success)`,
      `${formatMs(mixed.p50)} / ${formatMs(mixed.p90)} / ${formatMs(mixed.p99)} (${percent(mixed.successRate)})`,
      `${formatMs(base.p50)} / ${formatMs(base.p90)} / ${formatMs(base.p99)} (no hostile)`,
      `p99 ${ratio(mixed.p99, base.p99)}`,
      `${TARGETS.tenancyP99} (${met(p99Ratio <= 2)})`,
    );
  }
  const rss = r.results.isolatedRss;
  rows.push([`RSS per live isolated sandbox (${rss.count} alive)`, formatBytes(rss.perSandbox.p50), "", "", "", "", `process RSS delta / count after GC; p50 / p90 / p99 of ${rss.perSandbox.n} processes ${formatSpread(rss.perSandbox, formatBytes)}`]);
  md(`RSS per live isolated sandbox (${rss.count} alive), p50 / p90 / p99 of ${rss.perSandbox.n} processes`, formatSpread(rss.perSandbox, formatBytes), "", "", "");
  for (const line of table(["scenario", "ordinary p50 / p90 / p99", "p99 ratio", "ordinary success", "throughput", "target", "note"], rows)) out(line);
  out(`${r.total} runScript calls per scenario, ${r.concurrency} at a time, limits ${JSON.stringify(r.limits)} for every run; latency is call to result.`);
});

if (markdown && mdRows.length > 0) {
  out();
  const date = startedAt.toISOString().slice(0, 10);
  const note = `${cpu.length}x ${cpu[0]?.model.trim() ?? "CPU"}, node ${process.version}, load ${loadAtStart.toFixed(1)} at start`;
  out(`== rows for docs/performance.md (${machine}) ==`);
  out("| figure | ours | baseline | ratio | target | date | machine |");
  out("|---|---|---|---|---|---|---|");
  for (const row of mdRows) out(`| ${[...row, date, note].join(" | ")} |`);
}

out();
out(`total ${((Date.now() - startedAt.getTime()) / 1000).toFixed(0)} s`);
// Sandboxes, workers and servers are closed; exit now rather than wait on idle handles.
process.exit(failed ? 1 : 0);
