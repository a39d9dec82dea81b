"""The qlog event vocabulary statemine reads: event types, metric names, how array and object events decode."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .common import _num, _object_at, _Report

# Event types (lower case, category stripped). draft-00: CC_STATE_UPDATE, METRIC_UPDATE;
# draft-01..0.3: recovery:congestion_state_updated, recovery:metrics_updated;
# 0.4 and later: quic:congestion_state_updated, quic:recovery_metrics_updated.
_STATE_TYPES = frozenset({"congestion_state_updated", "cc_state_update"})
_METRIC_TYPES = frozenset({"metrics_updated", "metric_update", "recovery_metrics_updated"})
_MVFST_METRIC = "congestion_metric_update"  # mvfst: metrics plus its controller's "state"
_MVFST_APP_LIMITED = "app_limited_update"  # mvfst: {"app_limited": "app limited"|"app unlimited"}
_LOSS_TYPES = frozenset({"packet_lost"})
_SPURIOUS_TYPES = frozenset({"spurious_loss"})  # quic-go: a lost packet acknowledged after all
# loss_timer_updated {timer_type, event_type: set|expired|cancelled} (draft-01 and later);
# draft-00 LOSS_ALARM_FIRED / loss_timer_expired. Only a fired PTO timer is a ProbeTimeout.
_TIMER_TYPES = frozenset({"loss_timer_updated", "loss_timer_expired", "loss_alarm_fired"})
# quictrace-to-qlog (Chromium traces converted by qvis's tool): the sender became app limited
_CHROMIUM_APP_LIMITED = "custom_cc_application_limited"
# data fields -> statemine columns (qlog names; mvfst's current_cwnd; draft-00/01 cwnd).
_CWND_KEYS = ("congestion_window", "cwnd", "current_cwnd")
_INFLIGHT_KEYS = ("bytes_in_flight",)
_SSTHRESH_KEYS = ("ssthresh",)
# quiche and neqo log u64::MAX as the initial ssthresh ("no threshold yet"): read as inf.
_NO_THRESHOLD = 2.0**62
_SRTT_KEYS = ("smoothed_rtt",)
# pacing rate and bandwidth estimate, kept as logged (the qlog drafts give pacing_rate in
# bits per second; picoquic and converters may differ). quiche: delivery_rate.
_PACING_KEYS = ("pacing_rate",)
_BANDWIDTH_KEYS = (
    "bandwidth",
    "delivery_rate",
    "estimated_bandwidth",
    "bw",
    "btl_bw",
    "max_bandwidth",
)
_METRIC_KEYS = (
    _CWND_KEYS,
    _INFLIGHT_KEYS,
    _SSTHRESH_KEYS,
    _SRTT_KEYS,
    _PACING_KEYS,
    _BANDWIDTH_KEYS,
)
# packet_lost triggers (draft-ietf-quic-qlog-quic-events, packet_lost) -> log-format rule.
_LOSS_RULES = {"reordering_threshold": "packet", "time_threshold": "time"}
_STATE, _METRICS, _MVFST, _APP_LIMITED, _LOSS, _SPURIOUS, _TIMER, _CHROMIUM_AL, _SENT, _RECEIVED = (
    range(10)
)
_METRIC_COLUMNS = ("cwnd", "inflight", "ssthresh", "srtt", "pacing_rate", "bandwidth")
#: What ``_runscan.metrics_record`` reads a plain metrics record by: the event types
#: (lower case, as :func:`_decode` looks them up) and each column's keys in order, then
#: ``pto_count`` (the reference: :func:`_decode`, :func:`_metrics`; tests/test_qlog_metrics_c.py).
_METRIC_TYPE_WORDS = tuple(sorted(t.encode() for t in _METRIC_TYPES))
_METRIC_KEY_WORDS = (
    *(tuple(k.encode() for k in keys) for keys in _METRIC_KEYS),
    (b"pto_count",),
)
_METRIC_STRIDE = 3 + len(_METRIC_COLUMNS)
# event_fields assumed when an array-events trace has none (draft-01 / draft-00 defaults)
_NO_TIME_FIELDS = ("relative_time", "category", "event", "data")
_NO_TIME_FIELDS_TRIGGER = ("relative_time", "category", "event", "trigger", "data")
_DELTA_FORMATS = frozenset({"delta", "relative_to_previous_event"})


@dataclass
class _TraceContext:
    """How to read one trace's events: field order, time unit and format, default group."""

    fields: list[str] | None
    per_second: float  # time units per second (1e3 for ms, 1e6 for us)
    offset: float  # configuration.time_offset, in time units
    delta: bool  # the trace's times are deltas to the previous event
    group: str | None  # group_id shared by the trace's events
    conn: str | None  # connection label: ODCID, else group_id

    @classmethod
    def of(cls, header: dict) -> _TraceContext:
        common = _object_at(header, "common_fields")
        config = _object_at(header, "configuration")
        units = str(config.get("time_units") or common.get("time_units") or "ms").lower()
        per_second = {"us": 1e6, "ns": 1e9, "s": 1.0}.get(units, 1e3)
        offset = _num(config.get("time_offset"))
        fields = header.get("event_fields")
        fields = [str(f).lower() for f in fields] if isinstance(fields, list) else None
        group = common.get("group_id")
        conn = next(
            (common[k] for k in ("ODCID", "odcid", "group_id", "dcid") if common.get(k)), None
        )
        return cls(
            fields=fields,
            per_second=per_second,
            offset=0.0 if math.isnan(offset) else offset,
            delta=str(common.get("time_format") or "").lower() in _DELTA_FORMATS,
            group=None if group is None else str(group),
            conn=None if conn is None else str(conn),
        )


