"""Per-implementation state-name tables and user overrides."""

from __future__ import annotations

import pytest

from statemine.errors import InputError
from statemine.parse.statenames import (
    CANONICAL,
    STATE_NAME_TABLES,
    canonical_state,
    detect_by_names,
    detect_implementation,
    implementation_key,
    load_names,
    name_key,
    picoquic_bbr_state,
    picoquic_controller,
    resolve_state,
)

nan = float("nan")


def test_every_table_maps_into_the_vocabulary():
    for table in STATE_NAME_TABLES.values():
        for key, value in table.items():
            assert key == name_key(key)
            assert value in CANONICAL


def test_canonical_names_are_always_known():
    for name in CANONICAL:
        for implementation in [None, *STATE_NAME_TABLES]:
            assert resolve_state(name, implementation) == (name, True)


@pytest.mark.parametrize(
    "implementation, raw, expected",
    [
        ("quic-go", "slow_start", "SlowStart"),
        ("quic-go", "congestion_avoidance", "CongestionAvoidance"),
        ("quic-go", "recovery", "Recovery"),
        ("quic-go", "application_limited", "ApplicationLimited"),
        ("quiche", "conservative_slow_start", "ConservativeSlowStart"),
        ("quiche", "bbr_startup", "BBRStartup"),
        ("quiche", "bbr_drain", "BBRDrain"),
        ("quiche", "bbr_probe_bw_up", "BBRProbeBW"),
        ("quiche", "bbr_probe_bw_down", "BBRProbeBW"),
        ("quiche", "bbr_probe_bw_cruise", "BBRProbeBW"),
        ("quiche", "bbr_probe_bw_refill", "BBRProbeBW"),
        ("quiche", "bbr_probe_rtt", "BBRProbeRTT"),
        ("picoquic-cubic", 0, "SlowStart"),
        ("picoquic-cubic", "1", "Recovery"),
        ("picoquic-cubic", 2, "CongestionAvoidance"),
        ("picoquic-newreno", "0", "SlowStart"),
        ("picoquic-newreno", "1", "CongestionAvoidance"),
        ("picoquic-bbr", "0", "BBRStartup"),
        ("picoquic-bbr", "655360", "BBRStartup"),
        ("picoquic-bbr", "721665", "BBRDrain"),
        ("picoquic-bbr", 2, "BBRProbeBW"),
        ("picoquic-bbr", 5, "BBRProbeBW"),
        ("picoquic-bbr", 6, "BBRProbeRTT"),
        ("picoquic-bbr", 8, "BBRStartup"),
        ("picoquic-bbr1", 2, "BBRProbeBW"),
        ("picoquic-bbr1", 3, "BBRProbeRTT"),
        ("mvfst", "Hystart", "SlowStart"),
        ("mvfst", "Steady", "CongestionAvoidance"),
        ("mvfst", "Recovery", "Recovery"),
        ("mvfst", "Startup", "BBRStartup"),
        ("mvfst", "ProbeBw", "BBRProbeBW"),
        ("mvfst", "ProbeRtt", "BBRProbeRTT"),
        ("mvfst", "app limited", "ApplicationLimited"),
        ("neqo", "slow_start", "SlowStart"),
        (None, "SLOW-START", "SlowStart"),
        (None, "persistent_congestion", "PersistentCongestion"),
        (None, "pto", "ProbeTimeout"),
    ],
)
def test_table_entries(implementation, raw, expected):
    assert canonical_state(raw, implementation) == expected


def test_implementation_specific_names_stay_in_their_table():
    # numbers and mvfst's words mean nothing without their implementation
    assert resolve_state("1") == ("1", False)
    assert resolve_state("Steady", "quic-go") == ("Steady", False)
    assert resolve_state("bbr_probe_bw_up", "neqo") == ("bbr_probe_bw_up", False)
    assert resolve_state("Steady", "MVFST") == ("CongestionAvoidance", True)


def test_overrides_win_exact_then_normalised():
    overrides = {"Recovery": "Init", "slow start": "BBRStartup"}
    assert canonical_state("Recovery", "quic-go", overrides) == "Init"
    assert canonical_state("SLOW_START", None, overrides) == "BBRStartup"
    assert canonical_state("congestion_avoidance", None, overrides) == "CongestionAvoidance"


