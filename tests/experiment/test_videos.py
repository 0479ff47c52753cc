"""Videos: ``--run.video_every`` writes one greedy episode per period beside the run and
sends it to TensorBoard (an animated GIF image summary) and W&B (``wandb.Video``), read back
here from the event file and the offline run's files, without changing what the run
learns; ``--video`` of a ``gym:`` env (Gymnasium's ``rgb_array``) and MuJoCo frames (MuJoCo's
own renderer, headless) decode to the pictures they were made of; an env that cannot
render, or no imageio, is one line, exit code 2, nothing written."""

import contextlib
import io
import json
import sys
from types import SimpleNamespace
from typing import NamedTuple

import jax
import numpy as np
import pytest

from jaxrl.envs.render import HEIGHT, WIDTH
from jaxrl.train import main as train
from tests.experiment.test_loggers import items, wandb_records
from tests.helpers import one_line_error, run_dirs, tensorboard_values, tiny_run

imageio = pytest.importorskip("imageio.v2")

# test_train.py's run (its compiled programs are in the tests' XLA cache when it ran first).
TINY = tiny_run("--agent.updates_per_rollout 2 --run.eval_every 512", drop=["--run.rollout_len"])


class Core(NamedTuple):  # the part of MJX's Data that a MuJoCo frame reads
    qpos: np.ndarray


def decoded(path) -> np.ndarray:
    """The frames of the video file at ``path``, ``uint8 [T, H, W, 3]``."""
    return np.stack(imageio.mimread(path, memtest=False))


def playable(frames: np.ndarray, shape: tuple[int, int]) -> None:
    assert frames.ndim == 4 and frames.shape[1:] == (*shape, 3) and frames.dtype == np.uint8
    assert frames.reshape(-1, 3).std(axis=0).max() > 10  # a picture, not one colour


def rows(run_dir):
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(li).items() if k not in ("time", "sps")} for li in lines]


@pytest.fixture(scope="module")
def video_run(tmp_path_factory):
    """A run of 1024 steps with a video every 512 logged to TensorBoard and offline W&B,
    and the same run without videos."""
    pytest.importorskip("wandb")
    logdir = tmp_path_factory.mktemp("videos")
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(io.StringIO()):
        patch.setenv("WANDB_MODE", "offline")
        patch.setenv("WANDB_SILENT", "true")
        argv = [*TINY, "--steps", "1024", "--logdir"]
        videos = ["--run.video_every", "512", "--log", "tensorboard,wandb"]
        assert train([*argv, str(logdir / "with"), *videos]) == 0
        assert train([*argv, str(logdir / "without"), "--log", ""]) == 0
    return run_dirs(logdir / "with")[0], run_dirs(logdir / "without")[0]


def test_training_videos_are_files_tensorboard_videos_and_wandb_videos(video_run):
    run_dir, _ = video_run
    files = sorted((run_dir / "videos").iterdir())
    assert [f.name for f in files] == ["step_000000512.mp4", "step_000001024.mp4"]
    videos = {int(f.stem.split("_")[1]): decoded(f) for f in files}
    for frames in videos.values():
        playable(frames, (HEIGHT, WIDTH))
    # TensorBoard: an image summary per video holding an animated GIF of the same frames.
    logged = [(s, v) for s, v in tensorboard_values(run_dir) if v.tag == "eval/video"]
    assert [s for s, _ in logged] == [512, 1024]
    for step, value in logged:
        assert (value.image.height, value.image.width) == (HEIGHT, WIDTH)
        gif = np.asarray(imageio.mimread(value.image.encoded_image_string, format="GIF"))
        assert len(gif) == len(videos[step])
        assert np.abs(gif[..., :3].astype(int) - videos[step]).mean() < 8  # lossy codecs
    # W&B: a history row per video naming its file, which the offline run holds.
    (log_file,) = (run_dir / "wandb").glob("offline-run-*/run-*.wandb")
    history = [items(r.history.item) for r in wandb_records(log_file) if r.history.item]
    logged = [(h["_step"], h) for h in history if "eval/video/path" in h]
    assert [s for s, _ in logged] == [512, 1024]
    for step, entry in logged:
        assert entry["eval/video/_type"] == "video-file"
        frames = decoded(log_file.parent / "files" / entry["eval/video/path"])
        assert frames.shape == videos[step].shape


def test_videos_do_not_change_training(video_run):
    """The episodes use keys of their own: the metrics are those of a run without them."""
    with_videos, without = video_run
    assert rows(with_videos) == rows(without)


