// A page's console, held to a rate: a burst of BURST messages, then RATE a second.  What is
// past it is dropped and counted, and the count is told (at most once a second) in one
// message of our own that the page log reads and does not keep.  A page writing in a loop
// would otherwise send the browser's DevTools connection, which every run of this browser
// shares, more messages than it can take.
//
// Each console method becomes a Proxy of the browser's own: a call reads the proxy's
// handler's ``apply``, a getter that takes a token and returns Reflect.apply (or, when none
// is left, a function that only counts).  The getter has returned before the browser's
// method runs, so no frame of ours is on the stack when it does: a kept message keeps the
// page's own file and line.  The methods are accessors that can't be deleted or redefined;
// setting one keeps what the page sets, held to the same rate when it is a browser's own
// method (another frame's console, say).  Runs in every frame and in workers.
(() => {
  const G = globalThis;
  const KEY = Symbol.for("tabwright.console");
  if (!G.console || Object.prototype.hasOwnProperty.call(G.console, KEY)) return;
  const BURST = 1000;
  const RATE = 100; // a second
  const MARK = "__MARK__";
  const now = G.performance && G.performance.now ? G.performance.now.bind(G.performance) : Date.now;
  // A worker held before its first line has no setTimeout yet: it is taken when first needed.
  let later = typeof G.setTimeout === "function" ? G.setTimeout.bind(G) : null;
  const apply = Reflect.apply;
  const toText = Function.prototype.call.bind(Function.prototype.toString);
  const native = (fn) => {
    try {
      return /\{\s*\[native code\]\s*\}\s*$/.test(toText(fn));
    } catch (e) {
      return false;
    }
  };
  const console = G.console;
  const own = {};
  for (const name of Object.getOwnPropertyNames(console)) {
    if (typeof console[name] === "function") own[name] = console[name];
  }
  const report = own.debug;
  let tokens = BURST;
  let last = now();
  let written = 0;
  let dropped = 0;
  let telling = false;
  const drop = () => {
    dropped += 1;
  };
  const tell = () => {
    telling = false;
    const counts = [written, dropped];
    written = 0;
    dropped = 0;
    apply(report, console, [MARK + " " + counts.join(" ")]);
  };
  const handler = new Proxy(
    {},
    {
      get(_, trap) {
        if (trap !== "apply") return undefined;
        written += 1;
        const t = now();
        tokens = Math.min(BURST, tokens + ((t - last) * RATE) / 1000);
        last = t;
        if (tokens >= 1) {
          tokens -= 1;
          return apply;
        }
        if (!telling) {
          telling = true;
          try {
            later = later || G.setTimeout.bind(G);
            later(tell, 1000);
          } catch (e) {
            // no timer to tell the count with: it is still dropped
          }
        }
        return drop;
      },
    },
  );
  const ours = new WeakSet();
  const held = (fn) => {
    const proxy = new Proxy(fn, handler);
    ours.add(proxy);
    return proxy;
  };
  for (const name of Object.keys(own)) {
    let current = held(own[name]);
    Object.defineProperty(console, name, {
      configurable: false,
      enumerable: true,
      get: () => current,
      set: (value) => {
        const again = typeof value === "function" && native(value) && !ours.has(value);
        current = again ? held(value) : value;
      },
    });
  }
  Object.defineProperty(console, KEY, { value: true });
})();
