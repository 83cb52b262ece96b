/**
 * The course plugin: on the hub, a "Course" side panel where a student sees
 * the hand-outs of their courses and submits them. Outside the hub nothing.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ITranslator } from '@jupyterlab/translation';

import { myCourses, MyCourses } from '../../api';
import { CATEGORY, ICubeSidebar } from '../../tokens';
import { courseIcon } from './icon';
import { CoursePanel } from './panel';

export { CoursePanel } from './panel';
export * as courseLogic from './logic';

export const COURSE_PANEL_ID = 'cube-lab-course-panel';
const COURSE_PANEL_RANK = 690;

export namespace CourseCommandIDs {
  export const show = 'cube-lab:show-courses';
  /** Submit a hand-out; args: course, handout. */
  export const submit = 'cube-lab:submit-handout';
}

/** Add the panel and commands when `data` says this is the hub. */
export function setupCourses(
  app: JupyterFrontEnd,
  sidebar: ICubeSidebar,
  translator: ITranslator,
  palette: ICommandPalette | null,
  data: MyCourses
): CoursePanel | null {
  if (!data || data.hub !== true) {
    return null;
  }
  const trans = translator.load('cube_lab');
  const { commands } = app;
  const panel = new CoursePanel({
    translator,
    initial: data,
    commands: (id, args) => commands.execute(id, args)
  });
  panel.id = 'cube-lab-course';
  sidebar.addPanel(panel, {
    id: COURSE_PANEL_ID,
    rank: COURSE_PANEL_RANK,
    icon: courseIcon,
    label: trans.__('Course'),
    caption: trans.__('Your courses and hand-outs')
  });
  commands.addCommand(CourseCommandIDs.show, {
    label: trans.__('Courses'),
    caption: trans.__('Your courses and hand-outs'),
    icon: args => (args.isPalette ? undefined : courseIcon),
    execute: () => sidebar.reveal(panel)
  });
  commands.addCommand(CourseCommandIDs.submit, {
    label: trans.__('Submit a Hand-out'),
    caption: trans.__('Copy a hand-out folder to the teacher'),
    execute: args => {
      sidebar.reveal(panel);
      return panel.submit(
        String(args.course ?? ''),
        String(args.handout ?? '')
      );
    }
  });
  if (palette) {
    palette.addItem({
      command: CourseCommandIDs.show,
      args: { isPalette: true },
      category: CATEGORY
    });
  }
  return panel;
}

export const coursePlugin: JupyterFrontEndPlugin<void> = {
  id: 'cube-lab:course',
  description:
    'cube-lab courses: on the hub, the hand-outs of your courses and Submit.',
  autoStart: true,
  requires: [ICubeSidebar, ITranslator],
  optional: [ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    sidebar: ICubeSidebar,
    translator: ITranslator,
    palette: ICommandPalette | null
  ) => {
    void myCourses().then(
      data => {
        setupCourses(app, sidebar, translator, palette, data);
      },
      err => {
        console.warn('cube-lab: cannot read courses/mine', err);
      }
    );
  }
};
