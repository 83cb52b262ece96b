/** Pure helpers of the Course panel: deadline and status text, sorting. */
import { TranslationBundle } from '@jupyterlab/translation';

import type { Course, CourseMaterial, Handout } from '../../api';

/** An epoch-seconds time as local date and time in the UI language. */
export function formatEpoch(seconds: number, locale?: string): string {
  const date = new Date(seconds * 1000);
  try {
    return new Intl.DateTimeFormat(locale || undefined, {
      dateStyle: 'medium',
      timeStyle: 'short'
    }).format(date);
  } catch {
    return date.toLocaleString();
  }
}

/** Whether the hand-out's deadline has passed at `now` (ms). */
export function isOverdue(handout: Handout, now = Date.now()): boolean {
  return handout.deadline !== null && handout.deadline * 1000 < now;
}

/** "Due <date time>" or "No deadline". */
export function deadlineText(
  handout: Handout,
  trans: TranslationBundle,
  locale?: string
): string {
  if (handout.deadline === null) {
    return trans.__('No deadline');
  }
  return trans.__('Due %1', formatEpoch(handout.deadline, locale));
}

/** Whether the hand-out can be submitted from here. */
export function canSubmit(handout: Handout): boolean {
  return handout.mode === 'copy' && handout.handed_out && !!handout.folder;
}

/** "ai101/resnet:v3": a handed-out model or dataset as the SDK and CLI name it. */
export function materialRef(m: CourseMaterial): string {
  return `${m.project}/${m.name}${m.version === null ? '' : `:v${m.version}`}`;
}

/** What a submission brought along beside its files, or "" for nothing. */
export function extrasText(
  models: number,
  runs: number,
  trans: TranslationBundle
): string {
  const parts = [];
  if (models) {
    parts.push(trans._n('%1 model', '%1 models', models));
  }
  if (runs) {
    parts.push(trans._n('%1 run', '%1 runs', runs));
  }
  return parts.length ? trans.__('With it: %1', parts.join(', ')) : '';
}

/** The hand-out's state, as the panel shows it. */
export function statusText(
  handout: Handout,
  trans: TranslationBundle,
  locale?: string
): string {
  if (!handout.folder) {
    return trans.__("Read-only in the course's project");
  }
  if (!handout.handed_out) {
    return trans.__('Not in your space yet');
  }
  if (handout.mode === 'readonly') {
    return trans.__('Shared read-only');
  }
  const s = handout.submission;
  if (!s) {
    return trans.__('Not submitted yet');
  }
  const at = formatEpoch(s.at, locale);
  if (s.how === 'collect') {
    return trans.__('Collected at the deadline %1', at);
  }
  if (s.late) {
    return trans.__('Submitted late %1', at);
  }
  return trans._n(
    'Submitted %2 (%1 file)',
    'Submitted %2 (%1 files)',
    s.files,
    at
  );
}

/** Hand-outs by deadline (soonest first, no deadline last), then name. */
export function sortHandouts(handouts: Handout[]): Handout[] {
  return [...handouts].sort((a, b) => {
    const da = a.deadline ?? Infinity;
    const db = b.deadline ?? Infinity;
    if (da !== db) {
      return da < db ? -1 : 1;
    }
    return a.name.localeCompare(b.name);
  });
}

/** Courses by name. */
export function sortCourses(courses: Course[]): Course[] {
  return [...courses].sort((a, b) => a.name.localeCompare(b.name));
}

/** Whether the role sees the course page rather than hand-outs. */
export function isStaff(course: Course): boolean {
  return course.role === 'teacher' || course.role === 'assistant';
}
