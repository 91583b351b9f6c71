"""Every shipped environment config loads, says what it is, and names the command that runs it."""

from pathlib import Path

import pytest

from jaxopt_rl.rewards.env_config import load_env_config

ENV_DIR = Path(__file__).resolve().parents[1] / "configs" / "env"
ENV_FILES = sorted(ENV_DIR.glob("*.yaml"))


def test_there_are_shipped_envs():
    assert len(ENV_FILES) >= 13


@pytest.mark.parametrize("path", ENV_FILES, ids=[p.stem for p in ENV_FILES])
def test_env_config_loads_and_documents_itself(path):
    env = load_env_config(path)
    assert env.name == path.stem, "the name inside the file must match the file name"
    assert env.description
    header = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    assert header, "each config starts with a comment saying what it is"
    text = "\n".join(header)
    assert "Paper:" in text and "seed 00" in text, "the header cites its paper row"
    run_lines = [line for line in header if line.startswith("# Run")]
    assert len(run_lines) == 1
    if env.kind == "execution":
        assert f"--env {path.stem}" in run_lines[0]
    else:
        assert f'load_env_config("{path.stem}")' in run_lines[0]
