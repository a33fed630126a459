import { restoreAtob } from "./url-setup";

restoreAtob();
