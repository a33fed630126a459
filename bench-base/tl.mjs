process.env.T0 = String(performance.timeOrigin);
const s = await import("/work/wt-perf-lifecycle/dist/src/index.js");
process._rawDebug("imported " + performance.now().toFixed(1));
const sb = await s.createSandbox(); const r = await sb.run("export default () => 1 + 1");
process._rawDebug("result " + performance.now().toFixed(1));
process.exit(0);
