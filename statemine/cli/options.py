"""Options several commands share (one definition each), and one way to add a list of
options to a command."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from ..errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])
Decorator = Callable[[Any], Any]


def with_options(options: Sequence[Decorator]) -> Callable[[F], F]:
    """One decorator adding ``options`` to a command, shown in --help in the given order."""

    def add(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return add


def key_values(items: Sequence[str], option: str, *, strip: bool = False) -> dict[str, str]:
    """``KEY=VALUE`` strings of a repeatable ``option`` as a dict (``strip``: white space
    around key and value removed); a malformed one is a one-line :class:`UsageError`.

    >>> key_values(["profile=mobile", "rtt_ms = 20"], "--only", strip=True)
    {'profile': 'mobile', 'rtt_ms': '20'}
    """
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{option} takes KEY=VALUE, not {item!r}")
        pairs[key.strip() if strip else key] = value.strip() if strip else value
    return pairs


def seed_option(help: str = "Seed of permutations and bootstrap.") -> Decorator:
    """``--seed`` (an int, default 0)."""
    return click.option("--seed", type=int, default=0, show_default=True, help=help)


def permutations_option() -> Decorator:
    """``--permutations`` (``n_perm``): random relabellings of a permutation test."""
    return click.option(
        "--permutations",
        "n_perm",
        type=click.IntRange(1),
        default=9999,
        show_default=True,
        help="Random relabellings of the permutation test (all of them when there are fewer).",
    )


def bootstrap_option(*, default: int, minimum: int, help: str) -> Decorator:
    """``--bootstrap`` (``n_boot``): bootstrap resamples, at least ``minimum``."""
    return click.option(
        "--bootstrap",
        "n_boot",
        type=click.IntRange(minimum),
        default=default,
        show_default=True,
        help=help,
    )


def alpha_option(*, default: float, help: str) -> Decorator:
    """``--alpha``: a significance level in (0, 1)."""
    return click.option(
        "--alpha",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=default,
        show_default=True,
        help=help,
    )


def collapse_repeats_option() -> Decorator:
    """``--collapse-repeats``: merge a state logged again while already in it."""
    return click.option(
        "--collapse-repeats", is_flag=True, help="Merge a state logged again while already in it."
    )


def end_option() -> Decorator:
    """``--end`` (``end_rule``): where a trace's last state ends."""
    return click.option(
        "--end",
        "end_rule",
        type=click.Choice(["close", "last-state"]),
        default="close",
        show_default=True,
        help="Where a trace's last state ends: its Close line / last line, or its own line.",
    )


WIDE_OPTION = click.option(
    "--wide",
    is_flag=True,
    help="Print tables at full width (the default when output is not a terminal).",
)


def out_option(
    *legacy: str, help: str, type: click.ParamType, required: bool = False
) -> Callable[[F], F]:
    """``--out PATH``, the one spelling of every output path (passed as ``out``), with the
    ``legacy`` spellings (e.g. ``-o``, ``--output``) still taken for a release: hidden from
    --help, and a deprecation line on stderr when used. ``required``: one of them must be
    given (checked here, since click cannot require either of two options)."""
    old_name = "/".join(legacy)

    def add(func: F) -> F:
        @functools.wraps(func)
        def merged(*args: Any, **kwargs: Any) -> Any:
            old = kwargs.pop("legacy_out")
            if old is not None:
                if kwargs["out"] is not None:
                    raise UsageError(f"give --out only (not {old_name} as well)")
                click.echo(
                    f"statemine: note: {old_name} is deprecated and goes away in the next "
                    "release; use --out",
                    err=True,
                )
                kwargs["out"] = old
            if required and kwargs["out"] is None:
                raise UsageError("missing option --out")
            return func(*args, **kwargs)

        merged = click.option(*legacy, "legacy_out", type=type, hidden=True)(merged)
        return click.option("--out", "out", type=type, help=help)(merged)  # type: ignore[return-value]

    return add
