//! One lab run: a quiche client and server driven sans-IO in virtual time over the path
//! model (docs/lab-protocol.md). A discrete-event loop over a heap of (time, seq, event);
//! seq breaks ties in insertion order, so a run is deterministic. Virtual time is kept
//! in whole nanoseconds and handed to quiche through the instrument patch's clock
//! (`quiche::statemine::set_virtual_time`) before every event, so every `Instant` quiche
//! reads or returns is virtual.
//!
//! Sending: quiche stamps every datagram with a release time (`SendInfo::at`, its
//! pacer); the server's datagrams enter the link at max(now, at, previous release), as
//! through a socket with SO_TXTIME, and the server asks quiche for more only within
//! `max_release_into_future()` of now. The client sends at once (quiche's example client
//! ignores `at`; pacing a receiver's ACKs at its own, tiny, rate would delay them). Timers: one per connection, re-armed after every event
//! from `timeout_instant()`; a timer that asks again for the instant it just fired at is
//! moved on by TIMER_RESOLUTION_NS (a real clock has moved on by then).
//!
//! Application protocol (as the quic-go harness): the client opens one bidirectional
//! stream per object, sends the size as an 8-byte big-endian integer and FIN; the server
//! answers with that many bytes and FIN.
//!
//! Client profiles: desktop reads stream data as it arrives and closes the connection
//! when it has read everything. mobile is the protocol's phone: a network thread takes
//! datagrams from a socket buffer (overflow dropped) and spends a lognormal CPU time on
//! each before quiche sees it (timers wait for it); the application reads stream data in
//! chunks of READ_CHUNK bytes at the read rate, so flow-control credit, which quiche
//! returns for data read, comes back at that rate. When the transport has every byte the
//! client closes the connection; the page-load time adds what the application still
//! needs to consume.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::Duration;

use crate::pathmodel::rng::Rng;
use crate::pathmodel::variability::{CpuTime, ReadRate};
use crate::pathmodel::{direction_seed, Link};

use crate::config::{Config, DEFAULT_READ_INTERVAL_S, DEFAULT_SOCKET_BUFFER};

/// The lab's application protocol (ALPN) and the test certificate's name.
pub const ALPN: &[u8] = b"statemine-lab";
pub const SERVER_NAME: &str = "statemine.lab";
/// A timer that asks again for the instant it fired at runs this much later, ns.
const TIMER_RESOLUTION_NS: u64 = 1_000;
/// Virtual time the loop keeps running after the transfer so both ends close, ns.
const CLOSE_GRACE_NS: u64 = 5_000_000_000;
/// What the mobile application reads at a time, bytes (the quic-go harness's buffer).
const READ_CHUNK: usize = 16 << 10;
/// Connection-id length, bytes.
const CID_LEN: usize = 16;
/// Flow control and idle timeout of both ends unless the config says (quiche's example
/// client and server use these: quiche itself defaults to zero windows).
const INITIAL_MAX_DATA: u64 = 10_000_000;
const INITIAL_MAX_STREAM_DATA: u64 = 1_000_000;
const IDLE_TIMEOUT_MS: u64 = 30_000;

const SERVER: usize = 0;
const CLIENT: usize = 1;

fn addr(side: usize) -> SocketAddr {
    if side == SERVER {
        "10.0.0.1:443".parse().unwrap()
    } else {
        "10.0.0.2:50000".parse().unwrap()
    }
}

/// Virtual seconds -> ns, rounded up (an arrival is never before the model's time).
fn ns(t: f64) -> u64 {
    (t * 1e9).ceil() as u64
}

enum Kind {
    /// A datagram reaches the endpoint `side`.
    Deliver(usize, Vec<u8>),
    /// The connection timer of `side`, generation `gen` (stale when re-armed since).
    Timer(usize, u64),
    /// The mobile network thread has spent its CPU time on a datagram.
    CpuDone(Vec<u8>),
    /// The mobile application is free to read again.
    AppRead,
    /// `side` may hand out more paced datagrams (generation `gen`).
    Wake(usize, u64),
}

struct Event {
    t: u64,
    seq: u64,
    kind: Kind,
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.seq).cmp(&(self.t, self.seq)) // a min-heap on (t, seq)
    }
}

