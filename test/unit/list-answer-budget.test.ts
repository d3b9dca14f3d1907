import { rowsWithin } from '../../shared/app/admin/answer-budget';
import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { listAnswerBudgetSuite } from '../support/list-answer-budget';

listAnswerBudgetSuite('memory', async () => new MemoryDeliveryStore());

test('a row bigger than the budget still makes a page of one', () => {
  expect(rowsWithin([{ a: 'x'.repeat(100) }, { b: 1 }], 10)).toBe(1);
  expect(rowsWithin([], 10)).toBe(0);
  expect(rowsWithin([{ a: 1 }, { b: 2 }, { c: 3 }], 16)).toBe(2);
});