def _decode(
    event: object, ctx: _TraceContext
) -> tuple[float, bool, int | None, dict, object, object] | None:
    """``(time, is_delta, code, data, group, path)`` of an object or array event; None if empty.

    ``path`` is the event's ``path_id`` (picoquic's ``event_fields`` column; ``path_id`` or
    ``path`` of an object event), None where it has none.

    ``code`` says which kind of congestion event it is (None: another event, whose
    ``data`` is then not looked at).
    """
    if type(event) is dict:
        if not event:
            return None  # draft-02 allows a closing "{}" after the last event
        name = event.get("name")
        if type(name) is str:
            code = _NAME_CODES.get(name, _UNSEEN)
            if code == _UNSEEN:  # worked out once per name: its type after the last ':'
                code = _CODES.get(name[name.rfind(":") + 1 :].lower())
                if len(_NAME_CODES) < _MAX_NAME_CODES:
                    _NAME_CODES[name] = code
        else:
            etype = event.get("event") or event.get("event_type") or event.get("type") or ""
            code = _CODES.get(str(etype).lower())
        fmt = event.get("time_format")
        delta = ctx.delta if fmt is None else str(fmt).lower() in _DELTA_FORMATS
        data = _data(event.get("data"), None) if code is not None else _NO_DATA
        path = event.get("path_id", event.get("path"))
        time = event.get("time")
        return (
            time if type(time) is float else _num(time),
            delta,
            code,
            data,
            event.get("group_id", ctx.group),
            path,
        )
    if type(event) is list:
        if not event:
            return None  # quictrace-to-qlog ends its events array with an empty event "[]"
        fields = ctx.fields or (_NO_TIME_FIELDS if len(event) == 4 else _NO_TIME_FIELDS_TRIGGER)
        record = dict(zip(fields, event))
        if "relative_time" in record:
            raw_time, delta = record["relative_time"], False
        elif "delta_time" in record:
            raw_time, delta = record["delta_time"], True
        else:
            raw_time, delta = record.get("time"), ctx.delta
        etype = record.get("event_type") or record.get("event") or record.get("type") or ""
        code = _CODES.get(str(etype).lower())
        data = _data(record.get("data"), record.get("trigger")) if code is not None else _NO_DATA
        return (
            _num(raw_time),
            delta,
            code,
            data,
            record.get("group_id", ctx.group),
            record.get("path_id"),
        )
    return None


_NO_DATA: dict = {}
#: The code of each event ``name`` seen (:func:`_decode`; None: not read): a few names per
#: file. Bounded: hostile input may vary them.
_NAME_CODES: dict[str, int | None] = {}
_MAX_NAME_CODES = 4096
_UNSEEN = -1  # no code is negative


def _data(data: object, trigger: object) -> dict:
    data = data if isinstance(data, dict) else {}
    if trigger is not None and "trigger" not in data:
        data = {**data, "trigger": trigger}
    return data


_CODES: dict[str, int] = {
    **{t: _STATE for t in _STATE_TYPES},
    **{t: _METRICS for t in _METRIC_TYPES},
    _MVFST_METRIC: _MVFST,
    _MVFST_APP_LIMITED: _APP_LIMITED,
    **{t: _LOSS for t in _LOSS_TYPES},
    **{t: _SPURIOUS for t in _SPURIOUS_TYPES},
    **{t: _TIMER for t in _TIMER_TYPES},
    _CHROMIUM_APP_LIMITED: _CHROMIUM_AL,
}
#: The event types statemine reads, as bytes in lower and upper case (the sequential fast path).
_CODE_WORDS = frozenset(w.encode() for t in _CODES for w in (t, t.upper()))
# packet events: read only to derive states (RFC 9002 recovery periods need sends and ACKs)
_CODES.update({"packet_sent": _SENT, "packet_received": _RECEIVED})


def _packet_number(data: dict) -> object:
    """The packet number of a packet_lost / spurious_loss event (in its header or at the top)."""
    header = _object_at(data, "header")
    return header.get("packet_number", data.get("packet_number"))


