"""One vocabulary on the command line: --out for every output path, help for every option,
suggestions for typos, numeric selections compared as numbers (issue 28)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from statemine.cli import main

ROOT = Path(__file__).resolve().parents[1]
LOG = (
    "STATEMINE t=0.0 conn=1 role=server state=SlowStart\n"
    "STATEMINE t=1.0 conn=1 role=server state=Recovery\n"
    "STATEMINE t=3.0 conn=1 role=server event=Close\n"
)


def _commands(group: click.Group, path: str) -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        yield f"{path} {name}", command
        if isinstance(command, click.Group):
            yield from _commands(command, f"{path} {name}")


COMMANDS = dict(_commands(main, "statemine"))


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_shown_option_has_help(name: str) -> None:
    missing = [
        "/".join(p.opts)
        for p in COMMANDS[name].params
        if isinstance(p, click.Option) and not p.hidden and not (p.help or "").strip()
    ]
    assert not missing, f"{name}: options without help: {missing}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_output_paths_are_spelled_out(name: str) -> None:
    shown = {o for p in COMMANDS[name].params if not getattr(p, "hidden", False) for o in p.opts}
    # Synoptic's own -o PREFIX stays, under infer --engine (the original tools' spelling)
    assert not (shown & {"--output"}), f"{name} still shows --output; the spelling is --out"
    assert "-o" not in shown or name == "statemine infer"


def test_old_output_spelling_still_works_with_a_note(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text(LOG)
    code, _, err = _run("read", str(log), "-o", str(tmp_path / "old.parquet"))
    assert code == 0 and (tmp_path / "old.parquet").is_file()
    assert "-o/--output is deprecated" in err and "use --out" in err
    code, _, err = _run("read", str(log), "--out", str(tmp_path / "new.parquet"))
    assert code == 0 and "deprecated" not in err
    assert (tmp_path / "old.parquet").read_bytes() == (tmp_path / "new.parquet").read_bytes()
    code, _, err = _run("read", str(log), "--out", "x.parquet", "-o", "y.parquet")
    assert code == 2 and err.count("\n") == 1 and "--out only" in err
    code, _, err = _run("read", str(log))
    assert code == 2 and "missing option --out" in err


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["infr", "x.log"], "Did you mean 'infer'?"),
        (["lab", "findigns"], "Did you mean 'findings'?"),
        (["patch", "lst"], "Did you mean 'list'?"),
        (["infer", "--help-me", "x.log"], "did you mean --help?"),
        (["infer", "--confidnce", "0.9", "x.log"], "did you mean --confidence?"),
        (["infer", "--randomSeed=3", "x.log"], "--randomSeed is a Synoptic-family flag"),
    ],
)
def test_typos_get_a_suggestion(args: list[str], suggestion: str) -> None:
    code, _, err = _run(*args)
    assert code == 2 and err.count("\n") == 1, err
    assert suggestion in err
    assert "Synoptic's flags need" not in err


def test_an_unknown_word_gets_no_made_up_suggestion() -> None:
    code, _, err = _run("infer", "--zzzzqqq", "x.log")
    assert code == 2 and "did you mean" not in err.lower() and "Synoptic" not in err


@pytest.mark.skipif(not (ROOT / "traces").is_dir(), reason="shipped traces/ absent")
def test_numeric_selections_compare_as_numbers() -> None:
    folder = str(ROOT / "traces" / "quic-go-versions")
    base = ["infer", folder, "--select", "role=server", "--select", "version=v0.63.0"]
    shown = {
        v: _run(*base, "--select", f"jitter_ms={v}", "--bootstrap", "0")
        for v in ("10", "10.0", "1e1")
    }
    assert {code for code, _, _ in shown.values()} == {0}
    assert len({out for _, out, _ in shown.values()}) == 1  # the same 20 traces each time
    code, _, err = _run(*base, "--select", "jitter_ms=10.5")
    assert code == 2 and "no trace matches" in err


@pytest.mark.parametrize("group", ["", "lab", "store", "patch", "tcp"])
def test_group_listings_show_whole_sentences(group: str) -> None:
    result = CliRunner().invoke(main, [*group.split(), "--help"], env={"COLUMNS": "80"})
    listing = result.stdout.split("Commands:", 1)[1]
    assert result.exit_code == 0
    entries = re.split(r"\n  (?=\S)", listing.strip("\n"))  # one per command
    assert len(entries) >= 2
    for entry in entries:
        text = " ".join(entry.split()[1:])
        assert text.endswith(".") and not text.endswith("..."), f"cut short: {entry!r}"
    assert all(len(line) <= 80 for line in listing.splitlines())
