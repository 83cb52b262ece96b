"""What the hub's services and the dev hub leave where others could read it: the access log of
cube-admin and the cube-lab service masks tokens in URLs (``?token=``, OAuth's ``code`` and
``state``); the dev hub's config (the driver's admin token), settings and log (the admin's
one-time password) are its owner's alone, 0600 whatever the umask, an older file's mode too."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import tornado.httpclient
import tornado.httpserver
import tornado.web
from tornado.testing import bind_unused_port

from cube_lab.hub import devhub
from cube_lab.hub.request_log import MASK, log_request, scrub


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("/services/cube-lab/api?token=abc123", f"/services/cube-lab/api?token={MASK}"),
        ("/oauth_callback?code=c0de&state=s7", f"/oauth_callback?code={MASK}&state={MASK}"),
        ("/x?api_key=k&page=2&Auth_Token=t", f"/x?api_key={MASK}&page=2&Auth_Token={MASK}"),
        ("/x?_xsrf=q&flag&q=token", f"/x?_xsrf={MASK}&flag&q=token"),  # values are not keys
        ("/plain/path", "/plain/path"),
        ("/x?", "/x?"),
    ],
)
def test_scrub_masks_secret_query_values_only(uri: str, expected: str) -> None:
    assert scrub(uri) == expected


class _Echo(tornado.web.RequestHandler):
    def get(self) -> None:
        self.set_status(int(self.get_argument("status", "200")))
        self.finish("ok")


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def access_log() -> Iterator[_Kept]:
    """tornado.access's records, on the logger itself (a Jupyter server in the same process
    may have stopped it propagating)."""
    logger, kept = logging.getLogger("tornado.access"), _Kept()
    before = (logger.level, logger.disabled)
    logger.addHandler(kept)
    logger.setLevel(logging.INFO)
    logger.disabled = False
    try:
        yield kept
    finally:
        logger.removeHandler(kept)
        logger.level, logger.disabled = before


async def test_a_service_logs_requests_with_their_tokens_masked(access_log: _Kept) -> None:
    app = tornado.web.Application([("/api", _Echo)], log_function=log_request)
    sock, port = bind_unused_port()
    server = tornado.httpserver.HTTPServer(app)
    server.add_sockets([sock])
    client = tornado.httpclient.AsyncHTTPClient()
    try:
        for status in (200, 403):
            url = f"http://127.0.0.1:{port}/api?token=s3cr3t&status={status}"
            await client.fetch(url, raise_error=False)
    finally:
        server.stop()
    lines = access_log.records
    assert [r.levelno for r in lines] == [logging.INFO, logging.WARNING]
    text = "\n".join(r.getMessage() for r in lines)
    assert "s3cr3t" not in text and f"token={MASK}" in text and "GET /api" in text


@pytest.fixture
def loose_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_the_dev_hubs_files_are_its_owners_alone(tmp_path: Path, loose_umask: None) -> None:
    (tmp_path / "jupyterhub_config.py").write_text("old")
    (tmp_path / "jupyterhub_config.py").chmod(0o644)  # written by an older version
    settings_file, config, token = devhub.write_files(tmp_path)
    assert token in config.read_text()
    for path in (settings_file, config):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_a_settings_file_with_the_database_password_warns_when_others_can_read_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from cube_lab.hub.settings import load

    file = tmp_path / "cube_hub.yaml"
    base = f"data_dir: {tmp_path / 'data'}\nadmin_users: [root]"
    file.write_text(f"{base}\ncube_db_url: postgresql://cube:pw@db/cube\n")
    file.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="cube-lab.hub"):
        load(file)
    assert [r.getMessage() for r in caplog.records] == [
        f"hub settings file {file} holds the password of cube_db_url and other accounts can "
        f"read it (mode 0644): run chmod 600 {file}"
    ]
    caplog.clear()
    file.chmod(0o600)
    load(file)
    file.write_text(f"{base}\ncube_db_url: sqlite:///{tmp_path}/x.db\n")
    file.chmod(0o644)  # no password in it: nothing to say
    load(file)
    assert caplog.records == []
