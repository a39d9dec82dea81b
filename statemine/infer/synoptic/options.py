"""The command lines of Synoptic, Perfume and k-tails (``SynopticMain``, ``PerfumeMain``,
``KTailsMain`` of ModelInference/synoptic), parsed the way their plume-lib option parser
does, each option either honoured or refused with the reason.

Learnt from Synoptic's documented option list (its wiki page "Synoptic Command Line
Options", ``SynopticOptions``/``PerfumeOptions``/``KTailsOptions``/``AbstractOptions``);
no code is taken from it.  Forms accepted, as plume-lib accepts them: ``--name=value``,
``--name value``, ``-x value``, ``-x=value``, a bare boolean ``--name``/``-x`` (true),
long aliases with one or two dashes.  The value of an option that takes one is the next
argument verbatim (``-s --`` gives the separator ``--``).  Every other argument is a log
file.  ``-c FILE`` reads arguments from a Java properties file (one ``key value`` or
``key=value`` per line); the command line overrides the file, files may name further
files, a loop or a missing file is an error.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import UsageError

TOOLS = ("synoptic", "perfume", "ktails")


@dataclass(frozen=True)
class Opt:
    """One documented option: ``kind`` is bool/int/long/float/str/list; ``tools`` where it
    exists; ``refuse`` (value -> reason or None) says when statemine refuses a value."""

    name: str
    kind: str
    default: Any
    short: str | None = None
    aliases: tuple[str, ...] = ()
    tools: tuple[str, ...] = TOOLS
    help: str = ""
    refuse_reason: str | None = None  # refused whenever the value differs from the default
    defaults_by_tool: tuple[tuple[str, Any], ...] = ()

    def default_for(self, tool: str) -> Any:
        return dict(self.defaults_by_tool).get(tool, self.default)


_NO_PO = "statemine reads totally ordered logs only (no vector times / relations)"
_NO_PNG = "statemine does not draw the PNG Synoptic renders; run Graphviz on the .dot file"
_SYN = ("synoptic",)
_SYN_PERF = ("synoptic", "perfume")

#: Synoptic's documented options (plus Perfume's and k-tails' own), in its usage order.
OPTIONS: tuple[Opt, ...] = (
    # General
    Opt("help", "bool", False, "h", ("help",), help="print the options and exit"),
    Opt("allHelp", "bool", False, "H", help="print every option and exit"),
    Opt("version", "bool", False, "V", ("version",), help="print the version and exit"),
    # Execution
    Opt("logLvlQuiet", "bool", False, "q", ("quiet",), help="print no summary line"),
    Opt("logLvlVerbose", "bool", False, "v", ("verbose",), help="print counts of each stage"),
    Opt(
        "useFSMChecker",
        "bool",
        True,
        "f",
        ("use-fsm-checker",),
        _SYN,
        help="statemine's checker is an FSM checker; the verdicts are the same either way",
    ),
    Opt("randomSeed", "long", None, help="seed of the refinement's random choices"),
    Opt(
        "exactBudget",
        "float",
        0.0,
        aliases=("exact-budget",),
        tools=_SYN_PERF,
        help="statemine's own: polish the model with OR-Tools' CP-SAT for this many "
        "deterministic seconds (0: off; needs statemine[exact])",
    ),
    Opt(
        "polishChecks",
        "long",
        24,
        aliases=("polish-checks",),
        tools=("perfume",),
        help="statemine's own: merge checks per event spent polishing the model (groups "
        "of same-type nodes repacked; 0: off, the models of before; more: smaller models "
        "for about proportionally more CPU, e.g. 32: 1.2-1.5x the CPU, 0-7% fewer nodes "
        "on 1e3-1e4-event logs)",
    ),
    Opt("separateVTimeIndexSets", "str", None, tools=_SYN, refuse_reason=_NO_PO),
    Opt("multipleRelations", "bool", False, tools=_SYN, refuse_reason=_NO_PO),
    Opt(
        "stateProcessing",
        "bool",
        False,
        tools=_SYN,
        refuse_reason="state processing (STATE groups) is not implemented",
    ),
    Opt(
        "testGeneration",
        "bool",
        False,
        "t",
        ("test-generation",),
        _SYN,
        refuse_reason="abstract test generation is not implemented",
    ),
    Opt(
        "supportCountThreshold",
        "int",
        0,
        tools=_SYN_PERF,
        help="keep only invariants whose support count is greater than this",
    ),
    Opt(
        "ignoreIntrByInvs",
        "bool",
        True,
        tools=_SYN_PERF,
        defaults_by_tool=(("perfume", False),),
        help="drop 'a IntrBy b' invariants (Synoptic: always; Perfume: keeps them by default)",
    ),
    Opt("ignoreNFbyInvs", "bool", False, tools=_SYN_PERF, help="drop NeverFollowedBy invariants"),
    # Parser
    Opt("separatorRegExp", "str", None, "s", ("partition-separator",)),
    Opt("regExps", "list", None, "r", ("regexp",)),
    Opt("partitionRegExp", "str", r"\k<FILE>", "m", ("partition-mapping",)),
    Opt("ignoreNonMatchingLines", "bool", False, "i"),
    Opt(
        "enablePerfDebugging",
        "bool",
        False,
        "p",
        tools=_SYN,
        refuse_reason="performance debugging is Perfume: use --engine perfume",
    ),
    Opt(
        "keepOrder",
        "bool",
        False,
        defaults_by_tool=(("perfume", True),),
        help="keep events in file order instead of sorting by time",
    ),
    Opt(
        "recoverFromParseErrors",
        "bool",
        False,
        aliases=("ignore-parse-errors",),
        refuse_reason="statemine stops at the first line it cannot parse (use -i to skip "
        "lines no regex matches)",
    ),
    Opt(
        "debugParse",
        "bool",
        False,
        aliases=("debugParse",),
        refuse_reason="parser debugging output is not implemented",
    ),
    Opt(
        "dateFormat",
        "str",
        "dd/MMM/yyyy:HH:mm:ss",
        aliases=("dateFormat",),
        help="Java SimpleDateFormat pattern of DATETIME groups (see javadate.py)",
    ),
    # Input
    Opt("argsFilename", "str", None, "c", ("argsfile",), help="read arguments from a file"),
    # Output
    Opt("outputPathPrefix", "str", None, "o", ("output-prefix",)),
    Opt(
        "outputSupportCount",
        "bool",
        False,
        tools=_SYN_PERF,
        help="support counts in the invariants file",
    ),
    Opt(
        "outputInvariantsToFile", "bool", False, tools=_SYN_PERF, help="write PREFIX.invariants.txt"
    ),
    Opt(
        "exportAsGML",
        "bool",
        False,
        aliases=("export-as-gml",),
        help="write the model as PREFIX.gml instead of PREFIX.dot",
    ),
    Opt("dotExecutablePath", "str", None, "d", ("dot-executable",), refuse_reason=_NO_PNG),
    Opt(
        "outputEdgeLabels",
        "bool",
        True,
        aliases=("outputEdgeLabels",),
        tools=_SYN,
        help="false: no edge labels",
    ),
    Opt(
        "outputProbLabels",
        "bool",
        True,
        aliases=("outputProbLabels",),
        defaults_by_tool=(("perfume", False),),
        help="P: on edge labels",
    ),
    Opt(
        "outputCountLabels",
        "bool",
        False,
        aliases=("outputCountLabels",),
        help="Cnt: on edge labels",
    ),
    Opt(
        "showMedian",
        "bool",
        False,
        tools=("perfume",),
        refuse_reason=(
            "median times on edges are not implemented: the label text Perfume writes "
            "for them is not in the Synoptic source versions available here (and its "
            "'median' is the middle of the unsorted deltas)"
        ),
    ),
    Opt("showTerminalNode", "bool", True, help="draw the TERMINAL node"),
    Opt("showInitialNode", "bool", True, help="draw the INITIAL node"),
    Opt("outputJSON", "bool", False, "j", ("output-json",), help="write PREFIX.json"),
    Opt(
        "outputLTS",
        "bool",
        False,
        aliases=("lts",),
        tools=("synoptic", "ktails"),
        help="write PREFIX.lts (FSP labelled transition system)",
    ),
    Opt("noModelOutput", "bool", False, help="write no model file"),
    Opt("kTailsK", "int", 2, "k", tools=("ktails",), help="k of k-tails (>= 0)"),
    Opt(
        "inputDelta",
        "bool",
        False,
        tools=("perfume",),
        refuse_reason="time deltas as input are not implemented",
    ),
    Opt(
        "traceNormalization",
        "bool",
        False,
        aliases=("trace-norm",),
        tools=_SYN_PERF,  # SynopticOptions has it too (it acts on times, i.e. Perfume)
        refuse_reason="trace-wise time normalisation is not implemented",
    ),
    # Verbosity
    Opt(
        "dumpInvariants", "bool", False, tools=_SYN_PERF, help="print the mined invariants (stderr)"
    ),
    Opt(
        "dumpTraceGraphDotFile",
        "bool",
        False,
        refuse_reason="the trace-graph dump is not implemented",
    ),
    Opt("dumpTraceGraphPngFile", "bool", False, refuse_reason=_NO_PNG),
    Opt(
        "dumpInitialPartitionGraph",
        "bool",
        False,
        help="write the initial graph (one node per type) to PREFIX.condensed.dot",
    ),
    Opt(
        "dumpIntermediateStages",
        "bool",
        False,
        refuse_reason="intermediate-stage dumps are not implemented",
    ),
    # Debugging
    Opt("logLvlExtraVerbose", "bool", False, help="as -v"),
    Opt(
        "ignoreInvsOverETypeSet",
        "str",
        None,
        tools=_SYN_PERF,
        help="drop invariants all of whose event types are in this ';'-separated set",
    ),
    Opt(
        "useTransitiveClosureMining",
        "bool",
        False,
        tools=_SYN,
        refuse_reason="statemine has one miner (chain walking, Synoptic's default)",
    ),
    Opt(
        "mineNeverConcurrentWithInv",
        "bool",
        True,
        tools=_SYN,
        help="only changes partially ordered logs, which statemine refuses: no effect",
    ),
    Opt("onlyMineInvariants", "bool", False, tools=_SYN_PERF, help="mine, write, stop"),
    Opt("noCoarsening", "bool", False, tools=_SYN_PERF),
    Opt(
        "doBenchmarking",
        "bool",
        False,
        refuse_reason="use benchmarks/bench_synoptic.py for timings",
    ),
    Opt(
        "internCommonStrings",
        "bool",
        True,
        help="a Java memory optimisation: no effect on the result",
    ),
    Opt("runTests", "bool", False, refuse_reason="runs Synoptic's own Java unit tests"),
    Opt("runAllTests", "bool", False, refuse_reason="runs Synoptic's own Java tests"),
    Opt(
        "performExtraChecks",
        "bool",
        False,
        help="check the final model against every trace and invariant; fail if it does not hold",
    ),
    Opt("noRefinement", "bool", False, tools=_SYN_PERF),
)

_TRUE = ("true", "t", "yes", "y", "1")
_FALSE = ("false", "f", "no", "n", "0")
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


@dataclass
class ParsedArgs:
    """Option values by Synoptic name (defaults filled in for the tool), the log files in
    order, and the options that were given explicitly."""

    tool: str
    values: dict[str, Any]
    logs: list[str]
    given: set[str] = field(default_factory=set)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


def _index(tool: str) -> tuple[dict[str, Opt], dict[str, Opt]]:
    """(long names and aliases -> Opt, short letters -> Opt) for ``tool``."""
    longs, shorts = {}, {}
    for opt in OPTIONS:
        if tool not in opt.tools:
            continue
        for name in (opt.name, *opt.aliases):
            longs[name] = opt
        if opt.short:
            shorts[opt.short] = opt
    return longs, shorts


def _convert(opt: Opt, text: str, where: str) -> Any:
    """``text`` as a value of ``opt``; UsageError naming the option when it is not one."""
    if opt.kind == "bool":
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise UsageError(f"{where}: --{opt.name} takes true or false, not {text!r}")
    if opt.kind == "float":
        try:
            number = float(text)
        except ValueError:
            number = float("nan")
        if not math.isfinite(number) or number < 0:
            raise UsageError(f"{where}: --{opt.name} takes a number >= 0, not {text!r}")
        return number
    if opt.kind in ("int", "long"):
        if not re.fullmatch(r"[+-]?\d{1,19}", text.strip()):
            raise UsageError(f"{where}: --{opt.name} takes an integer, not {text!r}")
        value = int(text)
        if not _LONG_MIN <= value <= _LONG_MAX or (opt.kind == "int" and abs(value) >= 1 << 31):
            raise UsageError(f"{where}: --{opt.name} is out of range: {text}")
        return value
    return text


def _tokens(args: Sequence[str], tool: str, where: str) -> list[tuple[Opt | str, str | None]]:
    """Split ``args`` into (Opt, value text) pairs and (log path, None) pairs."""
    longs, shorts = _index(tool)
    out: list[tuple[Opt | str, str | None]] = []
    k = 0
    while k < len(args):
        arg = args[k]
        k += 1
        m = re.fullmatch(r"(--?)([A-Za-z][\w-]*)(?:=(.*))?", arg, re.S)
        if not m or arg == "-":
            out.append((arg, None))
            continue
        dashes, name, value = m.groups()
        if name == "seed" and dashes == "--":
            opt = longs["randomSeed"]
        elif name == "synoptic-jar" and dashes == "--":
            opt = Opt("synopticJar", "str", None)
        elif dashes == "-" and name in shorts:
            opt = shorts[name]
        elif name in longs:
            opt = longs[name]
        else:
            known = next((o for o in OPTIONS if name in (o.name, *o.aliases, o.short)), None)
            if known is not None:
                raise UsageError(
                    f"{where}: {arg}: {tool} has no option --{known.name} "
                    f"(it is an option of {', '.join(known.tools)})"
                )
            raise UsageError(
                f"{where}: unknown option {arg} for {tool} (statemine follows "
                f"{tool}'s documented options; see --help)"
            )
        if value is None and opt.kind != "bool":
            if k >= len(args):
                raise UsageError(f"{where}: {arg} needs a value")
            value = args[k]
            k += 1
        out.append((opt, value))
    return out


def _read_args_file(path: str, chain: tuple[str, ...]) -> list[str]:
    """The arguments in a Java properties file (``key value`` / ``key=value`` lines,
    ``#``/``!`` comments, backslash escapes, continuation lines): ``-x value`` for a
    one-letter key, ``--key=value`` for a long one.  ``chain``: the files that named this
    one, for the loop check."""
    resolved = str(Path(path).resolve())
    if resolved in chain:
        names = " -> ".join([*chain, resolved])
        raise UsageError(f"-c {path}: arguments files name each other in a loop: {names}")
    raw = _args_file_text(path)
    out: list[str] = []
    logical = ""
    for line in raw.splitlines():
        line = (logical + line.lstrip()) if logical else line.lstrip()
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical = line[:-1]
            continue
        logical = ""
        if not line or line[0] in "#!":
            continue
        m = re.match(r"((?:[^\\=:\s]|\\.)+)\s*[=:\s]?\s*(.*)$", line, re.S)
        if not m:
            continue
        key, value = (_unescape(x) for x in m.groups())
        key = key if key.startswith("-") else "--" + key
        if re.fullmatch(r"-[A-Za-z]", key):
            out += [key, value] if value != "" else [key]
        else:
            out.append(f"{key}={value}" if value != "" else key)
    return out


#: The largest arguments file read (bytes); a larger one (or /dev/zero) is refused after
#: reading one byte more, so memory stays bounded.
ARGS_FILE_LIMIT = 1 << 20


def _args_file_text(path: str) -> str:
    """The text of arguments file ``path``: a regular file of at most
    :data:`ARGS_FILE_LIMIT` bytes of UTF-8 without NUL bytes.  UsageError naming
    ``-c path`` (and the line of a bad byte) otherwise: missing, a folder, pipe or device,
    unreadable, too large, binary."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a pipe could block, a device never end
            raise UsageError(f"-c {path}: not a regular file (a folder, pipe or device)")
        with open(path, "rb") as fh:
            data = fh.read(ARGS_FILE_LIMIT + 1)
    except OSError as exc:
        raise UsageError(
            f"-c {path}: cannot read the arguments file: {exc.strerror or exc}"
        ) from None
    if len(data) > ARGS_FILE_LIMIT:
        raise UsageError(f"-c {path}: the arguments file is over 1 MB")
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise UsageError(f"-c {path}:{line}: a NUL byte: not a text arguments file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UsageError(
            f"-c {path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x}): "
            "not a text arguments file"
        ) from None


def _unescape(text: str) -> str:
    """Java properties escapes: ``\\t \\n \\r \\f \\uXXXX``, ``\\x`` -> ``x``."""
    table = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}

    def one(m: re.Match) -> str:
        s = m.group(1)
        if s.startswith("u") and len(s) == 5:
            return chr(int(s[1:], 16))
        return table.get(s, s)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", one, text)