/// What a run measured (seconds, bytes, packets).
#[derive(Debug, Default)]
pub struct Outcome {
    pub plt_s: Option<f64>,
    pub bytes: u64,
    pub retransmissions: u64,
    pub packets_sent: u64,
    pub packets_dropped: u64,
    pub virtual_time_s: f64,
    pub error: Option<String>,
    /// The server's smoothed and minimum RTT at the end, s (set by the real-time loop).
    pub srtt_s: Option<f64>,
    pub min_rtt_s: Option<f64>,
}

/// The mobile client's network thread and application.
struct Mobile {
    socket: VecDeque<Vec<u8>>,
    socket_bytes: u64,
    socket_limit: u64,
    busy: bool,
    timer_due: bool,
    dropped: u64,
    cpu: CpuTime,
    rate: ReadRate,
    app_free: u64,  // ns: when the application has consumed what it read
    app_busy: bool, // an AppRead event is pending
    read: u64,      // bytes the application read
    received: u64,  // datagram bytes the transport processed (a cheap precondition)
}

struct Sim<'a> {
    cfg: &'a Config,
    now: u64,
    heap: BinaryHeap<Event>,
    seq: u64,
    links: [Link; 2], // [SERVER] = down (server -> client), [CLIENT] = up
    conns: [Option<quiche::Connection>; 2],
    server_config: quiche::Config,
    server_scid: Vec<u8>,
    timer_at: [Option<u64>; 2],
    timer_gen: [u64; 2],
    fired_at: [Option<u64>; 2],
    last_tx: [u64; 2],
    wake_at: [Option<u64>; 2],
    wake_gen: [u64; 2],
    sent: [u64; 2],
    out: Vec<u8>,
    buf: Vec<u8>,
    zeros: Vec<u8>,
    requests: HashMap<u64, Vec<u8>>,
    pending: BTreeMap<u64, u64>, // server: stream -> bytes still to send
    got: HashMap<u64, u64>,      // client: stream -> bytes read
    requested: bool,
    objects_done: u64,
    total: u64,
    transport_done: Option<u64>,
    plt: Option<u64>,
    mobile: Option<Mobile>,
    qlog_dir: Option<String>,
    error: Option<String>,
}

pub fn quiche_config(cfg: &Config, server: bool, cert_dir: &str) -> Result<quiche::Config, String> {
    let e = |what: &str, err: quiche::Error| format!("quiche {what}: {err}");
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(|x| e("config", x))?;
    c.set_application_protos(&[ALPN])
        .map_err(|x| e("ALPN", x))?;
    c.set_max_idle_timeout(IDLE_TIMEOUT_MS);
    c.set_initial_max_streams_bidi(cfg.objects.count.max(100));
    c.set_initial_max_streams_uni(3);
    c.set_disable_active_migration(true);
    c.grease(false);
    let (mut data, mut stream) = (INITIAL_MAX_DATA, INITIAL_MAX_STREAM_DATA);
    if server {
        c.load_cert_chain_from_pem_file(&format!("{cert_dir}/cert.pem"))
            .map_err(|x| e("certificate", x))?;
        c.load_priv_key_from_pem_file(&format!("{cert_dir}/key.pem"))
            .map_err(|x| e("key", x))?;
    } else {
        c.verify_peer(false); // the lab identity is self-signed
        data = cfg.client.max_data_bytes.unwrap_or(data);
        stream = cfg.client.max_stream_data_bytes.unwrap_or(stream);
    }
    c.set_initial_max_data(data);
    c.set_initial_max_stream_data_bidi_local(stream);
    c.set_initial_max_stream_data_bidi_remote(stream);
    c.set_initial_max_stream_data_uni(stream);
    c.set_cc_algorithm_name(cfg.quiche_cc())
        .map_err(|x| e("congestion controller", x))?;
    Ok(c)
}

pub fn set_qlog(
    conn: &mut quiche::Connection,
    dir: &Option<String>,
    scid: &[u8],
    role: &str,
) -> Result<(), String> {
    let Some(dir) = dir else { return Ok(()) };
    let hex: String = scid.iter().map(|b| format!("{b:02x}")).collect();
    let path = format!("{dir}/{hex}_{role}.sqlog");
    let f = std::fs::File::create(&path).map_err(|e| format!("{path}: {e}"))?;
    conn.set_qlog(
        Box::new(std::io::BufWriter::new(f)),
        format!("statemine lab {role}"),
        role.into(),
    );
    Ok(())
}

