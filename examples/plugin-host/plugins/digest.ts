// A plugin: counts the members who joined in its store and sends a digest every third
// one; unknown members are skipped (the host says NOT_FOUND).
import app from "app";

let digests = 0;

export async function onMemberJoined(id: string): Promise<string> {
  try {
    await app.fetchProfile(id);
  } catch (error) {
    if ((error as { code?: string }).code === "NOT_FOUND") return "skipped";
    throw error;
  }
  const count = ((app.store.get("members") as number | null) ?? 0) + 1;
  app.store.set("members", count);
  if (count % 3 === 0) {
    digests++;
    await app.notify(`digest #${digests}: ${count} members (app ${app.version})`);
  }
  return "counted";
}
