// A plugin: greets new members with their profile, and remembers whom it greeted.
import { fetchProfile, notify, store } from "app";

export async function onMemberJoined(id: string): Promise<string> {
  const profile = await fetchProfile(id);
  const greeted = (store.get("greeted") as string[] | null) ?? [];
  store.set("greeted", [...greeted, profile.id]);
  await notify(`welcome, ${profile.name} (member since ${profile.joined.slice(0, 4)})`);
  return profile.name;
}

export function greetedCount(): number {
  return ((store.get("greeted") as string[] | null) ?? []).length;
}
