/**
 * A failed training job: what its log says went wrong.
 */
import { failureReason, RankedLog } from '../panels/training/logic';

function linesOf(text: string) {
  const log = new RankedLog();
  log.append(text);
  return log.lines;
}

describe('failureReason', () => {
  it("finds a traceback's last line", () => {
    const log = [
      'step=1 loss=0.5',
      'Traceback (most recent call last):',
      '  File "train.py", line 3, in <module>',
      "    raise ValueError('bad')",
      'ValueError: the data has no column "label"',
      ''
    ].join('\n');
    expect(failureReason(linesOf(log))).toBe(
      'ValueError: the data has no column "label"'
    );
  });

  it("reads python -m's own error when the launcher module is missing", () => {
    const log =
      "/venv/bin/python: Error while finding module specification for 'torch.distributed.run' (ModuleNotFoundError: No module named 'torch')\n";
    expect(failureReason(linesOf(log))).toBe(
      "ModuleNotFoundError: No module named 'torch'"
    );
  });

  it("prefers a rank's error over torchrun's child-failed summary", () => {
    const log = [
      '[rank1]: Traceback (most recent call last):',
      '[rank1]: RuntimeError: CUDA out of memory',
      'torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ',
      '============================================================',
      'train.py FAILED'
    ].join('\n');
    expect(failureReason(linesOf(log))).toBe(
      'RuntimeError: CUDA out of memory'
    );
    expect(
      failureReason(
        linesOf(
          'torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n'
        )
      )
    ).toBe('torch.distributed.elastic.multiprocessing.errors.ChildFailedError');
  });

  it('names nothing when the log names no error', () => {
    expect(failureReason(linesOf('step=1 loss=0.2\nbye\n'))).toBeNull();
    expect(
      failureReason(linesOf('counting ValueError cases: 3 so far\n'))
    ).toBeNull();
    expect(failureReason([])).toBeNull();
  });
});
