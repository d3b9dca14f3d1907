import uPlot from 'uplot';
import { useEffect, useRef } from 'preact/hooks';

export interface SeriesSpec {
  label: string;
  /** A CSS colour; `var(--x)` is read from the page. */
  stroke: string;
  values: (number | null)[];
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
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: resolveColour(s.stroke, el), width: 2, points: { show: false } }))],
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
