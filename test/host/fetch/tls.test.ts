// https through the pinned address: the transport connects to the IP the policy checked,
// while SNI and certificate verification use the URL's host name.
// fixtures/tls-cert.pem: self-signed, SAN DNS:localhost and DNS:tls.test, valid until 2126.
import { readFileSync } from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Agent } from "undici";
import { SandboxFetchTransport } from "../../../host/fetch/transport.js";
import { HostResolver } from "../../../host/net/resolver.js";
import { failure, request } from "./helpers.js";

const cert = readFileSync(new URL("./fixtures/tls-cert.pem", import.meta.url));
const key = readFileSync(new URL("./fixtures/tls-key.pem", import.meta.url));

let server: https.Server;
let port = 0;
const servernames: (string | false | null)[] = [];

beforeAll(async () => {
  server = https.createServer({ cert, key }, (req, res) => {
    servernames.push((req.socket as TLSSocket).servername);
    res.end(`secure host=${req.headers.host}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function transport() {
  const resolver = new HostResolver({ lookup: async (name) => (name.endsWith(".test") ? ["127.0.0.1"] : []) });
  return new SandboxFetchTransport(
    { allow: ["tls.test", "wrong.test", `127.0.0.1:${port}`], resolver },
    new Agent({ connect: { ca: cert } }), // trust the test certificate; verification stays on
  );
}

describe("https to a checked address keeps SNI and certificate verification on the host name", () => {
  test("the server sees SNI tls.test and the certificate for tls.test is accepted", async () => {
    const { response, body } = await transport().fetch(request(`https://tls.test:${port}/`));
    expect(response.status).toBe(200);
    expect(Buffer.from(body).toString()).toBe(`secure host=tls.test:${port}`);
    expect(servernames.at(-1)).toBe("tls.test");
  });

  test("a certificate that does not cover the requested name is rejected", async () => {
    const e = await failure(transport().fetch(request(`https://wrong.test:${port}/`)));
    expect(e.type).toBe("network");
    expect(e.message).toMatch(/Host: wrong\.test\. is not in the cert.s altnames.*ERR_TLS_CERT_ALTNAME_INVALID/);
  });

  test("an IP-literal URL is verified against the IP (this certificate has no IP name), with no SNI", async () => {
    const e = await failure(transport().fetch(request(`https://127.0.0.1:${port}/`)));
    expect(e.type).toBe("network");
    expect(e.message).toMatch(/IP: 127\.0\.0\.1 is not in the cert.s list.*ERR_TLS_CERT_ALTNAME_INVALID/);
  });
});
