"""statemine report: self-contained, escaped HTML with the expected sections."""

from __future__ import annotations

import base64
import re
import shutil
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from golden import ROOT
from test_diff_data import make_set

from statemine.cli import main
from statemine.errors import UsageError
from statemine.output.html_report import Outcomes, build_report
from statemine.traces import TraceSet, concat, load, save

pytestmark = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz 'dot' is not installed"
)
EVIL = '<script>alert("x")</script>'


class Collect(HTMLParser):
    """Tags, attributes and text of a page (to check what a browser would see)."""

    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(page: str) -> Collect:
    c = Collect()
    c.feed(page)
    return c


def evil_set(prefix: str, n: int, seed: int) -> TraceSet:
    ts = make_set(prefix, n, seed=seed, cwnd=True)
    ev = ts.events.copy()
    ev["state"] = ev["state"].astype(str).replace({"RetransmissionTimeout": EVIL})
    return TraceSet.from_events(ev, ts.traces.assign(implementation='q&"go'))


def results() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [
        {
            "stack": stack,
            "profile": prof,
            "rate_mbps": rate,
            "object_size_bytes": size,
            "ok": True,
            "plt_s": (size * 8 / rate / 1e6 + 0.05)
            * (1.4 if prof == "mobile" and size > 10_000 else 1)
            * (1 + 0.03 * rng.standard_normal()),
        }
        for stack in ("s1", "s2")
        for rate in (1, 10)
        for size in (10_000, 1_000_000)
        for prof in ("desktop", "mobile")
        for _ in range(4)
    ]
    return pd.DataFrame(rows)


def test_two_sided_report_is_self_contained_and_escaped():
    page = build_report(
        evil_set("a", 12, 1),
        evil_set("b", 12, 2),
        label_a="<b>desk</b>",
        label_b="mob&ile",
        n_perm=199,
        n_boot=100,
        outcomes=Outcomes(results(), by="profile", value_a="desktop", value_b="mobile"),
    )
    doc = parse(page)
    tags = [t for t, _ in doc.tags]
    assert "script" not in tags and "link" not in tags and "iframe" not in tags
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    text = "".join(doc.text)
    assert (
        EVIL in text and "<b>desk</b>" in text and "mob&ile" in text and 'q&"go' in text
    )  # shown as text
    assert EVIL not in page and "<b>desk</b>" not in page
    images = [a["src"] for t, a in doc.tags if t == "img"]
    # diff diagram + 2 x (cwnd timeline) + 2 heatmaps (one per stack)
    assert len(images) == 5
    for src in images:
        assert src.startswith("data:image/svg+xml;base64,")
        svg = base64.b64decode(src.split(",", 1)[1]).decode()
        assert "<svg" in svg and "<script" not in svg
    for heading in ("Inputs", "What changed", "Timelines", "Outcomes: plt_s"):
        assert heading in text


def test_one_sided_report_has_model_and_tables():
    page = build_report(make_set("a", 5, seed=1), label_a="desktop")
    doc = parse(page)
    text = "".join(doc.text)
    assert "State machine" in text and "Transitions" in text and "What changed" not in text
    assert "the traces log no cwnd" in text
    assert sum(1 for t, _ in doc.tags if t == "img") == 1


def test_report_without_states_is_refused():
    ev = pd.DataFrame({"trace": ["x"], "time": [0.0], "state": ["Close"], "kind": ["event"]})
    with pytest.raises(UsageError, match="no state lines"):
        build_report(TraceSet.from_events(ev))


