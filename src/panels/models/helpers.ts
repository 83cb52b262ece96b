/**
 * Pure helpers of the Models views (kept apart so they are easy to test).
 */
import { ModelVersion } from '../../api';
import { lowerIsBetter } from '../../format';

/** The metric names to show in a versions table, most common first. */
export function keyMetrics(versions: ModelVersion[], max = 3): string[] {
  const counts = new Map<string, number>();
  for (const v of versions) {
    for (const name of Object.keys(v.metrics ?? {})) {
      counts.set(name, (counts.get(name) ?? 0) + 1);
    }
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, max)
    .map(([name]) => name);
}

/** The index of the best value in a row (null when it cannot be said). */
export function bestIndex(metric: string, values: unknown[]): number | null {
  let best: number | null = null;
  const lower = lowerIsBetter(metric);
  values.forEach((value, i) => {
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      return;
    }
    const current = best === null ? null : (values[best] as number);
    if (current === null || (lower ? value < current : value > current)) {
      best = i;
    }
  });
  const numeric = values.filter(v => typeof v === 'number');
  if (numeric.length < 2 || new Set(numeric).size === 1) {
    return null;
  }
  return best;
}