/// The lab's application protocol, shared by the virtual-time loop and the real-time one
/// (src/realnet.rs).
///
/// Server: reads the requests readable on `conn` (8-byte big-endian sizes, then FIN) into
/// `requests`; a complete one becomes `pending[stream] = size`.
pub fn read_requests(
    conn: &mut quiche::Connection,
    requests: &mut HashMap<u64, Vec<u8>>,
    pending: &mut BTreeMap<u64, u64>,
    buf: &mut [u8],
) -> Result<(), String> {
    let readable: Vec<u64> = conn.readable().collect();
    for s in readable {
        loop {
            match conn.stream_recv(s, buf) {
                Ok((n, fin)) => {
                    let req = requests.entry(s).or_default();
                    if req.len() + n > 8 {
                        return Err(format!("stream {s}: request longer than 8 bytes"));
                    }
                    req.extend_from_slice(&buf[..n]);
                    if fin {
                        let size = <[u8; 8]>::try_from(req.as_slice())
                            .map(u64::from_be_bytes)
                            .map_err(|_| format!("stream {s}: a request is 8 bytes"))?;
                        pending.insert(s, size);
                    }
                }
                Err(quiche::Error::Done) => break,
                Err(e) => return Err(format!("server stream_recv: {e}")),
            }
        }
    }
    Ok(())
}

/// Server: writes pending response bytes (from `zeros`) into their streams while quiche
/// takes them; a finished response leaves `pending`.
pub fn serve(
    conn: &mut quiche::Connection,
    pending: &mut BTreeMap<u64, u64>,
    zeros: &[u8],
) -> Result<(), String> {
    let mut finished = Vec::new();
    for (&s, rem) in pending.iter_mut() {
        while *rem > 0 {
            let n = (*rem).min(zeros.len() as u64) as usize;
            match conn.stream_send(s, &zeros[..n], *rem == n as u64) {
                Ok(w) => {
                    *rem -= w as u64;
                    if w < n {
                        break;
                    }
                }
                Err(quiche::Error::Done) => break,
                Err(e) => return Err(format!("server stream_send: {e}")),
            }
        }
        if *rem > 0 {
            break; // the connection has no more send capacity now
        }
        finished.push(s);
    }
    for s in finished {
        pending.remove(&s);
    }
    Ok(())
}

/// Client: opens one stream per object and sends its request (the size, FIN).
pub fn send_requests(conn: &mut quiche::Connection, cfg: &Config) -> Result<(), String> {
    for i in 0..cfg.objects.count {
        let size = cfg.objects.size_bytes.to_be_bytes();
        conn.stream_send(4 * i, &size, true)
            .map_err(|e| format!("client stream_send: {e}"))?;
    }
    Ok(())
}

/// Client (desktop): reads everything readable, counting bytes per stream in `got`;
/// the number of streams that finished.
pub fn read_all(
    conn: &mut quiche::Connection,
    got: &mut HashMap<u64, u64>,
    buf: &mut [u8],
) -> Result<u64, String> {
    let mut fins = 0;
    let readable: Vec<u64> = conn.readable().collect();
    for s in readable {
        loop {
            match conn.stream_recv(s, buf) {
                Ok((n, fin)) => {
                    *got.entry(s).or_default() += n as u64;
                    if fin {
                        fins += 1;
                        break; // quiche forgets a finished stream
                    }
                }
                Err(quiche::Error::Done) => break,
                Err(e) => return Err(format!("client stream_recv: {e}")),
            }
        }
    }
    Ok(fins)
}

impl<'a> Sim<'a> {
    fn push(&mut self, t: u64, kind: Kind) {
        self.seq += 1;
        self.heap.push(Event {
            t: t.max(self.now),
            seq: self.seq,
            kind,
        });
    }

    fn secs(i: std::time::Instant) -> u64 {
        i.saturating_duration_since(quiche::statemine::clock_origin())
            .as_nanos() as u64
    }

