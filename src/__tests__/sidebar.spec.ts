/**
 * The layout: one left-sidebar panel per capability, icons that follow the
 * theme, and main-area tabs titled by what they show.
 */
import { WidgetTracker } from '@jupyterlab/apputils';
import { Toolbar, ToolbarButton } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import {
  cubeIcon,
  deploymentIcon,
  labelingIcon,
  modelsIcon,
  pipelineIcon,
  runsIcon,
  trainingIcon,
  tuningIcon
} from '../icons';
import { modelTabLabel } from '../panels/models';
import { openForm } from '../panels/shell';
import { formFromArgs, jobTabLabel } from '../panels/training';
import { experimentFormFromArgs } from '../panels/tuning';
import { CubeSettings, CubeSidebar } from '../sidebar';
import { PanelRanks } from '../tokens';

const trans = {
  __: (msg: string, ...args: any[]) =>
    msg.replace(/%(\d+)/g, (_, i) => String(args[Number(i) - 1]))
};

function fakeShell() {
  const added: { widget: Widget; area: string; rank: number; type: string }[] =
    [];
  const activated: string[] = [];
  return {
    added,
    activated,
    shell: {
      add: (
        widget: Widget,
        area: 'left',
        options: { rank: number; type: string }
      ) => {
        added.push({ widget, area, ...options });
      },
      activateById: (id: string) => {
        activated.push(id);
      }
    }
  };
}

class Section extends Widget {
  constructor(label: string) {
    super();
    this.title.label = label;
    this.title.caption = `${label} caption`;
    this.toolbar.addItem('refresh', new ToolbarButton({ label: 'Refresh' }));
  }
  readonly toolbar = new Toolbar();
}

describe('CubeSidebar', () => {
  it('puts each capability in a left panel of its own, with its icon and rank', () => {
    const { shell, added } = fakeShell();
    const restored: [Widget, string][] = [];
    const sidebar = new CubeSidebar({
      settings: new CubeSettings(),
      shell,
      restorer: {
        add: (w: Widget, name: string) => restored.push([w, name])
      } as any
    });
    const models = new Section('Models');
    models.id = 'cube-lab-models';
    const training = new Section('Training');
    training.id = 'cube-lab-training';
    const a = sidebar.addPanel(models, {
      id: 'cube-lab-models-panel',
      rank: PanelRanks.models,
      icon: modelsIcon
    });
    const b = sidebar.addPanel(training, {
      id: 'cube-lab-training-panel',
      rank: PanelRanks.training,
      icon: trainingIcon,
      label: 'Training',
      caption: 'Training jobs'
    });

    expect(added.map(x => [x.widget.id, x.area, x.rank])).toEqual([
      ['cube-lab-models-panel', 'left', 600],
      ['cube-lab-training-panel', 'left', 620]
    ]);
    // Every panel is restored by its own stable id.
    expect(restored.map(([w, name]) => [w.id, name])).toEqual([
      ['cube-lab-models-panel', 'cube-lab-models-panel'],
      ['cube-lab-training-panel', 'cube-lab-training-panel']
    ]);
    expect(a.title.icon).toBe(modelsIcon);
    expect(a.title.caption).toBe('Models caption');
    expect(b.title.caption).toBe('Training jobs');
    // The header names the panel and holds the section's toolbar.
    expect(a.node.querySelector('.cube-SidePanel-title')!.textContent).toBe(
      'Models'
    );
    const header = a.node.querySelector('.jp-SidePanel-header')!;
    expect(header.contains(models.toolbar.node)).toBe(true);
    // The section keeps its id (tests and styles use it), alone in the panel.
    expect(a.node.querySelector('#cube-lab-models')).toBe(models.node);
    expect(a.widgets).toEqual([models]);
    expect(a.node.querySelectorAll('.lm-AccordionPanel')).toHaveLength(0);
  });

  it('reveals the panel of a section, and refuses a section twice', () => {
    const { shell, activated } = fakeShell();
    const sidebar = new CubeSidebar({ settings: new CubeSettings(), shell });
    const runs = new Section('Pipeline runs');
    const labeling = new Section('Labeling');
    sidebar.addPanel(runs, {
      id: 'cube-lab-pipeline-runs-panel',
      rank: PanelRanks.pipelineRuns,
      icon: runsIcon
    });
    sidebar.addPanel(labeling, {
      id: 'cube-lab-labeling-panel',
      rank: PanelRanks.labeling,
      icon: labelingIcon
    });
    sidebar.reveal(labeling);
    sidebar.reveal(runs);
    sidebar.reveal(new Widget()); // not added: nothing to show
    expect(activated).toEqual([
      'cube-lab-labeling-panel',
      'cube-lab-pipeline-runs-panel'
    ]);
    expect(sidebar.panelOf(runs)!.id).toBe('cube-lab-pipeline-runs-panel');
    expect(() =>
      sidebar.addPanel(runs, {
        id: 'again',
        rank: 1,
        icon: runsIcon
      })
    ).toThrow(/already/);
  });

  it('orders the panels Models, Pipeline runs, Training, Tuning, Deployments, Labeling', () => {
    const ranks = [
      PanelRanks.models,
      PanelRanks.pipelineRuns,
      PanelRanks.training,
      PanelRanks.tuning,
      PanelRanks.deployments,
      PanelRanks.labeling
    ];
    expect([...ranks].sort((x, y) => x - y)).toEqual(ranks);
    expect(new Set(ranks).size).toBe(ranks.length);
  });
});