def test_report_cli(tmp_path):
    save(make_set("a", 6, seed=1, cwnd=True), tmp_path / "desktop.parquet")
    save(make_set("b", 6, seed=2, cwnd=True), tmp_path / "mobile.parquet")
    results().to_csv(tmp_path / "results.csv", index=False)
    out = tmp_path / "r" / "report.html"
    res = CliRunner().invoke(
        main,
        [
            "report",
            str(tmp_path / "desktop.parquet"),
            str(tmp_path / "mobile.parquet"),
            "--out",
            str(out),
            "--permutations",
            "99",
            "--bootstrap",
            "50",
            "--results",
            str(tmp_path / "results.csv"),
            "--by",
            "profile",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "Outcomes: plt_s" in out.read_text()
    res = CliRunner().invoke(
        main,
        [
            "report",
            str(tmp_path / "desktop.parquet"),
            "--out",
            str(tmp_path / "x.html"),
            "--results",
            str(tmp_path / "results.csv"),
        ],
    )
    assert res.exit_code == 2 and "--by" in res.output and not (tmp_path / "x.html").exists()
    res = CliRunner().invoke(
        main,
        [
            "report",
            str(tmp_path / "desktop.parquet"),
            "--out",
            str(tmp_path / "x.html"),
            "--results",
            str(tmp_path / "results.csv"),
            "--by",
            "profile",
            "--values",
            "desktop,tablet",
        ],
    )
    assert res.exit_code == 2 and "tablet" in res.output and not (tmp_path / "x.html").exists()


def test_report_flags_copies_and_power_and_shows_the_median_trace_per_stratum():
    """3 copies a side: the page says underpowered and pseudo-replicates; the timelines
    show, per side and stratum, the trace whose share of the reported state is the median."""
    from test_diff_evidence import FAST, SLOW, copies

    from statemine.output.timeline import representative_trace
    from statemine.units import p_value_report

    a = concat(
        [
            copies("a", 3, FAST, implementation="x"),
            make_set("c", 5, seed=3, cwnd=True, implementation="y"),
        ]
    )
    b = concat(
        [
            copies("b", 3, SLOW, implementation="x"),
            make_set("d", 5, seed=4, cwnd=True, implementation="y", recovery_mean=0.6),
        ]
    )
    for ts in (a, b):  # give the copies a cwnd so every group gets a timeline
        ts.events["cwnd"] = ts.events["cwnd"].fillna(10_000.0)
    page = build_report(
        a, b, label_a="desk", label_b="mob", n_perm=99, n_boot=50, strata="implementation"
    )
    text = " ".join("".join(parse(page).text).split())
    assert (
        "Pseudo-replicates (a side's traces give identical shares): CongestionAvoidance, Recovery, SlowStart"
        in text
    )
    # C(6, 3) C(10, 5) = 5040 relabellings > 99: the Monte Carlo floor 1 / 100, times the states
    n_states = len(
        set(a.events.loc[a.events["kind"] == "state", "state"])
        | set(b.events.loc[b.events["kind"] == "state", "state"])
    )
    floor, floor_holm = p_value_report(1 / 100), p_value_report(min(1.0, n_states / 100))
    assert f"smallest p-value these traces allow is {floor}, {floor_holm} after Holm" in text
    assert ("underpowered, no state can be significant" in text) == (n_states / 100 >= 0.05)
    headings = re.findall(r"<h3>([^<]*): trace ([^<]*?) \(Recovery ([0-9.]+)% of its time", page)
    assert [h[0] for h in headings] == [
        "desk / implementation=x",
        "desk / implementation=y",
        "mob / implementation=x",
        "mob / implementation=y",
    ]
    for (_group, trace, share), (ts, impl) in zip(
        headings, [(a, "x"), (a, "y"), (b, "x"), (b, "y")]
    ):
        expected = representative_trace(ts.select({"implementation": impl}), "Recovery")
        assert trace == expected[0] and float(share) == pytest.approx(100 * expected[1], abs=0.05)


def test_timelines_per_implementation_when_a_side_mixes_them():
    a = concat(
        [
            make_set("a", 3, seed=1, cwnd=True, implementation="x"),
            make_set("c", 3, seed=2, cwnd=True, implementation="y"),
        ]
    )
    b = concat(
        [
            make_set("b", 3, seed=3, cwnd=True, implementation="x"),
            make_set("d", 3, seed=4, cwnd=True, implementation="y"),
        ]
    )
    page = build_report(a, b, label_a="A", label_b="B", n_perm=99, n_boot=20)
    assert re.findall(r"<h3>([^<:]*): trace", page) == [
        "A / implementation=x",
        "A / implementation=y",
        "B / implementation=x",
        "B / implementation=y",
    ]


def test_report_tables_use_the_units_of_the_terminal():
    """Shares in percent, dwell times with a unit, probabilities with two decimals, by hand:
    SlowStart 0-0.25 s, Recovery 0.25-1 s, SlowStart again at 1 s (the last line, 0 s)."""
    ts = TraceSet.from_events(
        pd.DataFrame(
            {
                "trace": ["a"] * 3,
                "time": [0.0, 0.25, 1.0],
                "state": ["SlowStart", "Recovery", "SlowStart"],
            }
        )
    )
    page = build_report(ts, n_boot=0)
    rows = re.findall(r"<tr>(.*?)</tr>", page, re.DOTALL)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in rows]
    heads = [re.findall(r"<th[^>]*>(.*?)</th>", r) for r in rows]
    assert [
        "state",
        "share of time",
        "95% interval",
        "mean dwell",
        "median dwell",
        "visits",
        "traces",
    ] in heads
    by_state = {c[0]: c for c in cells if len(c) == 7}  # the states table
    assert by_state["Recovery"][1] == "75.0%" and by_state["Recovery"][3] == "750.0 ms"
    assert by_state["SlowStart"][1] == "25.0%" and by_state["SlowStart"][3] == "125.0 ms"
    assert by_state["SlowStart"][5] == "2" and by_state["Recovery"][6] == "1"  # visits, traces
    assert ["from", "to", "count", "probability", "95% interval"] in heads
    edge = next(c for c in cells if c[:2] == ["SlowStart", "Recovery"])
    assert edge[3] == "0.50"  # from, to, count, probability: 1 of SlowStart's 2 exits


def test_the_same_input_gives_the_same_report_byte_for_byte(tmp_path):
    """The embedded matplotlib figures carry no creation date and no random ids; only the
    provenance's date (and version) may differ between two runs of one command."""
    from golden import normalize_provenance

    save(make_set("a", 6, seed=1, cwnd=True), tmp_path / "desktop.parquet")
    pages = []
    for _ in range(2):
        res = CliRunner().invoke(
            main, ["report", str(tmp_path / "desktop.parquet"), "--out", str(tmp_path / "r.html")]
        )
        assert res.exit_code == 0, res.output
        pages.append((tmp_path / "r.html").read_text())
    assert b"<svg" in base64_svgs(pages[0].encode())
    assert 'id="prov-date">' in pages[0] and "<DATE>" in normalize_provenance(pages[0])
    assert normalize_provenance(pages[0]) == normalize_provenance(pages[1])


def base64_svgs(page: bytes) -> bytes:
    """The decoded SVG images of a report page, concatenated."""
    import base64
    import re

    found = re.findall(rb"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", page)
    return b"".join(base64.b64decode(f) for f in found)


def downloads(page: str) -> dict[str, bytes]:
    """The files a report page carries as download links, name -> bytes."""
    found = re.findall(r'<a download="([^"]+)" href="data:[^;]+;base64,([A-Za-z0-9+/=]+)"', page)
    return {name: base64.b64decode(data) for name, data in found}


def embedded_svgs(page: str) -> list[bytes]:
    """The SVG images of a report page, decoded, in order."""
    found = re.findall(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", page)
    return [base64.b64decode(f) for f in found]


def test_report_draws_through_the_files_of_infer_and_diff_out(tmp_path):
    """One chain: the report's model diagram and files are those `infer --out` writes, its
    diff diagram and files those of `diff --out` -- byte for byte, for the same options."""
    save(make_set("a", 6, seed=1, cwnd=True), tmp_path / "desktop.parquet")
    save(make_set("b", 6, seed=2, cwnd=True), tmp_path / "mobile.parquet")
    a, b = str(tmp_path / "desktop.parquet"), str(tmp_path / "mobile.parquet")
    stats = ["--bootstrap", "50", "--seed", "3"]
    run = lambda *args: CliRunner().invoke(main, [*args, *stats])  # noqa: E731
    assert run("infer", a, "--title", "desktop", "--out", str(tmp_path / "infer")).exit_code == 0
    assert run("report", a, "--out", str(tmp_path / "one.html")).exit_code == 0
    page = (tmp_path / "one.html").read_text()
    infer_out = {p.name: p.read_bytes() for p in (tmp_path / "infer").iterdir()}
    assert embedded_svgs(page)[0] == infer_out.pop("model.svg")
    assert b'"command": "infer"' in infer_out.pop("provenance.json")  # the command's own
    assert downloads(page) == infer_out
    assert set(infer_out) == {"states.csv", "transitions.csv", "model.dot", "model.json"}

    args = (a, b, "--permutations", "99")
    assert run("diff", *args, "--out", str(tmp_path / "diff")).exit_code == 0
    assert run("report", *args, "--out", str(tmp_path / "two.html")).exit_code == 0
    page = (tmp_path / "two.html").read_text()
    diff_out = {p.name: p.read_bytes() for p in (tmp_path / "diff").iterdir()}
    assert embedded_svgs(page)[0] == diff_out.pop("diff.svg")
    assert b'"command": "diff"' in diff_out.pop("provenance.json")
    assert downloads(page) == diff_out
    assert "one_sided.csv" in diff_out and "notes.txt" in diff_out


@pytest.mark.parametrize("why", ["too many states", "no Graphviz"])
def test_report_and_infer_say_the_same_when_the_model_is_not_drawn(tmp_path, monkeypatch, why):
    """A model too large to draw (here: more than 2 states) or no Graphviz: the page is
    still written, with the note `infer --out` prints and model.dot to download."""
    from statemine.commands import infer_to_dir
    from statemine.output import diagram

    if why == "too many states":
        monkeypatch.setattr(diagram, "DRAWN_STATES", 2)
        expected = "model.svg not drawn: 5 states are more than Graphviz lays out in reasonable "
        expected += "time (2); model.dot has the model"
    else:
        monkeypatch.setattr(diagram, "graphviz_available", lambda: False)
        expected = "model.svg not drawn: Graphviz's dot is not installed (apt-get install "
        expected += "graphviz); model.dot has the model"
    save(make_set("a", 6, seed=1, cwnd=True), tmp_path / "desktop.parquet")
    out = infer_to_dir(tmp_path / "desktop.parquet", tmp_path / "infer", title="desktop")
    assert expected in out.notes and "model.svg" not in out.written
    page = build_report(load(tmp_path / "desktop.parquet"), label_a="desktop")
    assert expected in parse(page).text  # one paragraph, whole
    assert 'alt="state machine of desktop"' not in page
    assert downloads(page)["model.dot"] == (tmp_path / "infer" / "model.dot").read_bytes()


#: A p-value as the page shows every one: two significant digits, or the floor.
P_SHOWN = re.compile(r"^(< 0\.0001|1\.0|0\.[1-9][0-9]|0\.0*[1-9][0-9]|n/a)$")


def tables_of(page: str) -> list[tuple[list[str], list[list[str]]]]:
    """Each table of a page as (header titles, rows of cell texts)."""
    import html

    out = []
    for table in re.findall(r"<table>(.*?)</table>", page, re.DOTALL):
        heads = [html.unescape(h) for h in re.findall(r"<th(?: [^>]*)?>(.*?)</th>", table)]
        rows = [
            [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r)]
            for r in re.findall(r"<tr>(.*?)</tr>", table, re.DOTALL)
        ]
        out.append((heads, [r for r in rows if r]))
    return out


def test_every_number_has_its_unit_and_every_p_value_one_format():
    """Readable titles (no raw column names), flags as words, p-values in one format on
    the tables and in the text, numbers in right-aligned cells that do not wrap."""
    page = build_report(
        make_set("a", 12, seed=1, cwnd=True),
        make_set("b", 12, seed=2, cwnd=True, recovery_mean=0.6),
        label_a="desk",
        label_b="mob",
        n_perm=999,
        n_boot=50,
        outcomes=Outcomes(results(), by="profile", value_a="desktop", value_b="mobile"),
    )
    tables = tables_of(page)
    assert len(tables) >= 6  # inputs, ranking, states, transitions, why (2), outcomes
    p_cells = 0
    for heads, rows in tables:
        for title in heads:
            assert not re.fullmatch(r"[a-z]+(_[a-z]+)+", title), title  # e.g. pct_diff, mean_a
        for row in rows:
            assert len(row) == len(heads)
            for title, cell in zip(heads, row):
                assert cell not in ("True", "False", "nan", "NaN"), (title, cell)
                if title.startswith("p ") or title == "p":
                    p_cells += 1
                    assert P_SHOWN.match(cell), (title, cell)
    assert p_cells > 20
    text = "".join(parse(page).text)
    shown = re.findall(r"\bp (\d[\d.]*\d)", text)  # "p 0.00050 (Holm)" in the Why text
    shown += re.findall(r"traces allow is ([^,]+), ([^ ]+) after Holm", text)[0]
    assert len(shown) > 4 and all(P_SHOWN.match(p) for p in shown), shown
    assert not re.search(r"\d\.?\d*e-\d", text)  # no exponent notation anywhere
    outcome = next(t for t in tables if "difference of the means" in t[0])
    assert outcome[0][:3] == ["stack", "rate (Mbit/s)", "object size (bytes)"]
    assert {r[outcome[0].index("significant (p < 0.01)")] for r in outcome[1]} <= {"yes", "no"}
    assert all(
        r[outcome[0].index("mean plt_s desktop")].endswith((" s", " ms")) for r in outcome[1]
    )
    # numbers: class "n" (right, no wrap); every table in a box that scrolls sideways
    assert page.count('<div class="scroll"><table>') == len(tables)
    assert re.search(r"td\.n,th\.n\{text-align:right;white-space:nowrap\}", page)
    assert '<td class="n">+0.' in page or '<td class="n">-0.' in page


def test_the_heatmap_axes_are_the_scenario_columns_that_vary():
    """quiche-bbr's results vary in loss, object size and cc (the side): one heatmap of
    object size x loss, none of the default rate axis that does not vary there; mobile's
    vary only in the stack: no heatmap and no note about it."""
    from statemine.outcomes import read_results

    ts = make_set("a", 4, seed=1)
    bbr = read_results(ROOT / "traces/quiche-bbr/results.csv")
    page = build_report(
        ts, outcomes=Outcomes(bbr, by="cc", value_a="cubic", value_b="bbr2"), n_boot=0
    )
    assert page.count('alt="heatmap ') == 1 and "No heatmap" not in page
    mobile = read_results(ROOT / "traces/mobile/results.csv")
    page = build_report(
        ts, outcomes=Outcomes(mobile, by="profile", value_a="desktop", value_b="mobile"), n_boot=0
    )
    assert 'alt="heatmap ' not in page and "No heatmap" not in page
    assert "Outcomes: plt_s" in page  # the table is there
    # asked for an axis that does not vary there: said so
    page = build_report(
        ts,
        outcomes=Outcomes(
            mobile, by="profile", value_a="desktop", value_b="mobile", rows="rate_mbps"
        ),
        n_boot=0,
    )
    assert (
        "No heatmap: --rows rate_mbps is not a scenario column that varies (those that do: stack)"
        in page
    )
    from statemine.outcomes import compare_outcomes
    from statemine.output.html_report import heatmap_axes

    table = compare_outcomes(bbr, by="cc", a="cubic", b="bbr2")
    assert heatmap_axes(table, ["loss", "object_size_bytes"]) == ("object_size_bytes", "loss")