def test_gym_video_is_gymnasiums_rendering(tmp_path):
    """``gym:CartPole-v1``: each frame Gymnasium's ``rgb_array`` (400 x 600, padded to 608)
    of the episode; the first is the reset state's, seeded as the episode's reset."""
    import gymnasium

    from jaxrl import agents
    from jaxrl.evaluate import check_video, record
    from jaxrl.experiment.config import resolve
    from jaxrl.runners.host import _seed

    config = resolve(agent="dqn", env="gym:CartPole-v1", overrides={"agent.hidden_sizes": [8]})
    check_video(config, 1)
    agent = agents.build(config.agent, config.env.make(1).spec)
    key, path = jax.random.PRNGKey(1), tmp_path / "cartpole.mp4"
    count = record(agent, agent.init(jax.random.PRNGKey(0)), config, key, str(path))
    frames = decoded(path)
    assert len(frames) == count > 5
    playable(frames, (400, 608))
    env = gymnasium.make("CartPole-v1", render_mode="rgb_array")
    env.reset(seed=_seed(jax.random.split(key)[1]))
    first = env.render()
    assert np.abs(frames[0, :, :600].astype(int) - first).mean() < 4
    assert frames[:, :, 600:].mean() < 4  # the padding is black (through the codec)


def test_mujoco_frames_are_mujocos_rendering_of_the_state(tmp_path):
    """HalfCheetah: frames drawn by MuJoCo's renderer from the joint positions of MJX's
    state (here Gymnasium's CPU HalfCheetah-v5, the same model, stepped with random
    actions: no compile), written and decoded; the cheetah's pictures change as it moves."""
    import gymnasium

    from jaxrl.envs.mujoco_render import HEIGHT as H
    from jaxrl.envs.mujoco_render import WIDTH as W
    from jaxrl.experiment import video
    from jaxrl.experiment.config import resolve

    config = resolve(agent="random", env="HalfCheetah")
    video.check(config, 1)
    frame, fps = video._drawer(config, "mujoco")
    assert fps == 20  # Gymnasium's render_fps: 1 / (0.01 * 5)
    env = gymnasium.make("HalfCheetah-v5")
    env.reset(seed=0)
    states, rng = [], np.random.default_rng(0)
    for _ in range(12):
        states.append(env.unwrapped.data.qpos.copy())
        env.step(rng.uniform(-1, 1, 6))
    state = lambda qpos: SimpleNamespace(core=Core(qpos[None]))  # a vector env of one
    drawn = [frame(state(q), None) for q in states]
    video.write(tmp_path / "cheetah.mp4", drawn, fps)
    frames = decoded(tmp_path / "cheetah.mp4")
    assert len(frames) == len(states)
    playable(frames, (H, W))
    assert np.abs(frames.astype(int) - np.stack(drawn)).mean() < 8
    assert np.abs(drawn[-1].astype(int) - drawn[0]).mean() > 1  # the legs moved
    np.testing.assert_array_equal(frame(state(states[3]), None), drawn[3])  # a function of it


@pytest.mark.parametrize(
    "flags, fragment",
    [
        (["--env", "FrozenLake-v1"], "--run.video_every: env 'FrozenLake-v1' does not render"),
        (["--agents", "dqn,dqn", "--env", "tic_tac_toe"], "records a run of one agent"),
        ([], "--run.video_every needs imageio: pip install 'jaxrl[video]'"),
    ],
)
def test_video_every_that_cannot_record_is_one_line_and_writes_nothing(
    tmp_path, capsys, monkeypatch, flags, fragment
):
    if not flags:
        monkeypatch.setitem(sys.modules, "imageio.v2", None)  # not installed
    argv = [*tiny_run(" ".join(flags), drop=["--agent"] if "--agents" in flags else ())]
    assert train([*argv, "--run.video_every", "256", "--logdir", str(tmp_path)]) == 2
    one_line_error(capsys, fragment)
    assert not any(tmp_path.iterdir())


def test_mujoco_without_opengl_is_one_line_before_anything_is_restored(
    tmp_path, capsys, monkeypatch
):
    """Where MuJoCo cannot make an OpenGL context (no EGL, OSMesa or display), ``--video``
    of a MuJoCo run says so, and how to get one, from the run's config alone."""
    import mujoco

    from jaxrl.envs import mujoco_render
    from jaxrl.evaluate import main as evaluate

    def no_context(*args, **kwargs):
        raise mujoco.FatalError("an OpenGL platform library has not been loaded")

    monkeypatch.setattr(mujoco, "Renderer", no_context)
    mujoco_render.check.cache_clear()
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("agent: {name: sac}\nenv: {name: HalfCheetah}\n")
    try:
        assert evaluate([str(run), "--video", str(tmp_path / "v.mp4")]) == 2
    finally:
        mujoco_render.check.cache_clear()  # the real renderer's answer for later tests
    one_line_error(capsys, "--video: MuJoCo cannot render here", "MUJOCO_GL=egl")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["config.yaml", "run"]
