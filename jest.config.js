const jestJupyterLab = require('@jupyterlab/testing/lib/jest-config');

const esModules = [
  '@codemirror',
  '@microsoft',
  '@jupyter/react-components',
  '@jupyter/web-components',
  '@jupyter/ydoc',
  '@jupyterlab/',
  '@lumino/',
  'exenv-es6',
  'lib0',
  'nanoid',
  'vscode-ws-jsonrpc',
  'y-protocols',
  'y-websocket',
  'yjs'
].join('|');

const baseConfig = jestJupyterLab(__dirname);

module.exports = {
  ...baseConfig,
  automock: false,
  roots: ['<rootDir>/src'],
  modulePathIgnorePatterns: [
    '<rootDir>/cube_lab',
    '<rootDir>/.venv',
    '<rootDir>/ui-tests',
    '<rootDir>/lib'
  ],
  collectCoverageFrom: [
    'src/**/*.{ts,tsx}',
    '!src/**/*.d.ts',
    '!src/**/.ipynb_checkpoints/*'
  ],
  coverageReporters: ['lcov', 'text-summary'],
  testRegex: 'src/.*/.*.spec.ts[x]?$',
  transform: {
    ...baseConfig.transform,
    '\\.tsx?$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }]
  },
  transformIgnorePatterns: [`/node_modules/(?!${esModules}).+`]
};
