/**
 * Playwright configuration for the cube-lab Galata tests.
 *
 * Uses a system Chromium (CHROMIUM_PATH, default /usr/bin/chromium) when one
 * is there, so no browser download is needed.
 */
const fs = require('fs');
const os = require('os');
const path = require('path');

const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

const chromium = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const launchOptions = fs.existsSync(chromium)
  ? {
      executablePath: chromium,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync'
      ]
    }
  : {};

// One temporary folder per run for the server, its kernels and cube-lab.
const tmp =
  process.env.CUBE_LAB_UI_TMP ||
  fs.mkdtempSync(path.join(os.tmpdir(), 'cube-lab-ui-'));
process.env.CUBE_LAB_UI_TMP = tmp;
const env = {
  CUBE_LAB_UI_TMP: tmp,
  JUPYTER_CONFIG_DIR: path.join(tmp, 'config'),
  JUPYTER_DATA_DIR: path.join(tmp, 'data'),
  JUPYTER_RUNTIME_DIR: path.join(tmp, 'runtime'),
  IPYTHONDIR: path.join(tmp, 'ipython'),
  MLFLOW_DISABLE_TELEMETRY: 'true',
  // the serving warm host a test deploy starts leaves soon after the run
  CUBE_LAB_SERVING_WARM_IDLE_S: '30'
};

// `make galata` runs shards of the specs side by side (--shard=i/n), each against a
// JupyterLab of its own on its own port, with its own temporary folder and store.
const port = process.env.CUBE_LAB_UI_PORT || '8888';
const labURL = `http://localhost:${port}`;
env.CUBE_LAB_UI_PORT = port;

module.exports = {
  ...baseConfig,
  // The hub's admin-page test runs against a hub, with its own config (playwright.hub.config.js).
  testIgnore: ['**/hub-*.spec.ts'],
  // A line per test and every failure with its error, in CI too (a CI log is read, not
  // annotated). Never open (and serve) the HTML report: `make test` must not hang.
  reporter: [
    ['list'],
    ['html', { open: 'never', outputFolder: `playwright-report/${port}` }]
  ],
  // a shard's results and traces apart from the other shards' (each run empties its own)
  outputDir: `test-results/${port}`,
  workers: 1,
  retries: process.env.CI ? 1 : 0,
  use: {
    ...baseConfig.use,
    baseURL: labURL,
    // The smaller of the screens the layout is made for (1280x720, 1440x900).
    viewport: { width: 1280, height: 720 },
    // Video needs Playwright's own ffmpeg download.
    video: 'off',
    trace: 'retain-on-failure',
    launchOptions
  },
  webServer: {
    command: 'jlpm start',
    url: `${labURL}/lab`,
    timeout: 120 * 1000,
    // The tests register models: only reuse a running server when asked to.
    reuseExistingServer: process.env.CUBE_LAB_UI_REUSE_SERVER === '1',
    env: { ...process.env, ...env }
  }
};
