"""`bacepipe train imitate` and `bacepipe train learn` given what they cannot use (issue 37):
an env id that is no GeoPipe environment, and an `--init-from` that is missing, not a zip, a
zip that is no SB3 model, or a model of another network. Each is one stderr line under 200
characters naming the setting and the file, exit status 2, through the real CLI."""

from __future__ import annotations

import shutil
import zipfile
from typing import Any

import pytest
from train_helpers import ENV_ID, TinyRun, one_line_error, run_many

CLI = ("-m", "bacepipe_env.cli", "train")
#: The smallest learn run, should one ever start: one env, one rollout, no progress bar.
SMALL = ("--n-envs", "1", "--total-timesteps", "32", "--n-steps", "32", "--batch-size", "32")
SMALL += ("--n-epochs", "1", "--no-progress")


@pytest.fixture(scope="module")
def refused(tiny: TinyRun, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("misuse")
    logdir = tmp / "runs"
    text = tmp / "notes.txt"
    text.write_text("not a model\n")
    other = tmp / "other.zip"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("readme.txt", "a zip, but no SB3 model")
    # a real model of the default [64, 64] network, deep in folders, for a [32] network
    deep = tmp.joinpath(*["a-long-folder-name"] * 8) / "model.zip"
    deep.parent.mkdir(parents=True)
    shutil.copy(tiny.run_dir / "model.zip", deep)
    files = {"missing": tmp / "nowhere" / "model.zip", "text": text, "zip": other, "net": deep}
    learn = (*CLI, "learn", "--env-id", ENV_ID, *SMALL, "--logdir", str(logdir))
    imitate, learn_cartpole, compare, missing, text_file, zip_file, net = run_many(
        (*CLI, "imitate", "--env-id", "CartPole-v1", "--logdir", str(logdir)),
        (*CLI, "learn", "--env-id", "CartPole-v1", *SMALL, "--logdir", str(logdir)),
        (*CLI, "compare", "--env-id", "CartPole-v1", "--logdir", str(logdir)),
        (*learn, "--init-from", str(files["missing"])),
        (*learn, "--init-from", str(text)),
        (*learn, "--init-from", str(other)),
        (*learn, "--init-from", str(deep), "--net-arch", "32"),
    )
    return {
        "imitate": imitate,
        "learn": learn_cartpole,
        "compare": compare,
        "missing": missing,
        "text": text_file,
        "zip": zip_file,
        "net": net,
        "files": files,
        "logdir": logdir,
    }


def _line(proc: Any, command: str) -> str:
    line = one_line_error(proc)  # status 2, one line, no traceback
    assert line.startswith(f"bacepipe train {command}: error: "), line
    assert len(line) < 200, (len(line), line)
    return line


@pytest.mark.parametrize("command", ["imitate", "learn", "compare"])
def test_an_env_id_that_is_no_geopipe_env_is_one_line(
    refused: dict[str, Any], command: str
) -> None:
    """`CartPole-v1` used to end imitate with a TypeError traceback about `placement`, and
    learn with a line blaming env_kwargs for `observation`."""
    line = _line(refused[command], command)
    assert line == (
        f"bacepipe train {command}: error: env_id: CartPole-v1 is not a GeoPipe environment "
        "(no GeoPipeEnv entry point); give a bacepipe_env/GeoPipe-* id or one registered with "
        "GeoPipeEnv"
    ), line
    assert not refused["logdir"].exists()  # nothing was trained or written


def test_init_from_a_missing_file(refused: dict[str, Any]) -> None:
    line = _line(refused["missing"], "learn")
    assert "error: init_from: no model file at " in line, line
    assert line.endswith("/nowhere/model.zip"), line  # a long path keeps its end


@pytest.mark.parametrize(
    ("case", "problem"), [("text", "not a zip file"), ("zip", "no data or policy.pth in the zip")]
)
def test_init_from_a_file_that_is_no_sb3_model_zip(
    refused: dict[str, Any], case: str, problem: str
) -> None:
    """A text file used to be `not a model of this network (Error: the file ... wasn't a
    zip-file)`, 230 characters with the hint."""
    line = _line(refused[case], "learn")
    name = refused["files"][case].name
    assert "init_from: " in line and f"{name} is not an SB3 model zip ({problem})" in line, line
    assert "of this network" not in line


def test_init_from_a_model_of_another_network_stays_short(refused: dict[str, Any]) -> None:
    line = _line(refused["net"], "learn")
    assert "init_from: ..." in line and "/model.zip is not a model of this network" in line, line
    assert line.endswith("; give its --policy, --net-arch, --slot-hidden and env settings"), line
    assert not refused["logdir"].exists()  # refused before the run folder is made
