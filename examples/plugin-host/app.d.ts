// Editor types of the "app" host module for plugin authors (beside `scriptbox/guest`).
// Derived from the host's own module object (app-module.ts): they cannot drift from it.
declare module "app" {
  type App = import("./app-module.js").GuestApp;
  const app: App;
  export default app;
  export const version: App["version"];
  export const store: App["store"];
  export const notify: App["notify"];
  export const fetchProfile: App["fetchProfile"];
}
