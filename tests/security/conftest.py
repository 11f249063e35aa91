"""Fixtures of the security tests."""

from __future__ import annotations

import io
import secrets
from contextlib import redirect_stderr, redirect_stdout

import pytest

from lib import cli


class Secrets:
    """Credentials for every setting that takes them, each unique so a leak is unmistakable."""

    def __init__(self) -> None:
        tag = secrets.token_hex(6)
        self.redis_user, self.redis_pw = f"sec_{tag}", f"redisPW{tag}"
        self.db_user, self.db_pw = f"sec_{tag}", f"dbPW{tag}"
        self.proxy_pw, self.proxy_token = f"proxyPW{tag}", f"proxyTOKEN{tag}"
        self.hook_pw, self.ding_token = f"hookPW{tag}", f"dingTOKEN{tag}"
        self.slack_token = f"slackTOKEN{tag}0123456789"
        self.amqp_pw, self.api_pw = f"amqpPW{tag}", f"apiPW{tag}"

    def all(self) -> list[str]:
        return [self.redis_pw, self.db_pw, self.proxy_pw, self.proxy_token, self.hook_pw, self.ding_token,
                self.slack_token, self.amqp_pw, self.api_pw]

    def assert_absent(self, *texts: str) -> None:
        for text in texts:
            leaked = [s for s in self.all() if s in text]
            assert not leaked, f"secret(s) {leaked} leaked into:\n{text[-3000:]}"


@pytest.fixture
def creds():
    return Secrets()


def call_cli(*argv: str) -> tuple[int, str, str]:
    """``animetop ARGV`` in this process (argv can carry what a real command line cannot, e.g. NUL)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()
