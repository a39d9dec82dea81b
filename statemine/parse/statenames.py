"""Congestion-control state names: from each QUIC implementation's words to statemine's.

qlog's ``congestion_state_updated`` event leaves the state names to the implementation
(draft-ietf-quic-qlog-quic-events, section "congestion_state_updated": "The values of the
event's fields are intentionally unspecified"), so quic-go writes ``slow_start``, quiche
``conservative_slow_start`` or ``bbr_probe_bw_up``, picoquic a number and mvfst
``Hystart``/``Steady``. This module maps them onto the one statemine vocabulary
(:data:`CANONICAL`, see docs/log-format.md).

Lookup order for a name: the user's overrides, then the implementation's table, then the
common table (the qlog drafts' names and statemine's own). Matching ignores case and
every character that is not a letter or digit, so ``slow_start``, ``SLOW-START`` and
``SlowStart`` are the same key. A name found nowhere is kept unchanged and reported as
unknown (never dropped).

>>> canonical_state("slow_start")
'SlowStart'
>>> canonical_state("Hystart", "mvfst")
'SlowStart'
>>> canonical_state("1", "picoquic-cubic"), canonical_state("1", "picoquic-newreno")
('Recovery', 'CongestionAvoidance')
>>> canonical_state("721665", "picoquic-bbr")
'BBRDrain'
>>> canonical_state("warp_speed")
'warp_speed'
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..errors import InputError

#: Appended to every derived state's name by the qlog reader (states from statemine.parse.derive), so
#: that derived states are marked in every output (tables, CSV, model.json, diagrams,
#: reports) and never pool with logged states of the same name.
DERIVED_MARK = " (derived)"


def is_derived(name: object) -> bool:
    """True for a state name that carries :data:`DERIVED_MARK` (a state derived from qlog
    metrics, not logged)."""
    return str(name).endswith(DERIVED_MARK)


#: The statemine vocabulary (docs/log-format.md, plus BBR's four states).
CANONICAL = (
    "Init",
    "SlowStart",
    "ConservativeSlowStart",
    "CongestionAvoidance",
    "CongestionAvoidanceMaxed",
    "ApplicationLimited",
    "Recovery",
    "RetransmissionTimeout",
    "TailLossProbe",
    "ProbeTimeout",
    "PersistentCongestion",
    "Handshake",
    "BBRStartup",
    "BBRDrain",
    "BBRProbeBW",
    "BBRProbeRTT",
)

_NOT_ALNUM = re.compile(r"[^0-9a-z]+")


def name_key(name: object) -> str:
    """The matching key of a state or implementation name: lower case, letters and digits only.

    >>> name_key("Slow_Start"), name_key("quic-go"), name_key(2)
    ('slowstart', 'quicgo', '2')
    """
    return _NOT_ALNUM.sub("", str(name).lower())


# Names every implementation may use. Sources: the qlog drafts' example states for
# RFC 9002's NewReno ("slow_start", "congestion_avoidance", "application_limited",
# "recovery"; draft-marx-qlog-event-definitions-quic-h3-01 and later,
# draft-ietf-quic-qlog-quic-events section congestion_state_updated) and its trigger
# "persistent_congestion"; RFC 9002 section 6.2 (PTO); BBR state names (Cardwell et al.,
# draft-cardwell-iccrg-bbr-congestion-control) as written by quiche ("bbr_startup", ...).
_COMMON: dict[str, str] = {name_key(c): c for c in CANONICAL}
_COMMON.update(
    {
        "slowstart": "SlowStart",
        "congestionavoidance": "CongestionAvoidance",
        "applicationlimited": "ApplicationLimited",
        "applimited": "ApplicationLimited",
        "recovery": "Recovery",
        "persistentcongestion": "PersistentCongestion",
        "probetimeout": "ProbeTimeout",
        "pto": "ProbeTimeout",
        "retransmissiontimeout": "RetransmissionTimeout",
        "rto": "RetransmissionTimeout",
        "taillossprobe": "TailLossProbe",
        "tlp": "TailLossProbe",
        "bbrstartup": "BBRStartup",
        "bbrdrain": "BBRDrain",
        "bbrprobebw": "BBRProbeBW",
        "bbrprobertt": "BBRProbeRTT",
    }
)

#: Per-implementation qlog state-name tables (keys already passed through :func:`name_key`).
STATE_NAME_TABLES: dict[str, dict[str, str]] = {
    # quic-go qlog/types.go, congestionState.String(): slow_start, congestion_avoidance,
    # recovery, application_limited (all in the common table; listed for clarity).
    "quic-go": {
        "slowstart": "SlowStart",
        "congestionavoidance": "CongestionAvoidance",
        "recovery": "Recovery",
        "applicationlimited": "ApplicationLimited",
    },
    # cloudflare quiche: recovery/congestion/reno.rs and cubic.rs state_str()
    # (conservative_slow_start while HyStart++ is in CSS, RFC 9406), and the BBRv2 modes'
    # state_str() in recovery/gcongestion/bbr2/{startup,drain,probe_bw,probe_rtt}.rs
    # (probe_bw is logged per cycle phase: up, down, cruise, refill).
    "quiche": {
        "slowstart": "SlowStart",
        "conservativeslowstart": "ConservativeSlowStart",
        "congestionavoidance": "CongestionAvoidance",
        "recovery": "Recovery",
        "bbrstartup": "BBRStartup",
        "bbrdrain": "BBRDrain",
        "bbrprobebw": "BBRProbeBW",
        "bbrprobebwup": "BBRProbeBW",
        "bbrprobebwdown": "BBRProbeBW",
        "bbrprobebwcruise": "BBRProbeBW",
        "bbrprobebwrefill": "BBRProbeBW",
        "bbrprobertt": "BBRProbeRTT",
    },
    # picoquic logs the number its controller's ``observe`` function returns
    # (picoquic/*.c, ``picoquic_*_observe``: ``*cc_state = alg_state``), so a number's meaning
    # depends on the controller, which the qlog file does not name. Tables per controller,
    # learnt from picoquic's sources (private-octopus/picoquic):
    # * cubic.c ``picoquic_cubic_alg_state_t``: slow_start = 0, recovery, congestion_avoidance;
    # * newreno.c / cc_common.h ``picoquic_newreno_alg_state_t``: slow_start = 0,
    #   congestion_avoidance (1). Picoquic's default controller
    #   (PICOQUIC_DEFAULT_CONGESTION_ALGORITHM) is newreno;
    # * bbr.c (BBRv3) ``picoquic_bbr_alg_state_t``: startup = 0, drain, probe_bw_down,
    #   probe_bw_cruise, probe_bw_refill, probe_bw_up, probe_rtt, startup_long_rtt,
    #   startup_resume (8); the logged value carries further bits above the low byte
    #   (e.g. 655360, 721665): the state is the low byte (:func:`picoquic_bbr_state`);
    # * bbr1.c (BBRv1) ``picoquic_bbr1_alg_state_t``: startup = 0, drain, probe_bw, probe_rtt,
    #   startup_long_rtt (4).
    # "picoquic" without a controller is resolved per trace (:func:`picoquic_controller`).
    "picoquic-newreno": {"0": "SlowStart", "1": "CongestionAvoidance"},
    "picoquic-cubic": {"0": "SlowStart", "1": "Recovery", "2": "CongestionAvoidance"},
    "picoquic-bbr": {
        "0": "BBRStartup",
        "1": "BBRDrain",
        "2": "BBRProbeBW",  # probe_bw_down
        "3": "BBRProbeBW",  # probe_bw_cruise
        "4": "BBRProbeBW",  # probe_bw_refill
        "5": "BBRProbeBW",  # probe_bw_up
        "6": "BBRProbeRTT",
        "7": "BBRStartup",  # startup_long_rtt (Hystart-like startup on long RTT paths)
        "8": "BBRStartup",  # startup_resume (careful resume from a BDP seed)
    },
    "picoquic-bbr1": {
        "0": "BBRStartup",
        "1": "BBRDrain",
        "2": "BBRProbeBW",
        "3": "BBRProbeRTT",
        "4": "BBRStartup",
    },
    "picoquic": {},
    # mvfst: congestion_metric_update's "state" field. quic/congestion_control/QuicCubic.cpp
    # cubicStateToString(): Hystart, Steady, Recovery (FastRecovery in the enum);
    # Bbr.cpp bbrStateToString(): Startup, Drain, ProbeBw, ProbeRtt. Application-limited
    # periods come from app_limited_update events ("app limited" / "app unlimited").
    "mvfst": {
        "hystart": "SlowStart",
        "steady": "CongestionAvoidance",
        "recovery": "Recovery",
        "fastrecovery": "Recovery",
        "startup": "BBRStartup",
        "drain": "BBRDrain",
        "probebw": "BBRProbeBW",
        "probertt": "BBRProbeRTT",
        "applimited": "ApplicationLimited",
    },
    # neqo-transport cc/classic_cc.rs State::to_qlog(): slow_start (also for
    # PersistentCongestion), congestion_avoidance, recovery (also RecoveryStart).
    "neqo": {
        "slowstart": "SlowStart",
        "congestionavoidance": "CongestionAvoidance",
        "recovery": "Recovery",
    },
    # aioquic logs recovery:metrics_updated (cwnd, bytes_in_flight, ssthresh, RTTs) but no
    # congestion_state_updated in the versions seen (qvis sample data, draft-01): its
    # states can only be derived from the metrics (statemine.parse.derive).
    "aioquic": {},
}

# Words that name an implementation in a qlog title, description or vantage point name.
_DETECT = (
    ("picoquic", "picoquic"),
    ("mvfst", "mvfst"),
    ("aioquic", "aioquic"),
    ("neqo", "neqo"),
    ("quic-go", "quic-go"),
    ("quicgo", "quic-go"),
    ("quiche", "quiche"),
    ("tquic", "tquic"),
)
#: tquic names neither itself nor the connection in title or vantage point: its trace
#: description is ``id=SERVER-<connection id>`` or ``id=CLIENT-<connection id>`` (hex) and
#: its title "server qlog" / "client qlog" (tquic 1.6.0's qlog writer).
TQUIC_DESCRIPTION = re.compile(r"\Aid=(?:SERVER|CLIENT)-(?P<cid>[0-9a-fA-F]{1,40})\Z")


def implementation_key(implementation: str | None) -> str | None:
    """The table name for ``implementation`` (``"quic_go"`` -> ``"quic-go"``), or None if unknown.

    >>> implementation_key("Quic_Go"), implementation_key("lsquic")
    ('quic-go', None)
    """
    if implementation is None:
        return None
    key = name_key(implementation)
    for name in STATE_NAME_TABLES:
        if name_key(name) == key:
            return name
    return None


def detect_implementation(*texts: object) -> str | None:
    """The first implementation named in ``texts`` (titles, descriptions, vantage point names).

    >>> detect_implementation("quic-go qlog", None)
    'quic-go'
    >>> detect_implementation("backend-67") is None
    True
    >>> detect_implementation("server qlog", "id=SERVER-c95babcca37d8326")
    'tquic'
    """
    for text in texts:
        if not isinstance(text, str):
            continue
        low = text.lower()
        for word, name in _DETECT:
            if word in low:
                return name
        if TQUIC_DESCRIPTION.match(text):
            return "tquic"
    return None


_PACKED = frozenset({"picoquic-bbr", "picoquic-bbr1"})
#: The picoquic tables a user can force (``--implementation picoquic-newreno`` ...).
PICOQUIC_TABLES = ("picoquic-newreno", "picoquic-cubic", "picoquic-bbr", "picoquic-bbr1")
_PICOQUIC_DEFAULT = "picoquic-newreno"  # PICOQUIC_DEFAULT_CONGESTION_ALGORITHM


def picoquic_bbr_state(value: int) -> tuple[int, int]:
    """``(state, flags)`` of a value logged by picoquic's BBR: the state is the low byte.

    >>> picoquic_bbr_state(721665), picoquic_bbr_state(655360)
    ((1, 2819), (0, 2560))
    """
    return value & 0xFF, value >> 8


#: Phase names of picoquic's BBR state numbers (the enums of bbr.c and bbr1.c, see the
#: tables above): ProbeBW's sub-phases stay visible as ``bbr_phase=`` in ``fields``.
PICOQUIC_BBR_PHASES = {
    "picoquic-bbr": (
        "startup",
        "drain",
        "probe_bw_down",
        "probe_bw_cruise",
        "probe_bw_refill",
        "probe_bw_up",
        "probe_rtt",
        "startup_long_rtt",
        "startup_resume",
    ),
    "picoquic-bbr1": ("startup", "drain", "probe_bw", "probe_rtt", "startup_long_rtt"),
}


def picoquic_bbr_fields(raw: object, table: str | None) -> str:
    """The ``fields`` text for a state number logged by picoquic's BBR under ``table``:
    `` bbr_phase=NAME bbr_flags=0xHEX`` (the low byte's phase; the bits above it, which
    picoquic's sources do not explain, kept as they are), '' for anything else.

    picoquic's ``picoquic_bbr_observe`` (bbr.c, every version read, BBRv1 to BBRv3)
    returns the plain state enum; the values above 255 seen in qlog files (655360,
    721665) carry more bits than that, whose meaning no source read gives.

    >>> picoquic_bbr_fields("721665", "picoquic-bbr"), picoquic_bbr_fields("3", "picoquic-bbr")
    (' bbr_phase=drain bbr_flags=0xb03', ' bbr_phase=probe_bw_cruise bbr_flags=0x0')
    >>> picoquic_bbr_fields("2", "picoquic-cubic"), picoquic_bbr_fields("x", "picoquic-bbr")
    ('', '')
    """
    phases = PICOQUIC_BBR_PHASES.get(str(table))
    text = str(raw).strip()
    if phases is None or not text.isdigit():
        return ""
    state, flags = picoquic_bbr_state(int(text))
    phase = phases[state] if state < len(phases) else f"unknown{state}"
    return f" bbr_phase={phase} bbr_flags={flags:#x}"


def picoquic_controller(changes: list[tuple[object, float, float]]) -> tuple[str, str, bool]:
    """Which picoquic controller wrote a trace's state numbers: ``(table, reason, ambiguous)``.

    ``changes`` holds, per congestion_state_updated event in log order, ``(new, cc_param,
    cwnd)``: the logged number, the event's ``cc_param`` and the first cwnd logged at the
    same time after it (NaN where absent). The file never names the controller; the hints
    are what each controller's ``observe`` reports (picoquic sources, see the tables):

    * a value above 255 (flag bits above the low byte) or between 3 and 8: only BBR;
    * ``cc_param`` equal to the window logged right after entering state 1: newreno (its
      ``cc_param`` is ssthresh, and entering congestion avoidance after a loss sets the
      window to ssthresh; cubic reports W_max, the window *before* the cut);
    * a 2 without such a hint: cubic (newreno has no state 2; BBR reaches 2 only through
      1 with bandwidth-sized ``cc_param``) -- ambiguous with BBR.

    Without any hint the answer is picoquic's default controller, newreno, flagged ambiguous.

    >>> picoquic_controller([("0", 0.0, float("nan")), ("1", 7680.0, 7680.0)])[0]
    'picoquic-newreno'
    >>> picoquic_controller([("655360", 0.0, float("nan"))])[0]
    'picoquic-bbr'
    """
    values = []
    for new, _, _ in changes:
        try:
            values.append(int(str(new).strip()))
        except ValueError:
            continue
    if any(v > 255 for v in values):
        return (
            "picoquic-bbr",
            "state values above 255 carry flag bits, as only picoquic's bbr logs them",
            False,
        )
    if any(3 <= v <= 8 for v in values):
        return "picoquic-bbr", "state values between 3 and 8 exist only in picoquic's bbr", False
    if any(v > 8 for v in values):
        return (
            _PICOQUIC_DEFAULT,
            f"state values {sorted(set(values))} fit none of picoquic's tables",
            True,
        )
    for new, param, cwnd in changes:
        if str(new).strip() == "1" and param > 0 and param == cwnd:
            return (
                "picoquic-newreno",
                "cc_param equals the window logged after entering state 1 "
                "(newreno reports ssthresh there; cubic would report the window before the cut)",
                False,
            )
    if 2 in values:
        return (
            "picoquic-cubic",
            "state 2 exists in cubic (congestion avoidance) and bbr (probe_bw_down)",
            True,
        )
    return (
        _PICOQUIC_DEFAULT,
        "states 0/1 only and no cc_param hint; newreno is picoquic's default",
        True,
    )


# State names only one implementation writes (keys as name_key gives them): quiche's
# HyStart++ CSS and BBR phase names (recovery/congestion/*.rs and gcongestion/bbr2/*.rs
# state_str()), mvfst's cubic names. Shared names (slow_start, recovery) identify nobody.
_OWN_NAMES = {
    "quiche": frozenset(
        {
            "conservativeslowstart",
            "bbrstartup",
            "bbrdrain",
            "bbrprobebw",
            "bbrprobebwup",
            "bbrprobebwdown",
            "bbrprobebwcruise",
            "bbrprobebwrefill",
            "bbrprobertt",
        }
    ),
    "mvfst": frozenset({"hystart", "steady"}),
}


def detect_by_names(names: Iterable[str]) -> str | None:
    """The implementation whose own state names appear among ``names`` (None: no such name).

    >>> detect_by_names(["slow_start", "bbr_probe_bw_cruise"]), detect_by_names(["recovery"])
    ('quiche', None)
    """
    keys = {name_key(n) for n in names}
    for implementation, own in _OWN_NAMES.items():
        if keys & own:
            return implementation
    return None


def resolve_state(
    name: object,
    implementation: str | None = None,
    overrides: Mapping[str, str] | None = None,
) -> tuple[str, bool]:
    """``(canonical name, known)`` for a raw state name; unknown names come back unchanged.

    >>> resolve_state("conservative_slow_start", "quiche")
    ('ConservativeSlowStart', True)
    >>> resolve_state("Turbo", overrides={"turbo": "SlowStart"})
    ('SlowStart', True)
    >>> resolve_state("Turbo")
    ('Turbo', False)
    """
    raw = str(name)
    key = name_key(raw)
    if overrides:
        if raw in overrides:
            return overrides[raw], True
        for user_name, canonical in overrides.items():
            if name_key(user_name) == key:
                return canonical, True
    table_name = implementation_key(implementation) or ""
    table = STATE_NAME_TABLES.get(table_name, {})
    if table_name in _PACKED and key.isdigit():
        key = str(picoquic_bbr_state(int(key))[0])
    if key in table:
        return table[key], True
    if key in _COMMON:
        return _COMMON[key], True
    return raw, False


def canonical_state(
    name: object,
    implementation: str | None = None,
    overrides: Mapping[str, str] | None = None,
) -> str:
    """The statemine name for ``name`` (see :func:`resolve_state`); unknown names unchanged."""
    return resolve_state(name, implementation, overrides)[0]


def load_names(path: str | os.PathLike) -> dict[str, str]:
    """Read user overrides: a JSON object ``{"raw": "Canonical"}`` or ``raw=Canonical`` lines.

    In the line format blank lines and lines starting with ``#`` are ignored; both sides
    are stripped. Raises :class:`InputError` naming the line of a malformed entry.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, None, f"cannot read state names: {exc}") from None
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise InputError(path, getattr(exc, "lineno", None), f"not valid JSON: {exc}") from None
        if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in data.items()
        ):
            raise InputError(path, None, "the JSON object must map names to non-empty names")
        return {k: v.strip() for k, v in data.items()}
    names: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        raw, sep, canonical = line.partition("=")
        if not sep or not raw.strip() or not canonical.strip():
            raise InputError(path, number, f"expected NAME=Canonical, got {line[:80]!r}")
        names[raw.strip()] = canonical.strip()
    return names
