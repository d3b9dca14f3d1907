import { useState } from 'preact/hooks';
import type { FilterTrial } from '../../../shared/app/admin/filter-test-admin';
import { post, seg } from '../api';
import { acct, Ctx } from '../ctx';
import { DataTable, ErrorBox, Notice, RunButton, useAction } from '../ui';

/**
 * "Try it" beside a destination's filter field: the expression as typed, evaluated by Herald on
 * the account's latest sample of each event type the destination takes (every type for one not
 * created yet). Nothing is saved.
 */
export function FilterTry({ ctx, destinationId, filter }: { ctx: Ctx; destinationId: string; filter: string }) {
  const [results, setResults] = useState<FilterTrial[]>();
  const tryIt = useAction(() => post<{ filter: string; results: FilterTrial[] }>(`${acct(ctx)}/destinations/${seg(destinationId)}/filter-test`, { filter }));
  const ready = destinationId.trim() !== '' && filter.trim() !== '';
  const taken = results?.filter((r) => r.pass).length ?? 0;
  return (
    <div class="filter-try">
      <RunButton
        action={tryIt}
        disabled={!ready}
        onDone={(r) => {
          setResults(r.results);
        }}
      >
        Try it
      </RunButton>
      {!ready && <p class="hint">Give an id and a filter to try it on this account’s latest events.</p>}
      <ErrorBox error={tryIt.error} title="The filter could not be tried" />
      {results && !tryIt.error && (
        <>
          <Notice>{results.length === 0 ? 'No sample to try it on: no event of these types has been published yet.' : `Takes ${taken} of ${results.length} sample events.`}</Notice>
          {results.length > 0 && (
            <DataTable label="The filter on the latest sample of each event type" columns={['Event type', 'Event id', 'Taken', 'Why not']}>
              {results.map((r) => (
                <tr key={`${r.type}/${r.id}`} data-testid="filter-trial">
                  <td>{r.type}</td>
                  <td>{r.id}</td>
                  <td>{r.pass ? 'yes' : 'no'}</td>
                  <td>{r.error ? `error: ${r.error}` : r.truncated ? 'sample cut at 8 KB: its data is not there' : ''}</td>
                </tr>
              ))}
            </DataTable>
          )}
        </>
      )}
    </div>
  );
}
