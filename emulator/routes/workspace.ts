// /api/v1/workspace/{workspace_id}: a workspace of the PAT's team (another team's is a 404).
import type { FastifyInstance } from "fastify";
import { teamMember } from "../auth.js";
import type { PluginOptions } from "../context.js";
import { notFound } from "../errors.js";
import { idParams, noQuery } from "../schemas.js";
import type { WorkspaceRow } from "../store.js";

const workspaceSchema = {
  type: "object",
  required: ["id", "object", "name"],
  properties: { id: { type: "string" }, object: { type: "string" }, name: { type: "string" } },
} as const;

export function workspaceRecord(row: WorkspaceRow) {
  return { id: row.id, object: "workspace", name: row.name };
}

export async function workspaceRoutes(app: FastifyInstance, { ctx }: PluginOptions): Promise<void> {
  app.addHook("onRequest", async (request) => {
    request.principal = ctx.auth.pat(request);
  });

  app.get<{ Params: { workspace_id: string } }>("/workspace/:workspace_id", {
    schema: { querystring: noQuery, params: idParams("workspace_id", "ws"), response: { 200: workspaceSchema } },
  }, async (request) => {
    const workspace = ctx.store.workspace(teamMember(request).teamId, request.params.workspace_id);
    if (!workspace) throw notFound("workspace");
    return workspaceRecord(workspace);
  });
}
