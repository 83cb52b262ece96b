/**
 * Courses on the hub: the hand-outs of this user's courses, and submitting
 * one (`courses/mine`, `courses/{course}/handouts/{handout}/submit`).
 */
import { encodePath, requestAPI } from './request';

export type CourseRole = 'teacher' | 'assistant' | 'student';

export interface HandoutSubmission {
  /** Epoch seconds (UTC). */
  at: number;
  late: boolean;
  how: 'submit' | 'collect';
  files: number;
  /** Models the folder made, copied to the teacher with it. */
  models?: number;
  /** Pipeline runs, training jobs and tuning experiments of the folder. */
  runs?: number;
}

/** A model or dataset version handed out: read-only in the course's project. */
export interface CourseMaterial {
  ref: string;
  project: string;
  name: string;
  /** null: a dataset as registered (no exported version). */
  version: number | null;
}

export interface Handout {
  name: string;
  mode: 'copy' | 'readonly';
  /** Epoch seconds (UTC), or null: no deadline. */
  deadline: number | null;
  /** Relative to the JupyterLab root; null: models and datasets only. */
  folder: string | null;
  models?: CourseMaterial[];
  datasets?: CourseMaterial[];
  handed_out: boolean;
  submission: HandoutSubmission | null;
}

export interface Course {
  name: string;
  role: CourseRole;
  /** Absolute path of the hub's course page. */
  page: string;
  handouts: Handout[];
}

export interface MyCourses {
  hub: boolean;
  user: string;
  courses: Course[];
}

export interface MaterialTarget {
  project: string;
  name: string;
  version: number;
}

export interface SubmitResult {
  student: string;
  at: number;
  late: boolean;
  how: string;
  files: { path: string; size: number; sha256: string; mtime: number }[];
  models?: { from: MaterialTarget; to: MaterialTarget }[];
  runs?: { kind: string; id: string; name: string | null; status: string }[];
  [key: string]: unknown;
}

/** This user's courses and their hand-outs (`hub: false` outside the hub). */
export function myCourses(): Promise<MyCourses> {
  return requestAPI<MyCourses>('courses/mine');
}

/** Submit a hand-out: its folder is copied to the teacher. */
export function submitHandout(
  course: string,
  handout: string
): Promise<SubmitResult> {
  return requestAPI<SubmitResult>(
    `courses/${encodePath(course)}/handouts/${encodePath(handout)}/submit`,
    { method: 'POST' }
  );
}
