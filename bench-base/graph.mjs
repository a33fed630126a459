// print the static import graph of a dist module (local files only) and external packages
import { readFileSync } from "node:fs";
import { resolve, dirname } from "node:path";
const seen = new Set(); const ext = new Map();
function walk(f, from) { if (seen.has(f)) return; seen.add(f);
  const src = readFileSync(f, "utf8");
  for (const m of src.matchAll(/^(?:import|export)\s[^;]*?from\s+"([^"]+)"|^import\s+"([^"]+)"/gm)) {
    const spec = m[1] ?? m[2];
    if (spec.startsWith(".")) walk(resolve(dirname(f), spec), f);
    else if (!ext.has(spec)) ext.set(spec, f.replace(/.*dist\//, ""));
  }
}
walk(resolve(process.argv[2]));
console.log(seen.size, "local modules"); console.log([...ext].map(([k,v])=>`${k}  <- ${v}`).join("\n"));
