import {
  formatBytes,
  formatMetric,
  formatRelativeTime,
  formatValue,
  lowerIsBetter,
  parseTimestamp,
  shortChecksum
} from '../format';
import { bestIndex, keyMetrics } from '../panels/models/helpers';
import { ModelVersion } from '../api';

describe('formatBytes', () => {
  it.each([
    [0, '0 B'],
    [512, '512 B'],
    [1024, '1 KiB'],
    [1536, '1.5 KiB'],
    [10 * 1024 + 100, '10.1 KiB'],
    [5 * 1024 * 1024, '5 MiB'],
    [123.4 * 1024 * 1024 * 1024, '123 GiB'],
    [3 * 1024 ** 4, '3 TiB']
  ])('%d -> %s', (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });

  it('shows a dash for missing or bad values', () => {
    expect(formatBytes(null)).toBe('—');
    expect(formatBytes(undefined)).toBe('—');
    expect(formatBytes(-1)).toBe('—');
    expect(formatBytes(NaN)).toBe('—');
  });
});

describe('formatRelativeTime', () => {
  const now = new Date('2025-06-01T12:00:00Z');

  it.each([
    ['2025-06-01T11:59:50Z', 'now'],
    ['2025-06-01T11:55:00Z', '5 minutes ago'],
    ['2025-06-01T09:00:00Z', '3 hours ago'],
    ['2025-05-31T12:00:00Z', 'yesterday'],
    ['2025-05-20T12:00:00Z', '12 days ago'],
    ['2025-02-01T12:00:00Z', '4 months ago'],
    ['2023-06-01T12:00:00Z', '2 years ago'],
    ['2025-06-01T12:10:00Z', 'in 10 minutes']
  ])('%s -> %s', (iso, text) => {
    expect(formatRelativeTime(iso, now, 'en')).toBe(text);
  });

  it('reads timestamps without a zone as UTC', () => {
    expect(parseTimestamp('2025-06-01T11:00:00')?.toISOString()).toBe(
      '2025-06-01T11:00:00.000Z'
    );
    expect(parseTimestamp('2025-06-01 11:00:00.123456')?.getTime()).toBe(
      Date.parse('2025-06-01T11:00:00.123Z')
    );
    expect(formatRelativeTime('2025-06-01T11:00:00', now, 'en')).toBe(
      '1 hour ago'
    );
  });

  it('keeps zone offsets', () => {
    expect(parseTimestamp('2025-06-01T14:00:00+02:00')?.toISOString()).toBe(
      '2025-06-01T12:00:00.000Z'
    );
  });

  it('shows a dash for missing or bad values', () => {
    expect(formatRelativeTime(null, now)).toBe('—');
    expect(formatRelativeTime('yesterday-ish', now)).toBe('—');
  });
});

describe('metric and value formatting', () => {
  it('rounds metrics to 4 significant digits', () => {
    expect(formatMetric(0.912345)).toBe('0.9123');
    expect(formatMetric(12.5)).toBe('12.5');
    expect(formatMetric(42)).toBe('42');
    expect(formatMetric(0.00001234)).toBe('1.234e-5');
    expect(formatMetric(undefined)).toBe('—');
  });

  it('formats params of any JSON type', () => {
    expect(formatValue('adam')).toBe('adam');
    expect(formatValue(0.001)).toBe('0.001');
    expect(formatValue([64, 32])).toBe('[64,32]');
    expect(formatValue(true)).toBe('true');
    expect(formatValue(null)).toBe('—');
  });

  it('shortens checksums', () => {
    expect(shortChecksum('sha256:' + 'ab'.repeat(32))).toBe(
      'sha256:abababababab…'
    );
    expect(shortChecksum('')).toBe('—');
  });
});

describe('metric direction and comparison', () => {
  it('knows which metrics are better low', () => {
    expect(lowerIsBetter('val_loss')).toBe(true);
    expect(lowerIsBetter('trainLoss')).toBe(true);
    expect(lowerIsBetter('rmse')).toBe(true);
    expect(lowerIsBetter('latency_ms')).toBe(true);
    expect(lowerIsBetter('accuracy')).toBe(false);
    expect(lowerIsBetter('precision')).toBe(false);
    expect(lowerIsBetter('f1')).toBe(false);
  });

  it('picks the best value of a row', () => {
    expect(bestIndex('accuracy', [0.9, 0.95, 0.93])).toBe(1);
    expect(bestIndex('loss', [0.3, 0.2, 0.25])).toBe(1);
    expect(bestIndex('accuracy', [0.9, undefined, 0.97])).toBe(2);
    expect(bestIndex('accuracy', [0.9, 0.9])).toBeNull();
    expect(bestIndex('accuracy', [0.9, undefined])).toBeNull();
  });

  it('chooses the most common metrics as key metrics', () => {
    const v = (metrics: Record<string, number>) =>
      ({ metrics }) as unknown as ModelVersion;
    expect(
      keyMetrics([
        v({ accuracy: 0.9, loss: 0.2, f1: 0.8 }),
        v({ accuracy: 0.91, loss: 0.1 }),
        v({ accuracy: 0.92, auc: 0.7 })
      ])
    ).toEqual(['accuracy', 'loss', 'auc']);
    expect(keyMetrics([], 3)).toEqual([]);
  });
});