    /// Hands the datagrams the connection of `side` wants to send to its link, each at
    /// its release time, then re-arms its timer. Like a pacing-aware application
    /// (`Connection::max_release_into_future`), it stops asking for more once a
    /// datagram's release time is more than that horizon ahead, and comes back (Wake)
    /// when it is within it again: quiche counts a datagram in flight when it hands it
    /// out, so a sender that drained quiche at once would hold cwnd's worth of paced
    /// datagrams in its own queue.
    fn flush(&mut self, side: usize) {
        loop {
            let Some(conn) = self.conns[side].as_mut() else {
                return;
            };
            let horizon = conn.max_release_into_future().as_nanos() as u64;
            if side == SERVER && self.last_tx[side] > self.now + horizon {
                // the paced queue reaches past the horizon: come back when it does not
                let t = self.last_tx[side] - horizon;
                self.wake(side, t);
                break;
            }
            let (n, info) = match conn.send(&mut self.out) {
                Ok(x) => x,
                Err(quiche::Error::Done) => break,
                Err(e) => {
                    self.fail(format!(
                        "{} send: {e}",
                        if side == SERVER { "server" } else { "client" }
                    ));
                    break;
                }
            };
            // the server paces (SO_TXTIME-like); the client, a receiver, sends at once as
            // quiche's example client does (pacing its ACKs would delay them)
            let at = if side == SERVER {
                Self::secs(info.at)
            } else {
                self.now
            };
            let t = self.now.max(at).max(self.last_tx[side]);
            self.last_tx[side] = t;
            self.sent[side] += 1;
            if let Some(arrival) = self.links[side].send(t as f64 / 1e9, n) {
                let data = self.out[..n].to_vec();
                self.push(ns(arrival), Kind::Deliver(1 - side, data));
            }
        }
        self.arm_timer(side);
    }

    /// Schedules a flush of `side` at `t` (ns) unless one is due by then.
    fn wake(&mut self, side: usize, t: u64) {
        if self.wake_at[side].is_some_and(|w| w <= t && w >= self.now) {
            return;
        }
        self.wake_at[side] = Some(t);
        self.wake_gen[side] += 1;
        let g = self.wake_gen[side];
        self.push(t, Kind::Wake(side, g));
    }

    fn arm_timer(&mut self, side: usize) {
        let Some(conn) = self.conns[side].as_ref() else {
            return;
        };
        let mut t = conn.timeout_instant().map(Self::secs);
        if let (Some(x), Some(f)) = (t, self.fired_at[side]) {
            if x <= f {
                t = Some(f + TIMER_RESOLUTION_NS);
            }
        }
        if t == self.timer_at[side] {
            return;
        }
        self.timer_at[side] = t;
        self.timer_gen[side] += 1;
        if let Some(t) = t {
            let g = self.timer_gen[side];
            self.push(t, Kind::Timer(side, g));
        }
    }

    fn fail(&mut self, msg: String) {
        if self.error.is_none() {
            self.error = Some(msg);
        }
    }

    fn on_timer(&mut self, side: usize, gen: u64) {
        if gen != self.timer_gen[side] {
            return;
        }
        self.timer_at[side] = None;
        self.fired_at[side] = Some(self.now);
        if side == CLIENT {
            if let Some(m) = self.mobile.as_mut() {
                if m.busy {
                    m.timer_due = true; // runs when the network thread is free
                    return;
                }
            }
        }
        self.run_timer(side);
    }

    fn run_timer(&mut self, side: usize) {
        if let Some(c) = self.conns[side].as_mut() {
            c.on_timeout();
        }
        self.flush(side);
    }

    fn server_in(&mut self, mut data: Vec<u8>) {
        if self.conns[SERVER].is_none() {
            let scid = quiche::ConnectionId::from_ref(&self.server_scid);
            match quiche::accept(
                &scid,
                None,
                addr(SERVER),
                addr(CLIENT),
                &mut self.server_config,
            ) {
                Ok(mut c) => {
                    if let Err(e) = set_qlog(&mut c, &self.qlog_dir, &self.server_scid, "server") {
                        return self.fail(e);
                    }
                    self.conns[SERVER] = Some(c);
                }
                Err(e) => return self.fail(format!("server accept: {e}")),
            }
        }
        let conn = self.conns[SERVER].as_mut().unwrap();
        let info = quiche::RecvInfo {
            from: addr(CLIENT),
            to: addr(SERVER),
        };
        if let Err(e) = conn.recv(&mut data, info) {
            if e != quiche::Error::Done {
                return self.fail(format!("server recv: {e}"));
            }
        }
        if let Err(e) = read_requests(conn, &mut self.requests, &mut self.pending, &mut self.buf) {
            return self.fail(e);
        }
        self.serve();
        self.flush(SERVER);
    }

