"""``benchmarks/all_reached.py``: a seed run ends only once every member has reached the
target at some evaluation (not when their mean has, nor at NaN evaluations)."""

from types import SimpleNamespace

from benchmarks.all_reached import AllReached


def test_stops_once_every_member_reached_the_target_at_some_evaluation():
    stop = AllReached(-200.0)
    chunk = lambda *evals: SimpleNamespace(rows=[{"eval_return": e} for e in evals])
    nan = float("nan")
    assert stop.on_chunk(chunk(nan, nan, nan)) is None
    assert stop.on_chunk(chunk(-150.0, -900.0, -201.0)) is None  # mean -417, one reached
    assert stop.on_chunk(chunk(-800.0, -199.0, nan)) is None  # member 0 stays reached
    assert stop.on_chunk(chunk(-500.0, -600.0, -200.0)) == (
        "every member's evaluation reached -200"
    )


def test_reset_forgets_the_members_reached_by_an_earlier_run():
    stop = AllReached(-200.0)
    chunk = lambda *evals: SimpleNamespace(rows=[{"eval_return": e} for e in evals])
    assert stop.on_chunk(chunk(-100.0, -150.0)) is not None
    stop.reset()
    assert stop.on_chunk(chunk(-900.0, -150.0)) is None
