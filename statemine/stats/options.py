"""The options of the statistics, as one frozen value passed down instead of a parameter each.

:class:`StatsOptions` is what every statistic of one trace set needs (``summarize``, the
streamed fold, the map/reduce of :mod:`statemine.stats.partial`); :class:`CompareOptions`
adds what comparing two trace sets needs (``statemine.diff``, the report). Public
functions take ``options`` plus keyword overrides (``summarize(ts, n_boot=0)``), made into
one value by :meth:`StatsOptions.with_changes`; everything below them takes the value only.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, TypeVar

from ..errors import UsageError

#: Where a trace's last state ends: its explicit end (a Close line) or last line, or its own line.
EndRule = Literal["close", "last-state"]
END_RULES = ("close", "last-state")
TransitionTest = Literal["chi2", "g"]
#: Default cap on distinct state names (``max_states``): past it the state field is almost
#: surely an id (a connection id, a timestamp), and the tables, model and diagram would be
#: unreadable anyway. Adjustable (``statemine infer --max-states N``).
MAX_STATES = 100_000
#: Dwell times kept exactly (visits) before the quantiles come from a sketch (``dwell_budget``).
DWELL_BUDGET = 1 << 20


def too_many_states(max_states: int) -> str:
    """The reason given when a log has more than ``max_states`` distinct state names."""
    return (
        f"more than {max_states} distinct state names: this looks like an id in the state field "
        f"(raise the cap with --max-states if the states are real)"
    )


_Options = TypeVar("_Options", bound="StatsOptions")


@dataclasses.dataclass(frozen=True)
class StatsOptions:
    """How visits are made and the tables computed.

    ``collapse_repeats``: a state logged again while already in it continues the visit;
    ``end``: where a trace's last state ends ("close": its Close line, else its last line of
    any kind; "last-state": at its own line, no time); ``confidence`` of the bootstrap
    intervals, from ``n_boot`` resamples of whole traces seeded by ``seed`` (0: no
    intervals); at most ``max_states`` distinct state names; dwell times kept exactly up to
    ``dwell_budget`` visits, then sketched (relative error below 0.1%)."""

    collapse_repeats: bool = False
    end: EndRule = "close"
    confidence: float = 0.95
    n_boot: int = 1000
    seed: int = 0
    max_states: int = MAX_STATES
    dwell_budget: int = DWELL_BUDGET

    def __post_init__(self) -> None:
        if self.end not in END_RULES:
            raise ValueError(f"end must be one of {END_RULES}, not {self.end!r}")
        if not 0 < self.max_states < 2**31:
            raise UsageError(f"max_states must be between 1 and {2**31 - 1}, not {self.max_states}")

    @classmethod
    def of(cls: type[_Options], options: StatsOptions | None = None, **changes: Any) -> _Options:
        """``options`` (default: the class's defaults) with ``changes``; the fields of a
        :class:`StatsOptions` given for a :class:`CompareOptions` carry over."""
        if options is None:
            return cls(**changes)
        if type(options) is not cls:
            names = {f.name for f in dataclasses.fields(cls)}
            kept = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
            return cls(**{**{k: v for k, v in kept.items() if k in names}, **changes})
        return dataclasses.replace(options, **changes) if changes else options


@dataclasses.dataclass(frozen=True)
class CompareOptions(StatsOptions):
    """The statistics of ``diff`` and ``report`` (two trace sets), with the commands'
    defaults: as :class:`StatsOptions` (``n_boot`` resamples per side: 0 gives no
    intervals), plus ``n_perm`` permutations (seeded by ``seed``), Holm's family-wise
    ``alpha``, the large-count ``transition_test`` ("chi2" or "g"), the trace labels to
    stratify by (``strata``) and the bootstrap ``interval`` of each state's difference
    ("percentile", or "studentized": bootstrap-t, see
    :func:`statemine.stats.resampling.bootstrap_delta`)."""

    n_boot: int = 2000
    n_perm: int = 9999
    alpha: float = 0.05
    transition_test: TransitionTest = "chi2"
    strata: tuple[str, ...] = ()
    interval: Literal["percentile", "studentized"] = "percentile"

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.strata, str):  # one label given as a string
            object.__setattr__(self, "strata", (self.strata,))
        elif self.strata is None:
            object.__setattr__(self, "strata", ())
        else:
            object.__setattr__(self, "strata", tuple(self.strata))
