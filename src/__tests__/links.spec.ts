import { inLabLink, LINK_PARAM, resolveLink, withoutLink } from '../links';

describe('deep links (lab?cube-open=...)', () => {
  it('opens a training job, an experiment, a run by their ids', () => {
    expect(resolveLink(`?${LINK_PARAM}=job&id=j-1`)).toEqual({
      command: 'cube-lab:open-training-job',
      args: { id: 'j-1' }
    });
    expect(resolveLink('?cube-open=experiment&id=e%2F2')).toEqual({
      command: 'cube-lab:open-tuning-experiment',
      args: { id: 'e/2' }
    });
    expect(
      resolveLink('?cube-open=run&id=r9&path=flows%2Fetl%20v2.pipeline')
    ).toEqual({
      command: 'cube-lab:open-pipeline-run',
      args: { runId: 'r9', path: 'flows/etl v2.pipeline' }
    });
  });

  it('opens a model, a version of it, a deployment, a labeling project', () => {
    expect(resolveLink('?cube-open=model&project=p&name=iris')).toEqual({
      command: 'cube-lab:open-model-tab',
      args: { project: 'p', name: 'iris' }
    });
    expect(
      resolveLink('?cube-open=model&project=p&name=iris&version=3')?.args
    ).toEqual({ project: 'p', name: 'iris', version: 3 });
    expect(
      resolveLink('?cube-open=model&project=p&name=iris&version=x')?.args
    ).toEqual({ project: 'p', name: 'iris' });
    expect(
      resolveLink('?cube-open=deployment&project=%E8%AF%BE&name=svc')
    ).toEqual({
      command: 'cube-lab:open-deployment',
      args: { project: '课', name: 'svc' }
    });
    expect(
      resolveLink('?cube-open=labeling&project=p&name=cats')?.command
    ).toBe('cube-lab:open-labeling-project');
    expect(resolveLink('?cube-open=resources&project=team-a')).toEqual({
      command: 'cube-lab:show-resources',
      args: { project: 'team-a' }
    });
  });

  it('ignores an unknown kind and a link that lacks what its kind needs', () => {
    expect(resolveLink('')).toBeNull();
    expect(resolveLink('?cube-open=nothing&id=1')).toBeNull();
    expect(resolveLink('?cube-open=job')).toBeNull();
    expect(resolveLink('?cube-open=run&id=r9')).toBeNull();
    expect(resolveLink('?cube-open=deployment&name=svc')).toBeNull();
  });

  it('leaves the address without the link and keeps other parameters', () => {
    expect(withoutLink('/lab', '?cube-open=job&id=j-1')).toBe('/lab');
    expect(
      withoutLink('/lab/tree/a.ipynb', '?reset&cube-open=job&id=1', '#x')
    ).toBe('/lab/tree/a.ipynb?reset=#x');
    expect(
      withoutLink('/lab', '?cube-open=model&project=p&name=n&version=2&k=v')
    ).toBe('/lab?k=v');
  });

  it('follows a link in place only when it is to this lab', () => {
    const here = 'http://127.0.0.1:8000/user/alice/lab/tree/a.ipynb';
    const base = '/user/alice/';
    expect(inLabLink('/user/alice/lab?cube-open=job&id=7', here, base)).toBe(
      '/user/alice/lab?cube-open=job&id=7'
    );
    expect(inLabLink('/user/bob/lab?cube-open=job&id=7', here, base)).toBe(
      null
    );
    expect(
      inLabLink(
        'http://elsewhere:8000/user/alice/lab?cube-open=job&id=7',
        here,
        base
      )
    ).toBeNull();
    expect(inLabLink('/user/alice/lab?x=1', here, base)).toBeNull();
    expect(inLabLink('/user/alice/lab?cube-open=job', here, base)).toBeNull();
  });
});
