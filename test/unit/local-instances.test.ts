import { ConfigError } from '../../shared/config';
import { instanceCount, parseLocalArgs } from '../../apps/local/args';
import { instanceLog, roundRobin } from '../../apps/local/instances';
import { LogFields } from '../../shared/ports/clock';
import { FunctionName } from '../../shared/topology';

describe('npm start -- --instances N', () => {
  test('one instance unless told; --instances N and --instances=N', () => {
    expect(parseLocalArgs([])).toEqual({ instances: 1 });
    expect(parseLocalArgs(['--instances', '3'])).toEqual({ instances: 3 });
    expect(parseLocalArgs(['--instances=16'])).toEqual({ instances: 16 });
  });

  test.each([
    [['--instances', '0'], "--instances must be a whole number from 1 to 16, not '0'"],
    [['--instances', '17'], "--instances must be a whole number from 1 to 16, not '17'"],
    [['--instances', '2.5'], "--instances must be a whole number from 1 to 16, not '2.5'"],
    [['--instances', 'three'], "--instances must be a whole number from 1 to 16, not 'three'"],
    [['--instances'], '--instances must be a whole number from 1 to 16; none was given'],
    [['--instances', '--instances', '2'], '--instances must be a whole number from 1 to 16; none was given'],
    [['--instances', '2', '--instances=3'], '--instances is given twice'],
    [['--port', '8080'], "unknown argument '--port': npm start takes --instances N (default 1)"],
    [['3'], "unknown argument '3': npm start takes --instances N (default 1)"],
  ])('%j is refused: %s', (argv, message) => {
    expect(() => parseLocalArgs(argv)).toThrow(new ConfigError(message));
  });

  test('a stack started from code checks its count the same way', () => {
    expect(instanceCount(undefined)).toBe(1);
    expect(instanceCount(4)).toBe(4);
    expect(() => instanceCount(0)).toThrow('--instances must be a whole number from 1 to 16, not 0');
  });
});

describe('the endpoint in front of the instances', () => {
  test("sends each function's requests to the instances in turn, a turn per function", () => {
    const served: string[] = [];
    const serve = roundRobin(['a', 'b', 'c'], (instance, handle) => {
      served.push(instance);
      handle();
    });
    const calls: FunctionName[] = ['deliver', 'deliver', 'ingest', 'deliver', 'deliver', 'ingest', 'admin'];
    let handled = 0;
    for (const fn of calls) serve(fn, () => handled++);
    expect(handled).toBe(calls.length);
    expect(served).toEqual(['a', 'b', 'a', 'c', 'a', 'b', 'a']);
  });

  test("an instance's log lines name it, and a caller's own fields are kept", () => {
    const lines: [string, LogFields | undefined][] = [];
    const log = { debug: () => undefined, info: (m: string, f?: LogFields) => lines.push([m, f]), warn: () => undefined, error: () => undefined };
    instanceLog(log, 2).info('hello', { destinationId: 'd' });
    instanceLog(log, 0).info('bare');
    expect(lines).toEqual([
      ['hello', { instance: 2, destinationId: 'd' }],
      ['bare', { instance: 0 }],
    ]);
  });
});
