"""An independent reading of ftrace text of tcp_cong_state_set / tcp_probe, for tests.

Deliberately simple and unlike :mod:`statemine.parse.ftrace` (whitespace splitting and
dicts in plain Python, no regexes, no arrays): per socket, the time spent in each
congestion state (Open from the socket's first event of either kind; a state holds until
the next state event or the socket's last event) and the list of state changes. A 4-tuple
that several sockets used in turn is cut at each handshake the recording shows
(``inet_sock_set_state`` entering SYN_SENT, SYN_RECV or ESTABLISHED, the first such line
after one entering TCP_CLOSE, or the tuple's first), and where there is none in between,
where ``sock_cookie`` changes, the state events since the previous probe staying with the
old socket (keys ``~2``, ...).
"""

from __future__ import annotations

import gzip
from collections import defaultdict
from pathlib import Path

NAMES = ["Open", "Disorder", "CWR", "Recovery", "Loss"]
EVENTS = ("tcp_cong_state_set", "tcp_probe")
BIRTHS = ("TCP_SYN_SENT", "TCP_SYN_RECV", "TCP_ESTABLISHED")


def _lines(path: Path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        yield from fh


def _socket(kv: dict, event: str) -> str:
    if event == "tcp_probe":
        return f"{kv['src']}-{kv['dest']}"
    if kv["family"] == "AF_INET6":
        return f"[{kv['saddrv6']}]:{kv['sport']}-[{kv['daddrv6']}]:{kv['dport']}"
    return f"{kv['saddr']}:{kv['sport']}-{kv['daddr']}:{kv['dport']}"


def read_reference(path: str | Path) -> dict[str, dict]:
    """Per socket key: ``changes`` (list of (seconds, state name), repeats dropped, the
    initial Open included), ``seconds`` (state -> seconds), ``sender`` (bool),
    ``cwnd`` (segments of its probes, in order)."""
    events: dict[str, list] = defaultdict(list)
    for raw in _lines(Path(path)):
        tokens = raw.split()
        for j, tok in enumerate(tokens):
            name = tok.removeprefix("tcp:").removeprefix("sock:").rstrip(":")
            if tok.endswith(":") and name in (*EVENTS, "inet_sock_set_state") and j > 0:
                break
        else:
            continue
        t = float(tokens[j - 1].rstrip(":"))
        kv = dict(x.split("=", 1) for x in tokens[j + 1 :] if "=" in x)
        if name == "inet_sock_set_state" and kv.get("protocol") != "IPPROTO_TCP":
            continue
        events[_socket(kv, name)].append((t, name, kv))
    out = {}
    for tuple_key, all_evs in events.items():
        all_evs.sort(key=lambda e: e[0])  # stable: file order among equal times
        for n, evs in enumerate(_by_cookie(all_evs)):
            out[tuple_key + (f"~{n + 1}" if n else "")] = _one_socket(evs)
    return out


def _by_cookie(evs: list) -> list[list]:
    """The events of one 4-tuple cut into sockets (see the module text); the
    ``inet_sock_set_state`` lines themselves are no socket's events."""
    parts: list[list] = [[]]
    closed = True  # no socket of this tuple alive yet, or the last one entered TCP_CLOSE
    born_since_probe = False
    cookie = None
    for e in evs:
        if e[1] == "inet_sock_set_state":
            new_state = e[2]["newstate"]
            if new_state == "TCP_CLOSE":
                closed = True
            elif new_state in BIRTHS and closed:
                closed = False
                born_since_probe = True
                if parts[-1]:
                    parts.append([])
            continue
        if e[1] == "tcp_probe":
            new = e[2].get("sock_cookie")
            if new is not None and cookie is not None and new != cookie and not born_since_probe:
                parts.append([])
            cookie = new if new is not None else cookie
            born_since_probe = False
        parts[-1].append(e)
    return [part for part in parts if part]


def _one_socket(evs: list) -> dict:
    """One socket's changes, seconds per state, sender flag and cwnd (time order)."""
    start, end = evs[0][0], evs[-1][0]
    state, since = "Open", start
    changes: list[tuple[float, str]] = []
    seconds: dict[str, float] = defaultdict(float)
    sender = False
    una0 = None
    cwnd = []
    for t, name, kv in evs:
        if name == "tcp_probe":
            cwnd.append(int(kv["snd_cwnd"]))
            una, nxt = int(kv["snd_una"], 16), int(kv["snd_nxt"], 16)
            sender |= nxt != una or (una0 is not None and una != una0)
            una0 = una
            continue
        new = NAMES[int(kv["cong_state"])]
        sender |= new != "Open"
        if not changes:
            if t > start:
                changes.append((start, "Open"))
            else:
                state = new
                changes.append((t, new))
                continue
        if new != state:
            seconds[state] += t - since
            state, since = new, t
            changes.append((t, new))
    if not changes:
        changes.append((start, "Open"))
    seconds[state] += end - since
    return {"changes": changes, "seconds": dict(seconds), "sender": sender, "cwnd": cwnd}


def shares(ref: dict[str, dict], senders_only: bool = True) -> dict[str, float]:
    """Pooled share of time per state over the sockets of ``ref``."""
    total: dict[str, float] = defaultdict(float)
    for sock in ref.values():
        if senders_only and not sock["sender"]:
            continue
        for k, v in sock["seconds"].items():
            total[k] += v
    whole = sum(total.values())
    return {k: v / whole for k, v in total.items()} if whole else {}