    /// Writes pending response bytes into the server's streams while quiche takes them.
    fn serve(&mut self) {
        let conn = self.conns[SERVER].as_mut().unwrap();
        if let Err(e) = serve(conn, &mut self.pending, &self.zeros) {
            self.error.get_or_insert(e);
        }
    }

    /// The client's transport processes one datagram now.
    fn client_packet(&mut self, mut data: Vec<u8>) {
        let len = data.len() as u64;
        let Some(conn) = self.conns[CLIENT].as_mut() else {
            return;
        };
        let info = quiche::RecvInfo {
            from: addr(SERVER),
            to: addr(CLIENT),
        };
        if let Err(e) = conn.recv(&mut data, info) {
            if e != quiche::Error::Done {
                return self.fail(format!("client recv: {e}"));
            }
        }
        if !self.requested && conn.is_established() {
            // the requests: one stream per object, opened once the server's limits are known
            self.requested = true;
            if let Err(e) = send_requests(conn, self.cfg) {
                return self.fail(e);
            }
        }
        if self.transport_done.is_none() {
            if self.mobile.is_some() {
                self.mobile.as_mut().unwrap().received += len;
                self.check_transport_done();
                if self.transport_done.is_none() && !self.mobile.as_ref().unwrap().app_busy {
                    self.app_read();
                }
            } else {
                self.read_all();
            }
        }
        self.flush(CLIENT);
    }

    /// Desktop: read everything readable; close when every object is in.
    fn read_all(&mut self) {
        let conn = self.conns[CLIENT].as_mut().unwrap();
        match read_all(conn, &mut self.got, &mut self.buf) {
            Ok(fins) => self.objects_done += fins,
            Err(e) => {
                self.error.get_or_insert(e);
                return;
            }
        }
        if self.objects_done == self.cfg.objects.count {
            self.finish_transport();
            self.plt = Some(self.now);
        }
    }

    /// Mobile: has the transport every byte (read or buffered in order)?
    fn check_transport_done(&mut self) {
        let m = self.mobile.as_ref().unwrap();
        if m.received < self.total {
            return; // not even enough datagram bytes yet
        }
        let conn = self.conns[CLIENT].as_ref().unwrap();
        let size = self.cfg.objects.size_bytes;
        for i in 0..self.cfg.objects.count {
            let s = 4 * i;
            let read = self.got.get(&s).copied().unwrap_or(0);
            let buffered = conn.stream_readable_len(s, (size - read) as usize) as u64;
            if read + buffered < size {
                return;
            }
        }
        self.finish_transport();
        // The application takes the rest in chunks at the rate in force at each start.
        let m = self.mobile.as_mut().unwrap();
        let mut free = m.app_free.max(self.now);
        let mut rest = self.total - m.read;
        while rest > 0 {
            let n = rest.min(READ_CHUNK as u64);
            let rate = m.rate.at(free as f64 / 1e9);
            free += ns(8.0 * n as f64 / rate);
            rest -= n;
        }
        self.plt = Some(free);
    }

    fn finish_transport(&mut self) {
        self.transport_done = Some(self.now);
        let conn = self.conns[CLIENT].as_mut().unwrap();
        let _ = conn.close(true, 0, b"done");
    }

