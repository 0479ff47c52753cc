"""``benchmarks/amp_pendulum.py``'s ``episode_heads``: each episode's first N rows, found
from the ``terminated``/``truncated`` flags, against a plain loop over the episodes."""

import numpy as np

from benchmarks.amp_pendulum import episode_heads


def loop_heads(arrays: dict, first: int) -> dict:
    rows, start = [], 0
    ends = arrays["terminated"] | arrays["truncated"]
    for i in range(len(ends)):
        if i - start < first:
            rows.append(i)
        if ends[i]:
            start = i + 1
    return {k: v[rows] for k, v in arrays.items()}


def test_episode_heads_keeps_each_episodes_first_rows_in_order():
    rng = np.random.default_rng(0)
    lengths = [5, 2, 7, 1, 4]  # the last episode runs off the end (no flag)
    n = sum(lengths)
    ends = np.zeros(n, bool)
    ends[np.cumsum(lengths)[:-1] - 1] = True
    terminated = ends & (rng.random(n) < 0.5)
    arrays = {
        "obs": rng.normal(size=(n, 3)).astype(np.float32),
        "reward": np.arange(n, dtype=np.float32),
        "terminated": terminated,
        "truncated": ends & ~terminated,
    }
    for first in (1, 3, 10):
        got, want = episode_heads(arrays, first), loop_heads(arrays, first)
        assert sorted(got) == sorted(arrays)
        for k in arrays:
            np.testing.assert_array_equal(got[k], want[k])
            assert got[k].dtype == arrays[k].dtype
    # first 3: rows 0-2 | 5-6 | 7-9 | 14 | 15-17
    np.testing.assert_array_equal(
        episode_heads(arrays, 3)["reward"], [0, 1, 2, 5, 6, 7, 8, 9, 14, 15, 16, 17]
    )