def parse_args(
    args: Sequence[str], tool: str = "synoptic", chain: tuple[str, ...] = ()
) -> ParsedArgs:
    """Parse a ``tool`` command line (``tool`` in :data:`TOOLS`): values of every option
    of the tool (defaults filled in), log files, the explicitly given names.  Arguments
    files (``-c``) are read first and overridden by the command line (a ``-r`` on the
    command line replaces the file's list).  UsageError on an unknown option, a bad
    value, a missing or looping arguments file, or an option statemine refuses."""
    where = f"-c {chain[-1]}" if chain else tool
    tokens = _tokens(args, tool, where)
    values: dict[str, Any] = {}
    given: set[str] = set()
    logs: list[str] = []
    from_file: ParsedArgs | None = None
    for opt, text in tokens:
        if isinstance(opt, str):
            logs.append(opt)
            continue
        value = _convert(opt, text if text is not None else "true", where)
        if opt.name == "argsFilename":
            from_file = parse_args(
                _read_args_file(value, chain), tool, (*chain, str(Path(value).resolve()))
            )
        if opt.kind == "list":
            values.setdefault(opt.name, []).append(value)
        else:
            values[opt.name] = value
        given.add(opt.name)
    if from_file is not None:
        merged = {k: v for k, v in from_file.values.items() if k in from_file.given}
        merged.update(values)
        values, given = merged, given | from_file.given
        logs = from_file.logs + logs
    for opt in OPTIONS:
        if tool in opt.tools and opt.name not in values:
            values[opt.name] = opt.default_for(tool)
    values.setdefault("synopticJar", None)
    _refuse(values, given, tool)
    return ParsedArgs(tool, values, logs, given)