    /// Mobile: the application reads one chunk (if any) and consumes it at the read rate.
    fn app_read(&mut self) {
        let m = self.mobile.as_mut().unwrap();
        m.app_busy = false;
        if self.transport_done.is_some() {
            return;
        }
        let conn = self.conns[CLIENT].as_mut().unwrap();
        let mut n = 0usize;
        let readable: Vec<u64> = conn.readable().collect();
        for s in readable {
            while n < READ_CHUNK {
                match conn.stream_recv(s, &mut self.buf[..READ_CHUNK - n]) {
                    Ok((k, fin)) => {
                        n += k;
                        *self.got.entry(s).or_default() += k as u64;
                        if fin {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        }
        if n == 0 {
            return; // idle until the transport has data
        }
        let start = m.app_free.max(self.now);
        m.read += n as u64;
        m.app_free = start + ns(8.0 * n as f64 / m.rate.at(start as f64 / 1e9));
        m.app_busy = true;
        let t = m.app_free;
        self.push(t, Kind::AppRead);
        self.flush(CLIENT); // reading may return flow-control credit
    }

    fn mobile_arrive(&mut self, data: Vec<u8>) {
        let m = self.mobile.as_mut().unwrap();
        if m.socket_bytes + data.len() as u64 > m.socket_limit {
            m.dropped += 1;
            return;
        }
        m.socket_bytes += data.len() as u64;
        m.socket.push_back(data);
        if !m.busy {
            self.next_packet();
        }
    }

    /// The network thread: a timer that came due runs first, then the next datagram.
    fn next_packet(&mut self) {
        let m = self.mobile.as_mut().unwrap();
        if m.timer_due {
            m.timer_due = false;
            self.run_timer(CLIENT);
        }
        let m = self.mobile.as_mut().unwrap();
        let Some(data) = m.socket.pop_front() else {
            m.busy = false;
            return;
        };
        m.busy = true;
        m.socket_bytes -= data.len() as u64;
        let t = self.now + ns(m.cpu.draw());
        self.push(t, Kind::CpuDone(data));
    }

    fn step(&mut self, kind: Kind) {
        match kind {
            Kind::Deliver(SERVER, d) => self.server_in(d),
            Kind::Deliver(_, d) if self.mobile.is_some() => self.mobile_arrive(d),
            Kind::Deliver(_, d) => self.client_packet(d),
            Kind::Timer(side, gen) => self.on_timer(side, gen),
            Kind::CpuDone(d) => {
                self.client_packet(d);
                self.next_packet();
            }
            Kind::AppRead => self.app_read(),
            Kind::Wake(side, gen) => {
                if gen == self.wake_gen[side] {
                    self.wake_at[side] = None;
                    if side == CLIENT && self.mobile.as_ref().is_some_and(|m| m.busy) {
                        return; // the network thread sends when it is free
                    }
                    self.flush(side);
                }
            }
        }
    }

    fn closed(&self) -> bool {
        self.conns
            .iter()
            .all(|c| c.as_ref().is_none_or(|c| c.is_closed()))
    }

    /// Runs events until `stop` or until the heap is empty or the next event is after
    /// `limit` (ns); true when it stopped at the limit.
    fn run(&mut self, limit: u64, stop: fn(&Sim) -> bool) -> bool {
        while !stop(self) && self.error.is_none() {
            let Some(ev) = self.heap.pop() else {
                return false;
            };
            if ev.t > limit {
                self.now = limit;
                return true;
            }
            self.now = ev.t;
            quiche::statemine::set_virtual_time(Duration::from_nanos(self.now));
            self.step(ev.kind);
        }
        false
    }
}

/// Seeds quiche's own random draws (packet-number skips) on this thread from the run's
/// `seed`; the client's and the server's connection ids, drawn from it too.
pub fn seed_run(seed: u64) -> (Vec<u8>, Vec<u8>) {
    quiche::statemine::set_random_seed(Rng::new(seed, 0x4a2d).next_u64());
    let mut ids = Rng::new(seed, 0x1d5);
    let mut cid = || {
        (0..CID_LEN)
            .map(|_| ids.next_u64() as u8)
            .collect::<Vec<u8>>()
    };
    (cid(), cid())
}

/// Runs the transfer of `cfg` in virtual time. `cert_dir` holds the lab's cert.pem and
/// key.pem; with `qlog_dir` each connection writes a qlog there.
pub fn simulate(cfg: &Config, cert_dir: &str, qlog_dir: Option<String>) -> Result<Outcome, String> {
    quiche::statemine::set_virtual_time(Duration::ZERO);
    let (client_scid, server_scid) = seed_run(cfg.seed);
    let down = Link::new(cfg.path.down.clone(), direction_seed(cfg.seed, true), None)
        .map_err(|e| format!("path.down.{e}"))?;
    let up = Link::new(cfg.path.up.clone(), direction_seed(cfg.seed, false), None)
        .map_err(|e| format!("path.up.{e}"))?;
    let mut client_config = quiche_config(cfg, false, cert_dir)?;
    let server_config = quiche_config(cfg, true, cert_dir)?;
    let mut client = quiche::connect(
        Some(SERVER_NAME),
        &quiche::ConnectionId::from_ref(&client_scid),
        addr(CLIENT),
        addr(SERVER),
        &mut client_config,
    )
    .map_err(|e| format!("client connect: {e}"))?;
    set_qlog(&mut client, &qlog_dir, &client_scid, "client")?;
    let mobile = cfg.mobile().then(|| Mobile {
        socket: VecDeque::new(),
        socket_bytes: 0,
        socket_limit: cfg
            .client
            .socket_buffer_bytes
            .unwrap_or(DEFAULT_SOCKET_BUFFER),
        busy: false,
        timer_due: false,
        dropped: 0,
        cpu: CpuTime::new(
            cfg.client.per_packet_cpu_s,
            cfg.client.per_packet_cpu_cv,
            cfg.seed,
        ),
        rate: ReadRate::new(
            cfg.client.read_rate_bps.unwrap_or(1.0),
            cfg.client.read_rate_cv,
            if cfg.client.read_rate_interval_s > 0.0 {
                cfg.client.read_rate_interval_s
            } else {
                DEFAULT_READ_INTERVAL_S
            },
            cfg.seed,
        ),
        app_free: 0,
        app_busy: false,
        read: 0,
        received: 0,
    });
    let mut sim = Sim {
        cfg,
        now: 0,
        heap: BinaryHeap::new(),
        seq: 0,
        links: [down, up],
        conns: [None, None],
        server_config,
        server_scid,
        timer_at: [None; 2],
        timer_gen: [0; 2],
        fired_at: [None; 2],
        last_tx: [0; 2],
        wake_at: [None; 2],
        wake_gen: [0; 2],
        sent: [0; 2],
        out: vec![0; 65535],
        buf: vec![0; 65535],
        zeros: vec![0; 64 << 10],
        requests: HashMap::new(),
        pending: BTreeMap::new(),
        got: HashMap::new(),
        requested: false,
        objects_done: 0,
        total: cfg.objects.count * cfg.objects.size_bytes,
        transport_done: None,
        plt: None,
        mobile,
        qlog_dir,
        error: None,
    };
    sim.conns[CLIENT] = Some(client);
    sim.flush(CLIENT);

    let limit = ns(cfg.time_limit_s);
    let hit_limit = sim.run(limit, |s| s.transport_done.is_some());
    let mut out = Outcome::default();
    if hit_limit {
        out.error = Some("virtual time limit reached".into());
    } else if sim.error.is_none() && sim.transport_done.is_none() {
        out.error = Some("the transfer stalled: no event left before the last byte arrived".into());
    }
    if out.error.is_none() && sim.error.is_none() {
        // let both ends exchange CONNECTION_CLOSE and drain (the patch logs the close)
        let end = limit.min(sim.transport_done.unwrap() + CLOSE_GRACE_NS);
        sim.run(end, |s| s.closed());
    }
    out.error = out.error.or(sim.error.take());
    let m_dropped = sim.mobile.as_ref().map_or(0, |m| m.dropped);
    let m_read = sim.mobile.as_ref().map(|m| m.read);
    out.bytes = if out.error.is_some() {
        m_read.unwrap_or_else(|| sim.got.values().sum())
    } else {
        sim.total
    };
    if out.error.is_none() {
        out.plt_s = sim.plt.map(|p| p as f64 / 1e9);
    }
    out.retransmissions = sim.conns[SERVER]
        .as_ref()
        .map_or(0, |c| c.stats().lost as u64);
    out.packets_sent = sim.sent[0] + sim.sent[1];
    out.packets_dropped = sim.links[0].stats.dropped() + sim.links[1].stats.dropped() + m_dropped;
    out.virtual_time_s = sim.now as f64 / 1e9;
    quiche::statemine::clear_virtual_time();
    quiche::statemine::clear_random_seed();
    Ok(out)
}
