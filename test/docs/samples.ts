// Finds the runnable samples in the repository's Markdown: a fenced block right after an
// HTML comment that marks it (the comment does not render, so readers see a plain sample):
//
//   <!-- runnable -->                 run this ```sh / ```ts / ```js block
//   <!-- runnable: in-repo -->        run it with the repository as the working folder
//   <!-- runnable: file NAME -->      write the block to NAME in the document's working folder
//
// Blocks of one document run in order in one working folder, so a file block can give a
// later shell block its script or tsconfig.json.
import { readFileSync } from "node:fs";

export interface Sample {
  /** "file" writes `name`; "run" executes the block. */
  action: "file" | "run";
  language: string;
  code: string;
  /** 1-based line of the fence, for the test's name. */
  line: number;
  name?: string;
  inRepo?: boolean;
}

const MARKER = /^<!--\s*runnable(?::\s*(in-repo|file\s+(\S+)))?\s*-->\s*$/;

export function samplesOf(path: string): Sample[] {
  const lines = readFileSync(path, "utf8").split("\n");
  const samples: Sample[] = [];
  for (let i = 0; i < lines.length; i++) {
    const marker = MARKER.exec(lines[i]!.trim());
    if (!marker) continue;
    const fence = /^(`{3,})(\w*)/.exec(lines[i + 1] ?? "");
    if (!fence) throw new Error(`${path}:${i + 1}: a runnable marker must be followed directly by a fenced code block`);
    const end = lines.findIndex((line, j) => j > i + 1 && line.startsWith(fence[1]!));
    if (end < 0) throw new Error(`${path}:${i + 2}: the fenced block is not closed`);
    const code = lines.slice(i + 2, end).join("\n") + "\n";
    const language = fence[2] ?? "";
    if (marker[2]) samples.push({ action: "file", language, code, line: i + 2, name: marker[2] });
    else {
      if (!["sh", "bash", "ts", "js"].includes(language)) throw new Error(`${path}:${i + 2}: runnable blocks are sh, bash, ts or js (got "${language}")`);
      samples.push({ action: "run", language, code, line: i + 2, inRepo: marker[1] === "in-repo" });
    }
    i = end;
  }
  return samples;
}
