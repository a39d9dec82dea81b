"""explain.md: the summary of ``statemine explain`` and its tables, for people (numbers
through :mod:`statemine.units`; the CSVs beside it keep full precision)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import units
from ..escape import visible

if TYPE_CHECKING:
    import pandas as pd

    from ..explain import ExplainResult

#: Triggers listed per changed state (triggers.csv has them all).
TRIGGERS_SHOWN = 5


#: The columns of the changed states' table (terminal and explain.md).
CHANGED_HEADERS = (
    "state",
    "change",
    "entries",
    "p (Holm)",
    "dwell",
    "p (Holm)",
    "by entries",
    "by dwell",
)


def md_cell(value: object) -> str:
    """A table cell: control characters made visible, ``|`` escaped.

    >>> md_cell("a|b")
    'a\\\\|b'
    """
    return visible(value).replace("|", "\\|")


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table (cells through :func:`md_cell`)."""
    lines = ["| " + " | ".join(md_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def rate(value: float) -> str:
    """Entries per second of connection, three significant digits.

    >>> rate(1.23456), rate(float("nan"))
    ('1.23/s', 'n/a')
    """
    return units.NA if value != value else f"{value:.3g}/s"


def _records(frame: Any) -> list[Any]:
    """A frame's rows as named tuples (pandas-stubs types their fields as any scalar)."""
    return list(frame.itertuples(index=False))


def changed_cells(changed: pd.DataFrame) -> list[tuple[str, ...]]:
    """One text row per changed state (:data:`CHANGED_HEADERS`): the change, entries per
    second and dwell per side with their Holm p, and the parts entries and dwell carry."""
    return [
        (
            str(row.state),
            units.share_delta(row.delta),
            f"{rate(row.rate_a)} -> {rate(row.rate_b)}",
            units.p_value(row.rate_p_holm),
            f"{units.seconds(row.dwell_a)} -> {units.seconds(row.dwell_b)}",
            units.p_value(row.dwell_p_holm),
            units.share_delta(row.rate_part),
            units.share_delta(row.dwell_part),
        )
        for row in _records(changed)
    ]


def explain_markdown(result: ExplainResult) -> str:
    """The whole explain.md."""
    la, lb = visible(result.label_a), visible(result.label_b)
    out = [f"# Why: {la} vs {lb}\n"]
    d = result.diff
    out.append(
        f"{d.n_traces_a} vs {d.n_traces_b} traces; states whose share changed significantly "
        f"(Holm, alpha={result.alpha:g}) are explained below.\n"
    )
    out.append("## Summary\n")
    out += [visible(p) + "\n" for p in result.summary] or ["No state changed significantly.\n"]
    changed = result.states[result.states["changed"]]
    if len(changed):
        out.append("## Rate or dwell\n")
        out.append(md_table(CHANGED_HEADERS, changed_cells(changed)))
        out.append("## Triggers\n")
        for state in changed["state"]:
            mine = result.triggers[result.triggers["state"] == state].head(TRIGGERS_SHOWN)
            out.append(f"### {visible(state)}\n")
            out.append(
                md_table(
                    ("trigger", "verdict", la, lb, "B - A [95% CI]", "p (Holm)", "of the change"),
                    [
                        (
                            row.trigger,
                            row.verdict,
                            rate(row.rate_a),
                            rate(row.rate_b),
                            f"{row.rate_delta:+.3g} [{row.rate_lo:+.3g}, {row.rate_hi:+.3g}]",
                            units.p_value(row.p_holm),
                            units.share(row.share_of_change),
                        )
                        for row in _records(mine)
                    ],
                )
            )
    out.append("## Loss declarations: spurious or real\n")
    out.append(
        md_table(
            (
                "side",
                "declared",
                "packet rule",
                "time rule",
                "spurious",
                "real",
                "unknown",
                "stack SpuriousLoss",
                "path dropped",
            ),
            [
                (
                    row.side,
                    row.declared,
                    row.declared_packet,
                    row.declared_time,
                    row.spurious,
                    row.real,
                    row.unknown,
                    row.stack_spurious_events,
                    units.NA if row.path_dropped != row.path_dropped else int(row.path_dropped),
                )
                for row in _records(result.losses)
            ],
        )
    )
    evidence = sorted({e for text in result.losses["evidence"] for e in text.split("; ") if e})
    out.append("Evidence used: " + ("; ".join(evidence) or "none") + ".\n")
    out.append("## Labels that differ\n")
    if len(result.differing):
        out.append(
            md_table(
                ("label", la, lb),
                [tuple(r) for r in result.differing.itertuples(index=False)],
            )
        )
    else:
        out.append("None.\n")
    return "\n".join(out)
