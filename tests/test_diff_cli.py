"""``statemine diff`` end to end: files written, tables consistent with the library, bad input."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
from click.testing import CliRunner
from test_diff_data import make_set

from statemine.cli import main
from statemine.compare import STATE_COLUMNS, TRANSITION_COLUMNS, diff
from statemine.traces import TraceSet, save


def write_log(ts: TraceSet, path) -> None:
    """Write ``ts`` as a statemine log (docs/log-format.md)."""
    lines = []
    for row in ts.events.itertuples(index=False):
        key = "state" if row.kind == "state" else "event"
        lines.append(f"INFO:quic:STATEMINE t={row.time:.9f} conn={row.trace} {key}={row.state}")
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def sides(tmp_path):
    a, b = make_set("a", 15, seed=1), make_set("b", 15, seed=2, recovery_mean=0.5)
    (tmp_path / "desk").mkdir()
    write_log(a, tmp_path / "desk" / "run1.log")
    save(b, tmp_path / "mobile.parquet")
    return tmp_path, a, b


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
def test_diff_writes_tables_and_diagram(sides):
    tmp, a, b = sides
    out = tmp / "out"
    res = CliRunner().invoke(
        main,
        [
            "diff",
            str(tmp / "desk"),
            str(tmp / "mobile.parquet"),
            "--out",
            str(out),
            "--label-a",
            "desktop",
            "--permutations",
            "999",
            "--bootstrap",
            "200",
        ],
    )
    assert res.exit_code == 0, res.output
    assert {p.name for p in out.iterdir()} == {
        "states_diff.csv",
        "transitions_diff.csv",
        "one_sided.csv",
        "notes.txt",
        "diff.dot",
        "diff.svg",
        "provenance.json",
    }
    states = pd.read_csv(out / "states_diff.csv")
    assert list(states.columns) == STATE_COLUMNS
    assert list(pd.read_csv(out / "transitions_diff.csv").columns) == TRANSITION_COLUMNS
    ref = diff(a, b, n_perm=999, n_boot=200, label_a="desktop", label_b="mobile").states
    merged = states.merge(ref, on="state", suffixes=("", "_ref"))
    assert len(merged) == len(ref)
    for col in ("fraction_a", "fraction_b", "p_value", "delta_lo"):
        assert (merged[col] - merged[f"{col}_ref"]).abs().max() < 1e-6
    assert "Recovery" in res.output and "desktop" in res.output and "mobile" in res.output


def test_diff_bad_input_exit_2(sides, tmp_path):
    tmp, _, _ = sides
    res = CliRunner().invoke(
        main,
        [
            "diff",
            str(tmp / "missing.log"),
            str(tmp / "mobile.parquet"),
            "--out",
            str(tmp / "o"),
            "--no-svg",
        ],
    )
    assert res.exit_code == 2 and "error" in res.output
    empty = tmp / "empty.log"
    empty.write_text("no statemine lines here\n")
    res = CliRunner().invoke(
        main,
        [
            "diff",
            str(empty),
            str(tmp / "mobile.parquet"),
            "--out",
            str(tmp / "o"),
            "--no-svg",
            "--format",
            "statemine",
        ],
    )
    assert res.exit_code == 2 and "empty.log" in res.output
    save(
        TraceSet.from_events(pd.DataFrame({"trace": [], "time": [], "state": []})),
        tmp / "none.parquet",
    )
    res = CliRunner().invoke(
        main,
        [
            "diff",
            str(tmp / "none.parquet"),
            str(tmp / "mobile.parquet"),
            "--out",
            str(tmp / "o"),
            "--no-svg",
        ],
    )
    assert res.exit_code == 2 and "side none has no traces" in res.output
    assert not (tmp / "o").exists()


def test_diff_one_trace_per_side_notes(tmp_path):
    for name, seed in (("x", 1), ("y", 2)):
        write_log(make_set(name, 1, seed=seed), tmp_path / f"{name}.log")
    res = CliRunner().invoke(
        main,
        [
            "diff",
            str(tmp_path / "x.log"),
            str(tmp_path / "y.log"),
            "--out",
            str(tmp_path / "o"),
            "--no-svg",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "smallest possible p-value" in (tmp_path / "o" / "notes.txt").read_text()
    assert "note:" in res.output
    assert not (tmp_path / "o" / "diff.svg").exists()


def test_no_svg_removes_a_stale_diagram(sides):
    tmp, _, _ = sides
    out = tmp / "out"
    out.mkdir()
    (out / "diff.svg").write_text("<svg>old</svg>")
    res = CliRunner().invoke(
        main,
        [
            "diff",
            str(tmp / "desk"),
            str(tmp / "mobile.parquet"),
            "--out",
            str(out),
            "--no-svg",
            "--permutations",
            "99",
            "--bootstrap",
            "0",
        ],
    )
    assert res.exit_code == 0, res.output
    assert not (out / "diff.svg").exists() and (out / "diff.dot").exists()


def test_side_labels_default_to_file_names():
    from statemine.commands import side_labels as _labels

    assert _labels(None, None, "runs/desktop", "x/mobile.parquet") == ("desktop", "mobile")
    assert _labels(None, None, "a/traces", "b/traces") == ("traces (A)", "traces (B)")
    assert _labels("traces", None, "a/traces", "b/traces") == ("traces", "traces (B)")
    assert _labels("d", "m", "a/traces", "b/traces") == ("d", "m")


def test_diff_strata_option(tmp_path):
    save(make_set("a", 4, seed=1, implementation="x"), tmp_path / "a.parquet")
    save(make_set("b", 4, seed=2, implementation="x"), tmp_path / "b.parquet")
    out = tmp_path / "o"
    res = CliRunner().invoke(
        main,
        [
            "diff",
            str(tmp_path / "a.parquet"),
            str(tmp_path / "b.parquet"),
            "--out",
            str(out),
            "--no-svg",
            "--strata",
            "implementation",
        ],
    )
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(
        main,
        [
            "diff",
            str(tmp_path / "a.parquet"),
            str(tmp_path / "b.parquet"),
            "--out",
            str(out),
            "--no-svg",
            "--strata",
            "stack",
        ],
    )
    assert res.exit_code == 2 and "no trace label 'stack'" in res.output


def test_diff_lab_folder_with_selections(tmp_path):
    """A 'statemine lab' output folder, conditions picked by trace labels."""
    lab = tmp_path / "mobile"
    for i, (profile, seed, rec) in enumerate((("desktop", 1, 0.1), ("mobile", 2, 0.6))):
        run = lab / "runs" / f"run{i}"
        run.mkdir(parents=True)
        ts = make_set(f"r{i}-", 12, seed=seed, recovery_mean=rec, profile=profile, role="server")
        save(ts, run / "traces.parquet")
    (lab / "manifest.json").write_text("{}")
    out = tmp_path / "o"
    res = CliRunner().invoke(
        main,
        [
            "diff",
            str(lab),
            str(lab),
            "--select",
            "role=server",
            "--select-a",
            "profile=desktop",
            "--select-b",
            "profile=mobile",
            "--label-a",
            "desktop",
            "--label-b",
            "mobile",
            "--out",
            str(out),
            "--no-svg",
        ],
    )
    assert res.exit_code == 0, res.output
    states = pd.read_csv(out / "states_diff.csv").set_index("state")
    assert states.loc["Recovery", "significant"] and states.loc["Recovery", "delta"] > 0
    res = CliRunner().invoke(
        main, ["diff", str(lab), str(lab), "--select-a", "profile=tablet", "--out", str(out)]
    )
    assert res.exit_code == 2 and "no trace matches profile=tablet" in res.output
    res = CliRunner().invoke(
        main, ["diff", str(lab), str(lab), "--select-a", "phone", "--out", str(out)]
    )
    assert res.exit_code == 2 and "LABEL=VALUE" in res.output
    res = CliRunner().invoke(
        main, ["diff", str(lab), str(lab), "--select-a", "os=ios", "--out", str(out)]
    )
    assert res.exit_code == 2 and "no label 'os'" in res.output
