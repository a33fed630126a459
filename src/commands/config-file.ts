// scriptbox.config.json: the sandbox flags a person would otherwise repeat on every run,
// kept next to the script. This module reads and checks the file's shape; turning its
// values into sandbox options (with the flags) is sandbox-flags.ts's job. docs/cli.md
// documents the format.
import { readFileSync } from "node:fs";
import { UsageError } from "../usage.js";

export const CONFIG_FILE_NAME = "scriptbox.config.json";

/** scriptbox.config.json: the flags a person would otherwise repeat on every run. */
export interface ConfigFile {
  limits?: Record<string, number | string>;
  allowNet?: string[];
  env?: Record<string, string>;
  envFile?: string | string[];
  /** NAME → "ENV_VAR@origin" or { env: "ENV_VAR", origins: [...] }. */
  secrets?: Record<string, string | { env: string; origins: string[] }>;
  cloud?: { url: string; tokenSecret?: string; sessionSecret?: string };
  location?: string;
}

const CONFIG_KEYS = ["$schema", "limits", "allowNet", "env", "envFile", "secrets", "cloud", "location"];

export function readConfig(path: string, label: string): ConfigFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new UsageError(`${label}: ${error instanceof SyntaxError ? `not valid JSON: ${error.message}` : (error as Error).message}`);
  }
  const fail = (what: string): never => {
    throw new UsageError(`${label}: ${what}`);
  };
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) fail("expected one JSON object");
  const config = parsed as Record<string, unknown>;
  for (const key of Object.keys(config)) {
    if (!CONFIG_KEYS.includes(key)) fail(`unknown key "${key}" (known: ${CONFIG_KEYS.slice(1).join(", ")})`);
  }
  const record = (key: string, value: unknown) => {
    if (value !== undefined && (typeof value !== "object" || value === null || Array.isArray(value))) fail(`"${key}" must be an object`);
  };
  const strings = (key: string, value: unknown) => {
    if (value !== undefined && (!Array.isArray(value) || !value.every((v) => typeof v === "string"))) fail(`"${key}" must be an array of strings`);
  };
  record("limits", config.limits);
  record("env", config.env);
  record("secrets", config.secrets);
  record("cloud", config.cloud);
  strings("allowNet", config.allowNet);
  if (typeof config.envFile !== "string") strings("envFile", config.envFile);
  for (const [key, value] of Object.entries((config.env as object | undefined) ?? {})) {
    if (typeof value !== "string") fail(`env.${key} must be a string`);
  }
  const cloud = config.cloud as Record<string, unknown> | undefined;
  if (cloud) {
    for (const key of Object.keys(cloud)) if (!["url", "tokenSecret", "sessionSecret"].includes(key)) fail(`unknown key "cloud.${key}" (known: url, tokenSecret, sessionSecret)`);
    for (const key of ["url", "tokenSecret", "sessionSecret"]) {
      if (cloud[key] !== undefined && typeof cloud[key] !== "string") fail(`cloud.${key} must be a string`);
    }
    if (cloud.url === undefined) fail("cloud.url is required when cloud is given");
  }
  if (config.location !== undefined && typeof config.location !== "string") fail("location must be a URL string");
  return config as ConfigFile;
}