def _refuse(values: dict[str, Any], given: set[str], tool: str) -> None:
    """UsageError for the first given option whose value statemine refuses."""
    for opt in OPTIONS:
        if opt.name not in given or tool not in opt.tools:
            continue
        value = values[opt.name]
        if opt.refuse_reason and value != opt.default_for(tool):
            shown = "true" if value is True else value
            raise UsageError(
                f"--{opt.name}={shown} is not supported by statemine's {tool}: {opt.refuse_reason}"
            )
    if tool == "synoptic" and values.get("ignoreIntrByInvs") is False:
        raise UsageError(
            "--ignoreIntrByInvs=false is not supported by statemine's synoptic: "
            "its refinement does not check IntrBy invariants (Synoptic drops "
            "them too); use --engine perfume to keep them"
        )
    if tool == "ktails" and values.get("kTailsK", 0) < 0:
        raise UsageError(f"--kTailsK (-k) must be 0 or more, not {values['kTailsK']}")
    for name in ("exactBudget", "polishChecks"):  # statemine's own budgets
        if values.get(name, 0) < 0:
            raise UsageError(f"--{name} must be 0 or more, not {values[name]}")


def usage(tool: str, every: bool = False) -> str:
    """The options of ``tool`` with what statemine does with each (for ``-h``/``-H``)."""
    lines = [
        f"Usage: statemine infer --engine {tool} [options] <logfiles-to-analyze>",
        "(the options of the original tool; each is honoured or refused)",
        "",
    ]
    for opt in OPTIONS:
        if tool not in opt.tools:
            continue
        if not every and opt.refuse_reason:
            continue
        flag = (f"-{opt.short} " if opt.short else "") + f"--{opt.name}=<{opt.kind}>"
        what = f"refused: {opt.refuse_reason}" if opt.refuse_reason else opt.help
        default = opt.default_for(tool)
        lines.append(
            f"  {flag:44s} {what}" + (f" [default {default}]" if default not in (None, "") else "")
        )
    return "\n".join(lines) + "\n"
