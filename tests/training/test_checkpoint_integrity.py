"""Checkpoints that verify themselves: every step folder is sealed with a manifest of
its files' SHA-256 after Orbax's commit, and every read checks it first.

Each test damages a private copy of one run folder holding steps 1 and 2 of a tiny state (one
fake CPU device): flipped bytes, a deleted or truncated file, random bytes over every file, no
manifest, a newer step folder that is empty, foreign or half-written. Expected digests come from
`hashlib` over the files on disk, not from the code under test."""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxopt_rl.config import ConfigError, from_dict, to_dict
from jaxopt_rl.manifest import MANIFEST_FILE, CheckpointError
from jaxopt_rl.training.checkpoint_folders import (
    CheckpointWarning,
    find_resume,
    newest_checkpoint,
    resume_message,
)
from jaxopt_rl.training.checkpoints import Checkpointer
from jaxopt_rl.training.config import CheckpointConfig, MeshConfig, TrainConfig
from jaxopt_rl.training.mesh import mesh_from_config
from jaxopt_rl.training.state import abstract_train_state, init_train_state
from tests.training.helpers import tiny_train_config

ROOT = Path(__file__).resolve().parents[2]


def leaves(state):
    return [np.asarray(x) for x in jax.tree.leaves(state)]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(run folder, config, {step: leaves}) with steps 1 and 2 saved asynchronously."""
    config = tiny_train_config()
    mesh = mesh_from_config(MeshConfig(1, 1, 1), devices=jax.devices()[:1])
    _, state, _, _ = init_train_state(config, mesh)
    run = tmp_path_factory.mktemp("integrity") / "run"
    ckpt = Checkpointer(run, CheckpointConfig())
    values = {}
    for step in (1, 2):
        stepped = state.replace(step=state.step + step,
                                params=jax.tree.map(lambda x, s=step: x + s, state.params))
        ckpt.save(stepped, data={"next_index": step}, config=to_dict(config))
        values[step] = leaves(stepped)
    ckpt.close()
    return run, config, values


@pytest.fixture
def run(saved, tmp_path):
    """A fresh copy of the saved run folder for one test to damage."""
    return Path(shutil.copytree(saved[0], tmp_path / "run"))


def step_dir(run: Path, step: int) -> Path:
    return (run / "checkpoints" / str(step)).absolute()


def data_files(folder: Path) -> list[Path]:
    """The tensor data files Orbax wrote for the state item (OCDBT ``d/`` files)."""
    return sorted(p for p in (folder / "state").rglob("*") if p.is_file() and p.parent.name == "d")


def restore(run: Path, config, step: int | None = None):
    mesh = mesh_from_config(MeshConfig(1, 1, 1), devices=jax.devices()[:1])
    _, target, _, _ = abstract_train_state(config, mesh)
    ckpt = Checkpointer(run, CheckpointConfig())
    try:
        return ckpt.restore(target, step)
    finally:
        ckpt.close()


def assert_refused(err: pytest.ExceptionInfo, bad: Path, item: str, intact: Path | None):
    """One line naming the checkpoint, its first bad item and the newest intact checkpoint."""
    message = str(err.value)
    assert "\n" not in message
    assert f"{bad} failed verification: {item}" in message, message
    if intact is not None:
        assert f"newest intact checkpoint is {intact}" in message, message


# ----------------------------------------------------------------------------- the seal


@pytest.mark.parametrize("async_save", [True, False])
def test_every_file_is_sealed_with_its_size_and_sha256_after_the_commit(tmp_path, async_save):
    config = tiny_train_config()
    mesh = mesh_from_config(MeshConfig(1, 1, 1), devices=jax.devices()[:1])
    _, state, _, _ = init_train_state(config, mesh)
    ckpt = Checkpointer(tmp_path, CheckpointConfig(async_save=async_save))
    ckpt.save(state.replace(step=state.step + 3), data={}, config=to_dict(config))
    ckpt.wait()
    folder = step_dir(tmp_path, 3)
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    on_disk = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                     if p.is_file() and p.name != MANIFEST_FILE)
    assert sorted(manifest["files"]) == on_disk
    # Orbax's commit marker is among them: the seal came after the commit
    assert "commit_success.txt" in manifest["files"] and any(
        name.startswith("state/") for name in manifest["files"])
    for name, entry in manifest["files"].items():
        data = (folder / name).read_bytes()
        assert entry == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    ckpt.close()


def test_an_intact_run_resumes_from_its_newest_checkpoint_silently(run, saved):
    with warnings.catch_warnings():
        warnings.simplefilter("error", CheckpointWarning)
        resume = find_resume(run)
        restored = restore(run, saved[1], resume.step)
    assert resume == (2, step_dir(run, 2), None)
    assert restored.data == {"next_index": 2}
    for got, want in zip(leaves(restored.state), saved[2][2], strict=True):
        np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------- damaged checkpoints


def flip_middle(path: Path, count: int = 64) -> None:
    data = bytearray(path.read_bytes())
    start = max(0, len(data) // 2 - count // 2)
    data[start:start + count] = bytes(b ^ 0xFF for b in data[start:start + count])
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["flip", "delete", "truncate"])
def test_a_damaged_checkpoint_is_refused_naming_its_first_bad_file_and_the_intact_one(
        run, damage):
    bad = step_dir(run, 2)
    files = data_files(bad)
    assert files
    if damage == "flip":  # the repro: 64 bytes flipped in the middle of each data file
        for file in files:
            flip_middle(file)
    elif damage == "delete":
        files[0].unlink()
    else:
        files[-1].write_bytes(files[-1].read_bytes()[:-7])
    first = {"flip": files[0], "delete": files[0], "truncate": files[-1]}[damage]
    with pytest.raises(CheckpointError) as err:
        find_resume(run)
    assert_refused(err, bad, first.relative_to(bad).as_posix(), step_dir(run, 1))
    assert {"flip": "SHA-256", "delete": "is missing", "truncate": "bytes"}[damage] in str(
        err.value)
    assert "on_corrupt=previous" in str(err.value)
    assert bad.is_dir()  # a refusal moves nothing
    # an explicit restore of it is refused the same way, before Orbax reads anything
    with pytest.raises(CheckpointError) as err:
        restore(run, tiny_train_config(), 2)
    assert_refused(err, bad, first.relative_to(bad).as_posix(), step_dir(run, 1))


def test_random_bytes_over_every_file_give_the_one_line_refusal(run):
    bad = step_dir(run, 2)
    rng = np.random.default_rng(33)
    for file in (p for p in bad.rglob("*") if p.is_file()):
        file.write_bytes(rng.integers(0, 256, file.stat().st_size, np.uint8).tobytes())
    with pytest.raises(CheckpointError) as err:
        find_resume(run)
    assert_refused(err, bad, MANIFEST_FILE, step_dir(run, 1))
    assert "utf-8" not in str(err.value).split("failed verification")[0]


def test_on_corrupt_previous_resumes_from_the_newest_intact_one_and_says_why(run, saved):
    bad = step_dir(run, 2)
    flip_middle(data_files(bad)[0])
    with pytest.warns(CheckpointWarning, match=r"checkpoints/2 failed verification.*moved to"):
        resume = find_resume(run, on_corrupt="previous")
    assert resume.step == 1 and resume.path == step_dir(run, 1)
    line = resume_message(*resume)
    assert line.startswith(f"resumed from step 1 of {step_dir(run, 1)} (step 2 failed "
                           "verification: state/")
    # passed over: out of checkpoints/, where the run writes step 2 again, and kept for a look
    assert not bad.exists() and (run / "checkpoints.rejected" / "2").is_dir()
    restored = restore(run, saved[1], resume.step)
    for got, want in zip(leaves(restored.state), saved[2][1], strict=True):
        np.testing.assert_array_equal(got, want)


def test_no_intact_checkpoint_left_is_refused_whatever_on_corrupt_says(run):
    for step in (1, 2):
        (step_dir(run, step) / "config" / "metadata").write_text("{}")
    for on_corrupt in ("fail", "previous"):
        with pytest.raises(CheckpointError, match="no intact checkpoint is left") as err:
            find_resume(run, on_corrupt=on_corrupt)
        assert_refused(err, step_dir(run, 2), "config/metadata", None)


def test_a_checkpoint_without_a_manifest_is_read_with_a_warning(run, saved):
    (step_dir(run, 2) / MANIFEST_FILE).unlink()  # as written before checkpoints carried one
    with pytest.warns(CheckpointWarning, match=r"checkpoints/2 has no manifest"):
        resume = find_resume(run)
    assert resume == (2, step_dir(run, 2), None)
    restored = restore(run, saved[1], 2)
    for got, want in zip(leaves(restored.state), saved[2][2], strict=True):
        np.testing.assert_array_equal(got, want)


def test_an_unsealed_checkpoint_that_cannot_be_decoded_fails_in_one_line_naming_it(run):
    bad = step_dir(run, 2)
    (bad / MANIFEST_FILE).unlink()
    (bad / "config" / "metadata").write_bytes(bytes(range(128, 256)))  # not UTF-8
    with pytest.warns(CheckpointWarning), pytest.raises(CheckpointError) as err:
        Checkpointer(run, CheckpointConfig()).saved_json("config", 2)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{bad} (no manifest, read unverified)")


# ------------------------------------------------------------ folders that are not checkpoints


def make_foreign(run: Path, kind: str) -> Path:
    folder = step_dir(run, 7)
    if kind == "empty":
        folder.mkdir()
    elif kind == "foreign":
        folder.mkdir()
        (folder / "notes.txt").write_text("not a checkpoint\n")
    else:  # half-written copies of step 2: no commit marker, or no config item
        shutil.copytree(step_dir(run, 2), folder)
        (folder / MANIFEST_FILE).unlink()  # the copy had not got that far
        if kind == "no commit marker":
            (folder / "commit_success.txt").unlink()
        else:
            shutil.rmtree(folder / "config")
    return folder


@pytest.mark.parametrize("kind", ["empty", "foreign", "no commit marker", "no config item"])
def test_a_newer_folder_that_is_not_a_checkpoint_is_skipped_naming_it(run, saved, kind):
    folder = make_foreign(run, kind)
    with pytest.warns(CheckpointWarning, match=rf"{folder}: not a committed checkpoint") as seen:
        resume = find_resume(run)
    assert resume == (2, step_dir(run, 2), None)
    assert any("moved to" in str(w.message) for w in seen)
    assert not folder.exists() and (run / "checkpoints.rejected" / "7").is_dir()
    # Orbax no longer counts it: the resumed run saves its step 7 and keeps steps 1 and 2
    config = saved[1]
    mesh = mesh_from_config(MeshConfig(1, 1, 1), devices=jax.devices()[:1])
    _, state, _, _ = init_train_state(config, mesh)
    ckpt = Checkpointer(run, CheckpointConfig(keep=3))
    ckpt.save(state.replace(step=state.step + 7), data={}, config=to_dict(config))
    ckpt.close()
    assert Checkpointer(run, CheckpointConfig()).all_steps() == [1, 2, 7]
    assert find_resume(run).step == 7


def test_only_folders_that_are_not_checkpoints_mean_a_fresh_run(tmp_path):
    (tmp_path / "checkpoints" / "4").mkdir(parents=True)
    with pytest.warns(CheckpointWarning, match="it is empty"):
        assert find_resume(tmp_path) is None


# ----------------------------------------------------------------------- export and the CLI


def test_export_refuses_a_corrupt_checkpoint_and_reads_past_a_foreign_one(run, tmp_path, capsys):
    from jaxopt_rl.cli import main

    flip_middle(data_files(step_dir(run, 2))[0])
    assert main(["export", str(run), str(tmp_path / "hf")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("jaxopt-rl export: checkpoint error: ")
    assert f"{step_dir(run, 2)} failed verification: state/" in err
    assert f"newest intact checkpoint is {step_dir(run, 1)}" in err
    assert not (tmp_path / "hf").exists()
    # the intact one named there exports; a reader skips a foreign newer folder (moving nothing)
    assert main(["export", str(step_dir(run, 1)), str(tmp_path / "hf1")]) == 0
    shutil.rmtree(step_dir(run, 2))
    foreign = make_foreign(run, "empty")
    with pytest.warns(CheckpointWarning, match=rf"{foreign}: not a committed checkpoint"):
        assert newest_checkpoint(run / "checkpoints") == 1
    assert foreign.is_dir()


def test_train_on_a_corrupt_checkpoint_fails_in_one_line_with_status_2(run, capsys):
    from jaxopt_rl.cli import main

    flip_middle(data_files(step_dir(run, 2))[0])
    status = main(["train", "--config", str(ROOT / "configs/train/tiny_qp_p30.yaml"),
                   f"output_dir={run}"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("jaxopt-rl train: checkpoint error: ")
    assert f"{step_dir(run, 2)} failed verification" in err


def test_on_corrupt_is_a_validated_config_key():
    assert CheckpointConfig().on_corrupt == "fail"
    config = from_dict(TrainConfig, {"checkpoint": {"on_corrupt": "previous"}})
    assert config.checkpoint.on_corrupt == "previous"
    with pytest.raises(ConfigError, match=r"checkpoint\.on_corrupt"):
        from_dict(TrainConfig, {"checkpoint": {"on_corrupt": "sometimes"}})


def test_eval_of_a_run_with_no_intact_checkpoint_fails_in_one_line_with_status_2(run, tmp_path,
                                                                                   capsys):
    from jaxopt_rl.cli import main

    for step in (1, 2):
        for file in data_files(step_dir(run, step)):
            flip_middle(file)
    status = main(["eval", "--model", str(run), "--n", "1", "--out", str(tmp_path / "out"),
                   "--cache-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("jaxopt-rl eval: checkpoint error: ")
    assert f"{step_dir(run, 2)} failed verification: state/" in err
    assert "no intact checkpoint is left" in err
    assert not list((tmp_path / "out").rglob("*.safetensors"))  # nothing was exported


def test_eval_reads_a_run_folders_config_yaml_without_yaml_aliases(run, tmp_path):
    """A billion-laughs config.yaml (each level nine aliases of the one below) is refused
    naming the file, before the checkpoint is exported."""
    from jaxopt_rl.commands.eval import policy_folder

    levels = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"l{k}: &l{k} [{', '.join([f'*l{k - 1}'] * 9)}]" for k in range(1, 9)]
    (run / "config.yaml").write_text("\n".join([*levels, "init_from: null", ""]))
    with pytest.raises(ConfigError) as err:
        policy_folder(str(run), tmp_path / "out")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{run / 'config.yaml'}: ") and "aliases" in message
    assert not (tmp_path / "out").exists()