def _pto_fired(data: dict) -> bool:
    """True for a loss timer event that says a PTO timer expired.

    draft-01 and later: ``loss_timer_updated {timer_type: "pto", event_type: "expired"}``;
    draft-00 ``LOSS_ALARM_FIRED`` / ``loss_timer_expired`` name the timer in ``timer_type``
    (or ``type``) without an ``event_type``.
    """
    timer = str(data.get("timer_type", data.get("type", ""))).lower()
    action = str(data.get("event_type", "expired")).lower()
    return timer == "pto" and action in ("expired", "fired")


#: Packet number spaces whose PTO is the handshake's (RFC 9002 section 6.2.2, "Handshakes
#: and New Paths"): a peer that has not answered yet, not a congested path.
_HANDSHAKE_SPACES = frozenset({"initial", "handshake"})


def _pto_state(data: dict) -> str:
    """The state a fired PTO timer enters: ``Handshake`` where the timer is of the Initial
    or Handshake packet number space (``packet_number_space``, quic-go), no congestion
    controller involved; ``ProbeTimeout`` otherwise (application data, or not logged)."""
    space = str(data.get("packet_number_space", "")).lower()
    return "Handshake" if space in _HANDSHAKE_SPACES else "ProbeTimeout"


def _app_limited(value: object) -> bool | None:
    """mvfst's app_limited value ("app limited"/"app unlimited", or a bool/0/1) as a bool."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("app limited", "limited", "true", "yes", "1"):
            return True
        if word in ("app unlimited", "unlimited", "false", "no", "0"):
            return False
    return None


def _new_state(data: dict) -> str | None:
    """The state a congestion_state_updated event enters (``new``, or ``state``), None
    where it names none (missing, empty, an object or array)."""
    new = data.get("new", data.get("state"))
    if new is None or isinstance(new, (dict, list)) or str(new) == "":
        return None
    return str(new)


def _item_state(code: int, data: dict) -> str | None:
    """The raw state name a congestion item puts on a state row, where it can make one:
    congestion_state_updated's ``new``, mvfst's ``state``, ``app_limited`` for an
    app-limited mark, ``ProbeTimeout`` for a fired PTO timer; None for any other item
    (losses, timers set, app unlimited, a state event without a state)."""
    if code == _STATE:
        return _new_state(data)
    if code == _MVFST:
        state = data.get("state")
        return state if isinstance(state, str) and state else None
    if code == _CHROMIUM_AL or (code == _APP_LIMITED and _app_limited(data.get("app_limited"))):
        return "app_limited"
    if code == _TIMER and _pto_fired(data):
        return _pto_state(data)
    return None


_BIG = 2**1000  # integers beyond it read as +-inf (common._num)
#: The keys a metrics event's columns are read from, by the event's own keys (in order):
#: a few shapes per file, so each is worked out once. Bounded: hostile input may vary them.
_PLANS: dict[tuple, tuple[str | None, ...]] = {}
_MAX_PLANS = 1024


def _plan(data: dict) -> tuple[str | None, ...]:
    """For each metric column, the first of its keys ``data`` has (None: none)."""
    shape = tuple(data)
    plan = _PLANS.get(shape)
    if plan is None:
        plan = tuple(next((k for k in keys if k in data), None) for keys in _METRIC_KEYS)
        if len(_PLANS) < _MAX_PLANS:
            _PLANS[shape] = plan
    return plan


def _metrics(
    data: dict, per_second: float, line: int, where: str, report: _Report
) -> tuple[float, ...]:
    """The metric columns of a metrics event (NaN where not logged); non-numeric values
    warned about. For each column the first of its keys the event logs counts."""
    values: list[float] = []
    append = values.append
    for key in _plan(data):
        if key is None:
            append(math.nan)
            continue
        raw = data[key]
        kind = type(raw)
        if kind is int and -_BIG < raw < _BIG:
            append(float(raw))
            continue
        value = raw if kind is float else _num(raw)
        if value != value and raw is not None:
            report.warn(
                line,
                f"{where}: metric {key} = {raw!r} is not a number; read as not logged",
                kind="metric not numeric",
            )
        append(value)
    return _scaled(values, per_second)


def _scaled(values: Sequence[float], per_second: float) -> tuple[float, ...]:
    """The metric columns as kept (``values``: cwnd, inflight, ssthresh, srtt, pacing rate,
    bandwidth as logged): ssthresh of at least :data:`_NO_THRESHOLD` read as inf,
    srtt from the trace's time units to seconds."""
    cwnd, inflight, ssthresh, srtt, pacing, bandwidth = values
    if ssthresh >= _NO_THRESHOLD:
        ssthresh = math.inf
    return cwnd, inflight, ssthresh, srtt / per_second, pacing, bandwidth
