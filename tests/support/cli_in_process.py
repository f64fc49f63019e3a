"""`harness.cli.main` run in the test process many times over (the examples of a generated
test of the command line): what each run would make again exactly as before, made once."""

from __future__ import annotations

import functools
import hashlib
import inspect
import pickle
from collections.abc import Callable
from typing import Any

import pytest

import harness.cli.parser


def parser_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Until the test ends, every command line is parsed by one parser, built at the first
    parse: each parse would otherwise build its own from the same declarations (no command line
    goes into a parser), and argparse keeps nothing of one parse for the next. What a parse
    says, and every exit code and line that follows, is the same either way."""
    monkeypatch.setattr(harness.cli.parser, "parser", functools.cache(harness.cli.parser.parser))


def pictures_drawn_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Until the test ends, a report's picture whose data equal those of one drawn before is
    that one's PNG again rather than drawn anew. A picture is a function of its data alone
    (`harness.presentation.plots` keeps no state), and generated command lines run the same
    small configs again and again (seed-herd; generated ones that leave every key that runs at
    its default), with the same results each time.
    Every report is still made from its run's files, written and said: only the same picture is
    not rasterized twice, and its bytes are those a second drawing would give."""
    from harness.presentation import plots  # matplotlib: loaded by the first report anyway

    pictures = [
        name
        for name, draw in vars(plots).items()
        if inspect.isfunction(draw)
        and draw.__module__ == plots.__name__
        and not name.startswith("_")
        and draw.__annotations__.get("return") == "bytes"
    ]
    assert pictures, "no picture of harness.presentation.plots found"
    for name in pictures:
        monkeypatch.setattr(plots, name, _once(getattr(plots, name)))


def _once(draw: Callable[..., bytes]) -> Callable[..., bytes]:
    """`draw`, its PNG kept per value of its arguments (their pickle: equal bytes, equal
    data); arguments that cannot be pickled are drawn each time."""
    drawn: dict[bytes, bytes] = {}

    @functools.wraps(draw)
    def picture(*args: Any, **kwargs: Any) -> bytes:
        try:
            key = hashlib.sha256(pickle.dumps((args, kwargs))).digest()
        except (pickle.PicklingError, TypeError, AttributeError):
            return draw(*args, **kwargs)
        if key not in drawn:
            drawn[key] = draw(*args, **kwargs)
        return drawn[key]

    return picture
