const mods = process.argv.slice(2);
for (const m of mods) { const t = performance.now(); await import(m.startsWith("/")? m : m); console.log(m, (performance.now()-t).toFixed(1)); }
process.exit(0)
