/**
 * Playwright configuration for the multi-user hub's UI test (tests/hub-*.spec.ts): a
 * throwaway cube-lab hub (JupyterHub + configurable-http-proxy + the cube-admin service) in a
 * temporary folder, not JupyterLab. Run:
 *
 *   cd ui-tests && jlpm playwright test -c playwright.hub.config.js
 *
 * The default config (playwright.config.js) skips the hub specs.
 */
const fs = require('fs');
const os = require('os');
const path = require('path');

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

const root =
  process.env.CUBE_HUB_UI_ROOT ||
  fs.mkdtempSync(path.join(os.tmpdir(), 'cube-hub-ui-'));
process.env.CUBE_HUB_UI_ROOT = root;
const port = process.env.CUBE_HUB_UI_PORT || '8765';
const url = `http://127.0.0.1:${port}`;
process.env.CUBE_HUB_UI_URL = url;
const python =
  process.env.CUBE_HUB_PYTHON ||
  path.resolve(__dirname, '..', '.venv', 'bin', 'python');

module.exports = {
  testDir: 'tests',
  testMatch: 'hub-*.spec.ts',
  timeout: 120 * 1000,
  reporter: [['list']],
  workers: 1,
  retries: 0,
  use: {
    baseURL: url,
    viewport: { width: 1280, height: 900 },
    video: 'off',
    trace: 'retain-on-failure',
    launchOptions
  },
  webServer: {
    command: `${python} -m cube_lab.hub.devhub --root ${root} --port ${port}`,
    // the admin service answers (a redirect to the login) once hub, proxy and service are up
    url: `${url}/services/cube-admin/`,
    timeout: 180 * 1000,
    reuseExistingServer: false,
    env: { ...process.env, CUBE_HUB_UI_ROOT: root }
  }
};
