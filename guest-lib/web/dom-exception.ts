// WebIDL §2.8.1 DOMException: an Error subclass with a name, a message and a legacy code.
import { defineProperty, toDOMString, webidlInterface } from "./webidl";

// Legacy codes by position (code = index + 1); names without a code map to 0.
const NAMES =
  "IndexSize,,HierarchyRequest,WrongDocument,InvalidCharacter,,NoModificationAllowed,NotFound,NotSupported,InUseAttribute,InvalidState,Syntax,InvalidModification,Namespace,InvalidAccess,,TypeMismatch,Security,Network,Abort,URLMismatch,QuotaExceeded,Timeout,InvalidNodeType,DataClone".split(",");
const CONSTANTS =
  "INDEX_SIZE,DOMSTRING_SIZE,HIERARCHY_REQUEST,WRONG_DOCUMENT,INVALID_CHARACTER,NO_DATA_ALLOWED,NO_MODIFICATION_ALLOWED,NOT_FOUND,NOT_SUPPORTED,INUSE_ATTRIBUTE,INVALID_STATE,SYNTAX,INVALID_MODIFICATION,NAMESPACE,INVALID_ACCESS,VALIDATION,TYPE_MISMATCH,SECURITY,NETWORK,ABORT,URL_MISMATCH,QUOTA_EXCEEDED,TIMEOUT,INVALID_NODE_TYPE,DATA_CLONE".split(",");

export class DOMException extends Error {
  #name: string;
  #message: string;

  constructor(message: unknown = "", options: unknown = "Error") {
    super();
    this.#message = toDOMString(message);
    // Node and Deno also accept { name, cause } (the DOMExceptionOptions proposal).
    if (typeof options === "object" && options !== null) {
      const { name, cause } = options as { name?: unknown; cause?: unknown };
      this.#name = name === undefined ? "Error" : toDOMString(name);
      if ("cause" in options) defineProperty(this, "cause", { value: cause, writable: true, configurable: true });
    } else {
      this.#name = toDOMString(options);
    }
  }

  // @ts-expect-error Error declares name as a data property; WebIDL makes it an accessor.
  get name(): string {
    return this.#name;
  }

  // @ts-expect-error as above
  get message(): string {
    return this.#message;
  }

  get code(): number {
    const name = this.#name;
    if (name.slice(-5) !== "Error") return 0;
    const index = NAMES.indexOf(name.slice(0, -5));
    return index < 0 || name === "Error" ? 0 : index + 1;
  }
}

webidlInterface(DOMException, 0);
CONSTANTS.forEach((constant, index) => {
  const descriptor = { value: index + 1, enumerable: true };
  defineProperty(DOMException, `${constant}_ERR`, descriptor);
  defineProperty(DOMException.prototype, `${constant}_ERR`, descriptor);
});
