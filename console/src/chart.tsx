import uPlot from 'uplot';
import { useEffect, useRef } from 'preact/hooks';

export interface SeriesSpec {
  label: string;
  /** A CSS colour; `var(--x)` is read from the page. */
  stroke: string;
  values: (number | null)[];
}

/** Values with no value on either side: a line cannot show them, so they get a dot. */
function isolated(values: readonly (number | null)[]): number[] {
  return values.flatMap((v, i) => (v !== null && (values[i - 1] ?? null) === null && (values[i + 1] ?? null) === null ? [i] : []));
}

function resolveColour(c: string, el: Element): string {
  const m = /^var\((--[\w-]+)\)$/.exec(c);
  return m ? getComputedStyle(el).getPropertyValue(m[1]!).trim() || '#333' : c;
}

/**
 * A time-series chart drawn by uPlot into a canvas (it sizes itself through the CSSOM, which
 * the CSP allows). A table of the same numbers stays beside it for screen readers.
 */
export function TimeChart({ title, times, series, yFormat, yRange, height = 220 }: { title: string; times: number[]; series: SeriesSpec[]; yFormat?: (v: number) => string; yRange?: [number, number]; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = Math.max(260, el.clientWidth);
    const opts: uPlot.Options = {
      width,
      height,
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: resolveColour(s.stroke, el), width: 2, points: { show: true, size: 6, fill: resolveColour(s.stroke, el), filter: isolated(s.values) } }))],
      axes: [{}, { values: (_u, ticks) => ticks.map((t) => (yFormat ? yFormat(t) : String(t))), size: 56 }],
      legend: { show: true },
      ...(yRange ? { scales: { y: { range: yRange } } } : {}),
      cursor: { drag: { x: false, y: false } },
    };
    const plot = new uPlot(opts, [times, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(260, el.clientWidth), height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [times, series, height]);
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} class="chart-box" role="img" aria-label={`${title}: chart; the numbers are in the table below`} />
    </figure>
  );
}

/**
 * A sparkline: one series drawn small by uPlot, no axes, legend or cursor, the latest value
 * marked with a dot (so a single value shows too). It is an image to assistive technology,
 * named by `label` (say the number there: the line itself is not read out). Styled by class
 * only; uPlot sizes its canvas through the CSSOM, which the CSP allows.
 */
export function Sparkline({ label, times, values, yRange, stroke = 'var(--chart-2)', width = 96, height = 24, testId }: { label: string; times: number[]; values: (number | null)[]; yRange?: [number, number]; stroke?: string; width?: number; height?: number; testId?: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    let last = -1;
    values.forEach((v, i) => {
      if (v !== null) last = i;
    });
    const colour = resolveColour(stroke, el);
    const opts: uPlot.Options = {
      width,
      height,
      padding: [3, 3, 3, 3],
      series: [{}, { stroke: colour, width: 1.5, spanGaps: true, points: { show: true, size: 4, fill: colour, stroke: colour, filter: last >= 0 ? [last] : [] } }],
      axes: [{ show: false }, { show: false }],
      legend: { show: false },
      cursor: { show: false },
      select: { show: false, left: 0, top: 0, width: 0, height: 0 },
      scales: { x: { time: false }, ...(yRange ? { y: { range: yRange } } : {}) },
    };
    const plot = new uPlot(opts, [times, values] as uPlot.AlignedData, el);
    return () => plot.destroy();
  }, [times, values, width, height, stroke]);
  return <div ref={box} class="sparkline" role="img" aria-label={label} data-testid={testId} />;
}
