"""Which modules a name may import: the line between data and code.

A name of the form ``package.module:attr`` (an agent, an env, a callback) or
``gym:module:Id`` imports ``module`` and runs its code. Config files, ``launch.yaml`` and
run directories are data that users share, so under the command-line entry points
(``python -m jaxrl.train``, ``evaluate``, ``export``) such a name resolves only when its
module is one the user named on the command line: with ``--import MODULE``, or in a flag
of their own (``--agent my_pkg.agents:make``). Anything else is refused with one line
before it is imported. The Python API (``jaxrl.agents.make("my_pkg.agents:make", ...)``)
is the user's own code and imports what it is given.

The entry points also take the current directory off ``sys.path`` (``python -m`` puts it
first): a run directory or a shared config folder may hold ``.py`` files, and they are
never imported unless named. A module the user names is still looked up in the current
directory, as before.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import ModuleType

from jaxrl.types import ConfigError

# None: the Python API, every module may be imported; else the modules the command line
# named (``trusted``).
_allowed: frozenset[str] | None = None


def run_main(
    body: Callable[[list[str], contextlib.ExitStack], int], argv: Sequence[str] | None
) -> int:
    """An entry point's ``main``: ``body(argv, stack)``, ``argv`` the command line's
    arguments (``sys.argv[1:]`` for None), ``stack`` closed when it returns (what it
    entered, the ``trusted`` imports among them, undone)."""
    args = sys.argv[1:] if argv is None else list(argv)
    with contextlib.ExitStack() as stack:
        return body(args, stack)


def add_import_argument(parser: argparse.ArgumentParser) -> None:
    """The commands' ``--import MODULE`` flag (repeatable, into ``args.imports``): a module
    to import first, and so a module the names of a config or run directory may import."""
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import first (to register torsos, envs); repeatable",
    )


def module_of(name: str) -> str | None:
    """The module a ``module:attr`` name (or a ``gym:module:Id`` env) imports, else None."""
    if not isinstance(name, str):
        return None
    if name.startswith("gym:"):
        name = name[len("gym:") :]
    module, colon, _ = name.partition(":")
    return module if colon else None


def allows(module: str) -> bool:
    """Whether ``module`` may be imported: unrestricted, or it or a package above it named
    on the command line."""
    if _allowed is None:
        return True
    parts = module.split(".")
    return any(".".join(parts[:i]) in _allowed for i in range(1, len(parts) + 1))


@contextlib.contextmanager
def trusted(modules: Iterable[str]) -> Iterator[None]:
    """Within the block only ``modules`` (and their submodules) may be imported by name,
    and the current directory is off ``sys.path`` (restored after)."""
    global _allowed
    before, path = _allowed, list(sys.path)
    _allowed = frozenset(m for m in modules if m)
    here = {"", os.getcwd()}
    sys.path[:] = [p for p in sys.path if p not in here]
    try:
        yield
    finally:
        _allowed = before
        sys.path[:] = path + [p for p in sys.path if p not in path]


def check(name: str, what: str) -> None:
    """ConfigError (one line) if ``name`` would import a module not named on the command
    line; ``what`` says where the name was found (``"agent 'x:y'"``)."""
    module = module_of(name)
    if module is not None and not allows(module):
        _refuse(module, what)


def _refuse(module: str, what: str) -> None:
    raise ConfigError(
        f"{what} would import module '{module}', which the command line did not name; "
        f"a config or run directory is data: give --import {module} to run its code"
    )


def import_module(module: str, what: str) -> ModuleType:
    """``importlib.import_module(module)`` if ``allows(module)``, else ConfigError naming
    ``what``. A module named on the command line is also looked up in the current
    directory."""
    if not allows(module):
        _refuse(module, what)
    if _allowed is None:
        return importlib.import_module(module)
    sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(os.getcwd())


def user_function(path: str, option_name: str, name: str) -> Callable:
    """The function ``package.module:function`` names (``jaxrl.trust``: under the command
    line only a module it named); ConfigError (one line) where it cannot be had."""
    module_name, colon, attr = path.partition(":")
    what = f"agent '{name}' option '{option_name}'"
    if not colon or not module_name or not attr:
        raise ConfigError(f"{what} needs package.module:function, got '{path}'")
    try:
        module = import_module(module_name, what)
    except ImportError as e:
        raise ConfigError(f"{what}: cannot import module '{module_name}': {e}") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ConfigError(f"{what}: module '{module_name}' has no function '{attr}'")
    return fn


def is_user_code(fn: object) -> bool:
    """Whether ``fn`` (a factory, maybe a ``functools.partial``) comes from outside the
    library: the boundary where a user's env or agent is checked."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    module = getattr(fn, "__module__", None) or ""
    return not (module == "jaxrl" or module.startswith("jaxrl."))
