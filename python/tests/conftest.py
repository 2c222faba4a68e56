"""Shared fixtures: the lbsim binary (for comparisons with the command line) and the repository."""

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def root() -> pathlib.Path:
    return ROOT


@pytest.fixture(scope="session")
def cli():
    """Runs the `lbsim` binary (LBSIM_BIN, else target/release/lbsim, else on PATH) and returns
    (status, stdout, stderr)."""
    binary = os.environ.get("LBSIM_BIN") or str(ROOT / "target" / "release" / "lbsim")
    if not os.path.exists(binary):
        binary = shutil.which("lbsim")
    if binary is None:
        pytest.fail("no lbsim binary: build it (cargo build --release) or set LBSIM_BIN")

    def run(*argv: str, cwd=None):
        p = subprocess.run([binary, *argv], capture_output=True, text=True, cwd=cwd)
        return p.returncode, p.stdout, p.stderr

    return run
