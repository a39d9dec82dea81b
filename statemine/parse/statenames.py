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
>>> canonical_state("1", "picoquic")
'Recovery'
>>> canonical_state("warp_speed")
'warp_speed'
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Mapping

from ..errors import InputError

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

#: Per-implementation tables (keys already passed through :func:`name_key`).
IMPLEMENTATIONS: dict[str, dict[str, str]] = {
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
    # picoquic logs the controller's state number: picoquic/cubic.c (and newreno.c before
    # 2021) picoquic_*_alg_state_t = {slow_start = 0, recovery = 1,
    # congestion_avoidance = 2}. Newer newreno.c has only {slow_start = 0,
    # congestion_avoidance = 1}: override "1" for such traces.
    "picoquic": {
        "0": "SlowStart",
        "1": "Recovery",
        "2": "CongestionAvoidance",
    },
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
)


def implementation_key(implementation: str | None) -> str | None:
    """The table name for ``implementation`` (``"quic_go"`` -> ``"quic-go"``), or None if unknown.

    >>> implementation_key("Quic_Go"), implementation_key("lsquic")
    ('quic-go', None)
    """
    if implementation is None:
        return None
    key = name_key(implementation)
    for name in IMPLEMENTATIONS:
        if name_key(name) == key:
            return name
    return None


def detect_implementation(*texts: object) -> str | None:
    """The first implementation named in ``texts`` (titles, descriptions, vantage point names).

    >>> detect_implementation("quic-go qlog", None)
    'quic-go'
    >>> detect_implementation("backend-67") is None
    True
    """
    for text in texts:
        if not isinstance(text, str):
            continue
        low = text.lower()
        for word, name in _DETECT:
            if word in low:
                return name
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
    table = IMPLEMENTATIONS.get(implementation_key(implementation) or "", {})
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
