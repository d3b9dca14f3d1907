/**
 * A port's contract suite: `describe(title)` whose tests each get a fresh store from `make`.
 * `tests` is handed a stand-in that forwards every call to the current test's store, so a
 * suite reads `store.get(…)` as if it held the store itself.
 */
export function contractSuite<S extends object>(title: string, make: () => Promise<S> | S, tests: (store: S) => void): void {
  describe(title, () => {
    let current: S | undefined;
    beforeEach(async () => {
      current = await make();
    });
    const store = new Proxy({} as S, {
      get(_, key) {
        if (current === undefined) throw new Error(`${title}: no store outside a test`);
        const value: unknown = Reflect.get(current, key, current);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(current) : value;
      },
    });
    tests(store);
  });
}
