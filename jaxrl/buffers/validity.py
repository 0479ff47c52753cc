"""Which items of a replay buffer can be sampled, as pure functions of the ring's
bookkeeping (``position``, ``size``) and stored episode flags, testable without a buffer.

Every buffer stores time-major rings of ``L`` rows of ``N`` envs (see
:mod:`jaxrl.buffers.replay`); an *item* ``(row, env)`` is the start of a window of
``window`` consecutive rows. The rules:

* :func:`window_valid` (uniform and prioritized storage of full transitions): the window
  lies in written rows and does not cross the write head.
* :func:`compact_valid` (compact storage, :mod:`jaxrl.buffers.compact`): the window and its
  bootstrap row are stored behind the head, no truncation cuts the window before a
  termination (its final observation is not stored), and the frames of the first
  observation's stack are stored (see that module's *Validity*).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array


def window_valid(position: Array, size: Array, rows: Array, num_rows: int, window: int) -> Array:
    """Bool, shaped like ``rows``: the window of ``window`` rows starting at storage row
    ``rows`` lies in written rows and ends before the write head ``position``.

    With ``d = (position - row) mod L`` taken in ``[1, L]`` (rows from ``row`` up to the
    head), valid iff ``window <= d <= size``. Exactly ``max(size - window + 1, 0)`` rows
    are valid: the start offsets ``0 .. size - window`` from the oldest row."""
    distance = (position - rows) % num_rows
    distance = jnp.where(distance == 0, num_rows, distance)
    return (distance >= window) & (distance <= size)


def compact_valid(
    terminated: Array,
    truncated: Array,
    position: Array,
    size: Array,
    rows: Array,
    window: int,
    stack: int,
) -> Array:
    """``[K, N]`` bool: whether the items of storage rows ``rows`` ``[K]`` of a compact
    buffer are valid (rules 1-3 of :mod:`jaxrl.buffers.compact`'s *Validity*).

    Args:
      terminated, truncated: ``[L, N]`` bool, the stored episode flags.
      position, size: int32 scalars, the ring's write head and number of written rows.
      rows: ``[K]`` int32 storage rows in ``[0, L)``.
      window: ``n``, the steps per sampled window.
      stack: ``S = max(stack, 1)``, the rows per observation.
    """
    num_rows = terminated.shape[0]
    n, S = window, max(stack, 1)
    oldest = (position - size) % num_rows
    offset = (rows - oldest) % num_rows  # [K], age rank of the row among stored rows
    stored = offset + n <= size - 1  # rows t .. t+n stored, behind the head

    def ended(at: Array) -> Array:  # gather both flags, then combine (no [L, N] temp)
        return terminated[at] | truncated[at]

    # Rule 2: the first episode end within rows t .. t+n-1 must not be a truncation.
    wrows = (rows[:, None] + jnp.arange(n)) % num_rows  # [K, n]
    w_term, w_ended = terminated[wrows], ended(wrows)  # [K, n, N]
    first = w_ended & (jnp.cumsum(w_ended, axis=1) == 1)
    truncated_first = jnp.any(first & ~w_term, axis=1)  # [K, N]
    valid = stored[:, None] & ~truncated_first
    if S > 1:
        # Rule 3: the frame of row t-k (k = 1..S-1) is used iff none of rows t-k .. t-1
        # ended an episode; it must then be stored (k <= offset). The flag of an unstored
        # row is unknown (its slot holds other data): read as "did not end", so a stack
        # reaching past the oldest row without a stored episode start is invalid.
        k = jnp.arange(1, S)
        reach_ok = k[None, :, None] <= offset[:, None, None]  # [K, S-1, 1]
        prev = ended((rows[:, None] - k) % num_rows) & reach_ok  # [K, S-1, N]
        used = jnp.cumprod(~prev, axis=1).astype(bool)
        valid &= jnp.all(~used | reach_ok, axis=1)
    return valid
