import { KeyTurns } from '../../shared/app/ordering/key-turns';

test('work on one key runs one at a time, in order; other keys do not wait', async () => {
  const turns = new KeyTurns();
  const log: string[] = [];
  let release!: () => void;
  const first = turns.run('a', async () => {
    log.push('a1 start');
    await new Promise<void>((r) => (release = r));
    log.push('a1 end');
  });
  const second = turns.run('a', async () => void log.push('a2'));
  await turns.run('b', async () => void log.push('b1'));
  expect(log).toEqual(['a1 start', 'b1']);
  release();
  await Promise.all([first, second]);
  expect(log).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
});

test('items that arrive while a key\'s commit runs are committed together, in the order they joined; a failure reaches each of them', async () => {
  const turns = new KeyTurns();
  const groups: number[][] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const commit = async (group: number[]) => {
    groups.push(group);
    if (groups.length === 1) await gate;
    if (group.includes(99)) throw new Error('store down');
  };
  const a = turns.join('k', [1], commit);
  await Promise.resolve();
  const b = turns.join('k', [2, 3], commit);
  const c = turns.join('k', [4], commit);
  release();
  await Promise.all([a, b, c]);
  expect(groups).toEqual([[1], [2, 3, 4]]);
  await expect(turns.join('k', [99], commit)).rejects.toThrow('store down');
  await turns.join('k', [5], commit);
  expect(groups.at(-1)).toEqual([5]);
});