describe('icons', () => {
  const icons = {
    cubeIcon,
    pipelineIcon,
    modelsIcon,
    runsIcon,
    trainingIcon,
    tuningIcon,
    deploymentIcon,
    labelingIcon
  };

  it.each(Object.entries(icons))(
    '%s follows the theme (jp-icon3, one grey, no fill on strokes)',
    (_, icon) => {
      const svg = new DOMParser().parseFromString(
        icon.svgstr,
        'image/svg+xml'
      ).documentElement;
      expect(svg.tagName).toBe('svg');
      expect(svg.getAttribute('viewBox')).toMatch(/^0 0 (16 16|24 24)$/);
      const painted = Array.from(svg.querySelectorAll('*')).filter(
        el => el.hasAttribute('fill') || el.hasAttribute('stroke')
      );
      expect(painted.length).toBeGreaterThan(0);
      for (const el of painted) {
        // The theme recolours what carries jp-icon3 (or sits in a group that does).
        expect(el.closest('.jp-icon3')).not.toBeNull();
        for (const attr of ['fill', 'stroke']) {
          const value = el.getAttribute(attr);
          if (value !== null) {
            expect(value).toBe('#616161');
          }
        }
        // `.jp-icon3[fill]` would fill a stroked line: strokes carry no fill.
        if (el.hasAttribute('stroke')) {
          expect(el.hasAttribute('fill')).toBe(false);
        }
      }
      expect(new Set(Object.values(icons).map(i => i.name)).size).toBe(
        Object.keys(icons).length
      );
    }
  );
});

describe('tab titles', () => {
  it('names a training job tab after the job, else its script', () => {
    expect(jobTabLabel({ name: 'ddp-linear', command: 'torchrun x.py' })).toBe(
      'ddp-linear'
    );
    expect(
      jobTabLabel({
        name: '',
        command: 'torchrun --nproc-per-node 2 src/train_ddp.py --steps 3'
      })
    ).toBe('train_ddp.py');
    expect(jobTabLabel({ name: '  ' })).toBe('');
  });

  it('names a model tab after what it shows', () => {
    expect(modelTabLabel({ kind: 'list' }, trans)).toBe('Models');
    expect(
      modelTabLabel({ kind: 'model', project: 'p', name: 'iris' }, trans)
    ).toBe('iris');
    expect(
      modelTabLabel(
        { kind: 'version', project: 'p', name: 'iris', version: 3 },
        trans
      )
    ).toBe('iris v3');
    expect(
      modelTabLabel(
        { kind: 'compare', project: 'p', name: 'iris', versions: [1, 2] },
        trans
      )
    ).toBe('Compare iris');
  });
});

describe('form tabs restored from command args', () => {
  it('keeps the launch form fields that are strings, and known frameworks', () => {
    expect(
      formFromArgs({
        script: 'a/train.py',
        nproc: '2',
        workers: 3 as any,
        framework: 'deepspeed',
        bogus: 'x'
      })
    ).toEqual({ script: 'a/train.py', nproc: '2', framework: 'deepspeed' });
    expect(formFromArgs({ framework: 'caffe' })).toEqual({});
  });

  it('keeps the experiment form fields that are strings, and a valid goal', () => {
    expect(
      experimentFormFromArgs({ name: 'q', maxTrials: '6', mode: 'minimize' })
    ).toEqual({ name: 'q', maxTrials: '6', mode: 'minimize' });
    expect(experimentFormFromArgs({ mode: 'sideways', folder: 7 })).toEqual({});
  });
});

describe('openForm', () => {
  it('finds the form tab in the shell and drops one the layout left out', async () => {
    const tracker = new WidgetTracker<Widget>({ namespace: 'test-form' });
    expect(openForm(tracker)).toBeNull();
    const stale = new Widget();
    await tracker.add(stale);
    // A restored tab the saved layout did not place: never attached.
    expect(openForm(tracker)).toBeNull();
    expect(stale.isDisposed).toBe(true);
    const shown = new Widget();
    Widget.attach(shown, document.body);
    await tracker.add(shown);
    expect(openForm(tracker)).toBe(shown);
    expect(shown.isDisposed).toBe(false);
    Widget.detach(shown);
  });
});
