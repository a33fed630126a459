// A minimal testharness.js for running WPT .any.js files inside a scriptbox sandbox.
// It implements the API those files use (test, async_test, promise_test, the assert_*
// functions, step_func and friends) and collects one result per subtest. Not the real
// harness: no DOM, no output, no idlharness. Runs as guest code, so ES2023 only.
(function () {
  "use strict";
  const global = globalThis;
  const results = [];
  const pending = [];
  const promiseQueue = [];
  let title = "Untitled";
  let harnessError = null;
  const TEST_TIMEOUT_MS = 4000;

  class AssertionError extends Error {
    constructor(message) {
      super(message);
      this.name = "AssertionError";
    }
  }

  function format_value(v) {
    if (typeof v === "string") return JSON.stringify(v);
    if (typeof v === "number" && Object.is(v, -0)) return "-0";
    if (typeof v === "symbol" || typeof v === "bigint") return String(v) + (typeof v === "bigint" ? "n" : "");
    if (v === null) return "null";
    if (Array.isArray(v)) return "[" + v.map(format_value).join(", ") + "]";
    try {
      return String(v);
    } catch {
      return "[object]";
    }
  }

  function fail(message, description) {
    throw new AssertionError((description ? description + ": " : "") + message);
  }
  function same(a, b) {
    return Object.is(a, b);
  }

  const asserts = {
    assert_true(actual, description) {
      if (actual !== true) fail(`assert_true: expected true got ${format_value(actual)}`, description);
    },
    assert_false(actual, description) {
      if (actual !== false) fail(`assert_false: expected false got ${format_value(actual)}`, description);
    },
    assert_equals(actual, expected, description) {
      if (!same(actual, expected)) fail(`assert_equals: expected ${format_value(expected)} but got ${format_value(actual)}`, description);
    },
    assert_not_equals(actual, expected, description) {
      if (same(actual, expected)) fail(`assert_not_equals: got disallowed value ${format_value(actual)}`, description);
    },
    assert_in_array(actual, expected, description) {
      if (expected.indexOf(actual) === -1) fail(`assert_in_array: value ${format_value(actual)} not in array ${format_value(expected)}`, description);
    },
    assert_array_equals(actual, expected, description) {
      if (actual === null || typeof actual !== "object" || typeof actual.length !== "number") fail(`assert_array_equals: value is ${format_value(actual)}, expected array`, description);
      if (actual.length !== expected.length) fail(`assert_array_equals: lengths differ, expected array ${format_value(expected)} length ${expected.length}, got ${format_value(actual)} length ${actual.length}`, description);
      for (let i = 0; i < expected.length; i++) {
        if (!same(actual[i], expected[i])) fail(`assert_array_equals: expected property ${i} to be ${format_value(expected[i])} but got ${format_value(actual[i])}`, description);
      }
    },
    assert_object_equals(actual, expected, description) {
      const check = (a, e, path) => {
        if (typeof e !== "object" || e === null) {
          if (!same(a, e)) fail(`assert_object_equals: ${path} expected ${format_value(e)} got ${format_value(a)}`, description);
          return;
        }
        for (const k of Object.keys(e)) check(a[k], e[k], path + "." + k);
        for (const k of Object.keys(a)) if (!(k in e)) fail(`assert_object_equals: unexpected property ${path}.${k}`, description);
      };
      check(actual, expected, "value");
    },
    assert_less_than(actual, expected, description) {
      if (!(actual < expected)) fail(`assert_less_than: expected a number less than ${expected} but got ${actual}`, description);
    },
    assert_greater_than(actual, expected, description) {
      if (!(actual > expected)) fail(`assert_greater_than: expected a number greater than ${expected} but got ${actual}`, description);
    },
    assert_less_than_equal(actual, expected, description) {
      if (!(actual <= expected)) fail(`assert_less_than_equal: expected ${actual} <= ${expected}`, description);
    },
    assert_greater_than_equal(actual, expected, description) {
      if (!(actual >= expected)) fail(`assert_greater_than_equal: expected ${actual} >= ${expected}`, description);
    },
    assert_approx_equals(actual, expected, epsilon, description) {
      if (!(Math.abs(actual - expected) <= epsilon)) fail(`assert_approx_equals: expected ${expected} +/- ${epsilon} but got ${actual}`, description);
    },
    assert_regexp_match(actual, expected, description) {
      if (!expected.test(actual)) fail(`assert_regexp_match: expected ${format_value(actual)} to match ${expected}`, description);
    },
    assert_class_string(object, classString, description) {
      const actual = Object.prototype.toString.call(object);
      if (actual !== `[object ${classString}]`) fail(`assert_class_string: expected "[object ${classString}]" but got "${actual}"`, description);
    },
    assert_own_property(object, name, description) {
      if (!Object.prototype.hasOwnProperty.call(object, name)) fail(`assert_own_property: expected property ${format_value(name)} missing`, description);
    },
    assert_not_own_property(object, name, description) {
      if (Object.prototype.hasOwnProperty.call(object, name)) fail(`assert_not_own_property: unexpected property ${format_value(name)} found`, description);
    },
    assert_inherits(object, name, description) {
      if (Object.prototype.hasOwnProperty.call(object, name) || !(name in object)) fail(`assert_inherits: property ${format_value(name)} not inherited`, description);
    },
    assert_idl_attribute(object, name, description) {
      asserts.assert_inherits(object, name, description);
    },
    assert_readonly(object, name, description) {
      const before = object[name];
      try {
        object[name] = before + "a";
      } catch {}
      if (!same(object[name], before)) fail(`assert_readonly: changing property ${format_value(name)} succeeded`, description);
    },
    assert_unreached(description) {
      fail("assert_unreached: Reached unreachable code", description);
    },
    assert_throws_js(constructor, func, description) {
      try {
        func.call(this);
      } catch (e) {
        if (typeof e !== "object" || e === null || !(e instanceof constructor)) {
          fail(`assert_throws_js: ${func} threw ${format_value(e)} (${e && e.name}) expected instance of ${constructor.name}`, description);
        }
        if (e.constructor !== constructor && constructor !== Error) {
          fail(`assert_throws_js: ${func} threw ${format_value(e)} expected ${constructor.name} exactly`, description);
        }
        return;
      }
      fail(`assert_throws_js: function "${func}" did not throw`, description);
    },
    assert_throws_dom(type, funcOrConstructor, descriptionOrFunc, maybeDescription) {
      const func = typeof funcOrConstructor === "function" && funcOrConstructor.prototype === undefined || arguments.length < 4 ? funcOrConstructor : descriptionOrFunc;
      const description = arguments.length < 4 ? descriptionOrFunc : maybeDescription;
      const codes = { IndexSizeError: 1, HierarchyRequestError: 3, InvalidCharacterError: 5, NotFoundError: 8, NotSupportedError: 9, InvalidStateError: 11, SyntaxError: 12, InvalidAccessError: 15, TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20, QuotaExceededError: 22, TimeoutError: 23, DataCloneError: 25, EncodingError: 0, NotReadableError: 0, OperationError: 0, DataError: 0 };
      const legacy = { INDEX_SIZE_ERR: "IndexSizeError", INVALID_CHARACTER_ERR: "InvalidCharacterError", INVALID_STATE_ERR: "InvalidStateError", SYNTAX_ERR: "SyntaxError", NOT_FOUND_ERR: "NotFoundError", NOT_SUPPORTED_ERR: "NotSupportedError", ABORT_ERR: "AbortError", TIMEOUT_ERR: "TimeoutError", NETWORK_ERR: "NetworkError", DATA_CLONE_ERR: "DataCloneError", SECURITY_ERR: "SecurityError" };
      const name = typeof type === "number" ? Object.keys(codes).find((k) => codes[k] === type) : legacy[type] || type;
      try {
        func.call(this);
      } catch (e) {
        if (typeof e !== "object" || e === null || e.name !== name) fail(`assert_throws_dom: ${func} threw ${format_value(e)} with name ${e && e.name}, expected ${name}`, description);
        if (!(e instanceof global.DOMException)) fail(`assert_throws_dom: ${func} threw a non-DOMException ${e && e.name}`, description);
        if (name in codes && e.code !== codes[name]) fail(`assert_throws_dom: code ${e.code} expected ${codes[name]}`, description);
        return;
      }
      fail(`assert_throws_dom: function "${func}" did not throw`, description);
    },
    assert_throws_exactly(exception, func, description) {
      try {
        func.call(this);
      } catch (e) {
        if (!same(e, exception)) fail(`assert_throws_exactly: ${func} threw ${format_value(e)} but we expected it to throw ${format_value(exception)}`, description);
        return;
      }
      fail(`assert_throws_exactly: function "${func}" did not throw`, description);
    },
    assert_implements(condition, description) {
      if (!condition) fail("assert_implements: " + description);
    },
    assert_implements_optional(condition, description) {
      if (!condition) {
        const error = new AssertionError("assert_implements_optional: " + description);
        error.optional = true;
        throw error;
      }
    },
  };

  class Test {
    constructor(name, properties) {
      this.name = name === undefined ? title : String(name);
      this.properties = properties || {};
      this.status = null;
      this.message = "";
      this.cleanups = [];
      this.timers = [];
      this.resolveDone = null;
      this.donePromise = new Promise((resolve) => (this.resolveDone = resolve));
    }
    step(func, thisObj, ...args) {
      if (this.status !== null) return undefined;
      try {
        return func.apply(thisObj === undefined ? this : thisObj, args);
      } catch (e) {
        this.fail(e);
        return undefined;
      }
    }
    step_func(func, thisObj) {
      const test = this;
      return function (...args) {
        return test.step(func, thisObj === undefined ? this : thisObj, ...args);
      };
    }
    step_func_done(func, thisObj) {
      const test = this;
      return function (...args) {
        if (func) test.step(func, thisObj === undefined ? this : thisObj, ...args);
        test.done();
      };
    }
    unreached_func(description) {
      return this.step_func(() => asserts.assert_unreached(description));
    }
    step_timeout(func, ms, ...args) {
      const id = setTimeout(this.step_func(() => func(...args)), ms);
      this.timers.push(id);
      return id;
    }
    add_cleanup(func) {
      this.cleanups.push(func);
    }
    fail(error) {
      if (this.status !== null) return;
      this.status = error && error.optional ? "PRECONDITION_FAILED" : "FAIL";
      this.message = error instanceof AssertionError ? error.message : `${error && error.name}: ${error && error.message}`;
      this.finish();
    }
    done() {
      if (this.status === null) this.status = "PASS";
      this.finish();
    }
    finish() {
      for (const id of this.timers) clearTimeout(id);
      this.timers = [];
      for (const cleanup of this.cleanups.splice(0)) {
        try {
          cleanup();
        } catch {}
      }
      if (!this.recorded) {
        this.recorded = true;
        results.push({ name: this.name, status: this.status, message: this.message });
      }
      this.resolveDone();
    }
    timeout() {
      if (this.status !== null) return;
      this.status = "TIMEOUT";
      this.message = "Test timed out";
      this.finish();
    }
    withTimeout() {
      const id = setTimeout(() => this.timeout(), TEST_TIMEOUT_MS);
      return this.donePromise.then(() => clearTimeout(id));
    }
  }

  function test(func, name, properties) {
    const t = new Test(name, properties);
    t.step(func, t, t);
    t.done();
  }

  function async_test(func, name, properties) {
    if (typeof func !== "function") {
      properties = name;
      name = func;
      func = null;
    }
    const t = new Test(name, properties);
    if (func) t.step(func, t, t);
    pending.push(t.withTimeout());
    return t;
  }

  function promise_test(func, name, properties) {
    const t = new Test(name, properties);
    // promise_tests run one after another, in the order they were defined.
    promiseQueue.push(() => {
      let result;
      try {
        result = func.call(t, t);
      } catch (e) {
        t.fail(e);
        return t.donePromise;
      }
      Promise.resolve(result).then(
        () => t.done(),
        (e) => t.fail(e),
      );
      return t.withTimeout();
    });
  }

  function rejects(test, check, promise, description) {
    return Promise.resolve(promise).then(
      () => fail("promise_rejects: expected a rejection", description),
      (e) => check(e),
    );
  }

  Object.assign(global, asserts, {
    test,
    async_test,
    promise_test,
    format_value,
    setup(funcOrProperties) {
      if (typeof funcOrProperties === "function") funcOrProperties();
    },
    done() {},
    step_timeout: (func, ms, ...args) => setTimeout(() => func(...args), ms),
    promise_rejects_js(test, constructor, promise, description) {
      return rejects(test, (e) => asserts.assert_throws_js(constructor, () => { throw e; }, description), promise, description);
    },
    promise_rejects_dom(test, type, promise, description) {
      return rejects(test, (e) => asserts.assert_throws_dom(type, () => { throw e; }, description), promise, description);
    },
    promise_rejects_exactly(test, exception, promise, description) {
      return rejects(test, (e) => asserts.assert_throws_exactly(exception, () => { throw e; }, description), promise, description);
    },
    add_completion_callback() {},
    GLOBAL: { isWindow: () => false, isWorker: () => true, isShadowRealm: () => false },
  });

  global.__wpt = {
    /** Evaluates a test file as a classic script and resolves to its subtest results. */
    async run(source, fileTitle) {
      title = fileTitle;
      try {
        (0, eval)(source);
      } catch (e) {
        harnessError = `${e && e.name}: ${e && e.message}`;
      }
      for (const next of promiseQueue) await next();
      await Promise.all(pending);
      return { results, harnessError };
    },
  };
})();
