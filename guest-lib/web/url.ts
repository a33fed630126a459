// URL Standard: URL and URLSearchParams come from whatwg-url-minimum (see docs/http.md for
// why). The imports are ordered: url-setup runs before the library loads, url-restore after.
import "./url-setup";
import { URL, URLSearchParams } from "whatwg-url-minimum";
import "./url-restore";

export { URL, URLSearchParams };