def test_unknown_names_pass_through_unchanged():
    assert resolve_state("Mystery State") == ("Mystery State", False)
    assert canonical_state("") == ""


def test_detect_and_key_implementations():
    assert detect_implementation(None, "mvfst qlog") == "mvfst"
    assert detect_implementation("quiche-client qlog") == "quiche"
    assert detect_implementation("picoquic") == "picoquic"
    assert detect_implementation("aioquic") == "aioquic"
    assert detect_implementation("neqo-server trace") == "neqo"
    assert detect_implementation("quic-go qlog") == "quic-go"
    assert detect_implementation("backend-67", 3, None) is None
    assert implementation_key("QUIC_GO") == "quic-go" and implementation_key(None) is None
    assert implementation_key("chromium") is None


def test_load_names_line_format(tmp_path):
    f = tmp_path / "names.txt"
    f.write_text("# comment\n\n  0 = SlowStart \nFoo=Recovery\n")
    assert load_names(f) == {"0": "SlowStart", "Foo": "Recovery"}


def test_load_names_json(tmp_path):
    f = tmp_path / "names.json"
    f.write_text('{"Foo": " Recovery "}')
    assert load_names(f) == {"Foo": "Recovery"}


@pytest.mark.parametrize(
    "text, line, reason",
    [
        ("Foo=Recovery\nnot a mapping\n", 2, "expected NAME=Canonical"),
        ("=Recovery\n", 1, "expected NAME=Canonical"),
        ("Foo=\n", 1, "expected NAME=Canonical"),
        ('{"Foo": 3}', None, "must map names"),
        ('{"Foo": "Recovery",\n ', 2, "not valid JSON"),
    ],
)
def test_load_names_errors(tmp_path, text, line, reason):
    f = tmp_path / "names.txt"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        load_names(f)
    assert err.value.line == line and reason in err.value.reason and err.value.file == str(f)


def test_load_names_missing_file(tmp_path):
    with pytest.raises(InputError, match="cannot read state names"):
        load_names(tmp_path / "nope.txt")


def test_picoquic_without_controller_has_no_meaning_for_numbers():
    # the numbers mean nothing until a controller is chosen
    assert resolve_state("1", "picoquic") == ("1", False)
    assert resolve_state("3", "picoquic-newreno") == ("3", False)
    assert resolve_state("9", "picoquic-bbr") == ("9", False)


def test_picoquic_bbr_state_is_the_low_byte():
    for value in (0, 1, 655360, 721665, 2**40 + 6):
        state, flags = picoquic_bbr_state(value)
        assert state == value % 256 and flags == value // 256


@pytest.mark.parametrize(
    "changes, table, ambiguous",
    [
        (
            [("0", 0, nan), ("1", 7680, 7680)],
            "picoquic-newreno",
            False,
        ),  # cc_param = new cwnd = ssthresh
        (
            [("0", 0, nan), ("1", 15360, 10752)],
            "picoquic-newreno",
            True,
        ),  # no hint: picoquic's default
        ([("0", 0, nan), ("1", 15360, 10752), ("2", 15360, nan)], "picoquic-cubic", True),
        ([("655360", 10, nan)], "picoquic-bbr", False),
        ([("0", 0, nan), ("1", 0, nan), ("2", 0, nan), ("3", 0, nan)], "picoquic-bbr", False),
        ([("42", 0, nan)], "picoquic-newreno", True),
        ([], "picoquic-newreno", True),
    ],
)
def test_picoquic_controller_hints(changes, table, ambiguous):
    chosen, reason, flag = picoquic_controller(changes)
    assert (chosen, flag) == (table, ambiguous) and reason


def test_detect_by_names_uses_only_names_of_one_implementation():
    assert detect_by_names(["bbr_probe_bw_refill"]) == "quiche"
    assert detect_by_names(["slow_start", "conservative_slow_start"]) == "quiche"
    assert detect_by_names(["Hystart", "Steady"]) == "mvfst"
    assert detect_by_names(["slow_start", "recovery", "congestion_avoidance"]) is None
    assert detect_by_names([]) is None
