"""TensorBoard histograms on the evaluation rows (jaxrl/experiment/histograms.py): a DQN run
with ``--log tensorboard`` writes ``eval/q_values`` and ``eval/actions`` at exactly the
evaluation steps, read back from the event file; PPO's greedy rollout gives action
probabilities that sum to one per state and whose argmax is the action taken."""

import jax
import numpy as np

from jaxrl import agents, envs
from jaxrl.experiment.histograms import STEPS, make_collector
from jaxrl.train import main as train
from tests.helpers import tensorboard_values, tiny_run

ARGS = tiny_run(
    "--num-envs 2 --steps 512 --run.rollout_len 8 --run.log_every 128 --log tensorboard"
)


def read_histograms(run_dir):
    """{tag: [(step, HistogramProto)]} from the TensorBoard event files in ``run_dir``."""
    out = {}
    for step, value in tensorboard_values(run_dir):
        if value.HasField("histo"):
            out.setdefault(value.tag, []).append((step, value.histo))
    return out


def test_dqn_run_writes_q_value_histograms_on_eval_rows(tmp_path):
    assert train([*ARGS, "--logdir", str(tmp_path)]) == 0
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    hist = read_histograms(run_dir)
    assert set(hist) == {"eval/q_values", "eval/actions"}
    for tag, per_value in (("eval/q_values", 2), ("eval/actions", 1)):
        assert [step for step, _ in hist[tag]] == [256, 512]  # the evaluation rows only
        for _, h in hist[tag]:
            # STEPS greedy steps of the 2 evaluation envs, 2 Q-values (actions) each.
            assert h.num == STEPS * 2 * per_value and np.isfinite([h.min, h.max, h.sum]).all()
    for _, h in hist["eval/actions"]:
        assert 0 <= h.min <= h.max <= 1


def test_ppo_collector_action_probabilities():
    env = envs.make("CartPole", num_envs=3)
    agent = agents.make("ppo", env.spec, hidden_sizes=[8])
    collect = make_collector(agent, env)
    values = collect(jax.jit(agent.init)(jax.random.PRNGKey(0)), jax.random.PRNGKey(1))
    assert set(values) == {"action_probs", "actions"}
    probs = values["action_probs"].reshape(STEPS * 3, 2)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(values["actions"], probs.argmax(-1))  # greedy = the mode
    assert make_collector(agent, object()) is None  # a host env: no histograms
