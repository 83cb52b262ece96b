/// <reference types="node" />
/**
 * The lab loads `style/index.js` (package.json's styleModule), the wheel's CSS also through
 * `style/index.css`: a sheet missing from either leaves its panel unstyled in one of them.
 */
import * as fs from 'fs';
import * as path from 'path';

const STYLE = path.resolve(__dirname, '..', '..', 'style');

describe('style entry points', () => {
  const sheets = fs
    .readdirSync(STYLE)
    .filter(f => f.endsWith('.css') && f !== 'index.css');

  it('finds the sheets', () => {
    expect(sheets).toContain('base.css');
    expect(sheets).toContain('course.css');
  });

  it.each(sheets)('index.js and index.css both load %s', sheet => {
    const js = fs.readFileSync(path.join(STYLE, 'index.js'), 'utf-8');
    const css = fs.readFileSync(path.join(STYLE, 'index.css'), 'utf-8');
    expect(js).toContain(`import './${sheet}';`);
    expect(css).toContain(`@import url('${sheet}');`);
  });
});
