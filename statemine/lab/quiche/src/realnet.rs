//! Real-time mode (docs/realtime.md): the same quiche client and server and the same
//! application protocol as the virtual-time loop (src/sim.rs), but on the real clock
//! (the instrument patch's clock is left real, so `t=` in the log is Unix time) and over
//! two UDP sockets the caller made, one in each network namespace of the real-time path
//! (statemine/lab/realtime/quiche.py), inherited as file descriptors
//! `$STATEMINE_REALNET_FDS = "SERVER,CLIENT"`. The path model runs in the caller's
//! emulator, not here: the config's `path` is not used.
//!
//! One thread runs both endpoints: it waits in `ppoll` on both sockets until the earliest
//! of the two connections' timers and the server's next paced datagram, receives every
//! queued datagram, runs due timers and sends. The server paces as in the virtual loop:
//! a datagram whose `SendInfo::at` is in the future waits in a queue until then, and
//! quiche is asked for more only while that queue ends within
//! `max_release_into_future()` of now. The client sends at once. Desktop client only.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::sim::{
    quiche_config, read_all, read_requests, seed_run, send_requests, serve, set_qlog, Outcome,
    SERVER_NAME,
};

/// Longest single wait, so the loop checks its deadline at least this often.
const MAX_WAIT: Duration = Duration::from_millis(50);
/// Time the loop keeps running after the transfer so both ends exchange CONNECTION_CLOSE.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// One endpoint: its socket, address, connection and paced datagrams not yet due.
struct End {
    sock: UdpSocket,
    local: SocketAddr,
    conn: Option<quiche::Connection>,
    queue: VecDeque<(Instant, Vec<u8>, SocketAddr)>,
    sent: u64,
    send_errors: u64,
}

impl End {
    fn new(fd: i32) -> Result<End, String> {
        // SAFETY: the caller passed us this open UDP socket's descriptor to own.
        let sock = unsafe { UdpSocket::from_raw_fd(fd) };
        sock.set_nonblocking(true)
            .map_err(|e| format!("socket {fd}: {e}"))?;
        let local = sock.local_addr().map_err(|e| format!("socket {fd}: {e}"))?;
        Ok(End {
            sock,
            local,
            conn: None,
            queue: VecDeque::new(),
            sent: 0,
            send_errors: 0,
        })
    }

    fn send_now(&mut self, data: &[u8], to: SocketAddr) {
        match self.sock.send_to(data, to) {
            Ok(_) => self.sent += 1,
            Err(_) => self.send_errors += 1, // a full socket buffer drops, as a kernel would
        }
    }

    /// Sends queued datagrams that are due, then what quiche has (`pace`: respecting
    /// `SendInfo::at` and the release horizon).
    fn flush(&mut self, pace: bool, out: &mut [u8]) -> Result<(), String> {
        let now = Instant::now();
        while self.queue.front().is_some_and(|(at, ..)| *at <= now) {
            let (_, data, to) = self.queue.pop_front().unwrap();
            self.send_now(&data, to);
        }
        loop {
            let Some(conn) = self.conn.as_mut() else {
                return Ok(());
            };
            let horizon = conn.max_release_into_future();
            if pace && self.queue.back().is_some_and(|(at, ..)| *at > now + horizon) {
                return Ok(()); // come back when the queue ends within the horizon
            }
            let (n, info) = match conn.send(out) {
                Ok(x) => x,
                Err(quiche::Error::Done) => return Ok(()),
                Err(e) => return Err(format!("send: {e}")),
            };
            if pace && (info.at > now || !self.queue.is_empty()) {
                self.queue.push_back((info.at, out[..n].to_vec(), info.to));
            } else {
                self.send_now(&out[..n], info.to);
            }
        }
    }

    /// The earliest instant this end needs to act: its timer or its next paced datagram.
    fn next_instant(&self) -> Option<Instant> {
        let timer = self.conn.as_ref().and_then(|c| c.timeout_instant());
        let paced = self.queue.front().map(|(at, ..)| *at);
        match (timer, paced) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_timeout_if_due(&mut self) {
        if let Some(c) = self.conn.as_mut() {
            if c.timeout_instant().is_some_and(|t| t <= Instant::now()) {
                c.on_timeout();
            }
        }
    }
}

/// Waits until a socket is readable or `until` (at most MAX_WAIT).
fn wait(fds: [i32; 2], until: Instant) {
    let d = until
        .saturating_duration_since(Instant::now())
        .min(MAX_WAIT);
    let ts = libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    };
    let mut pfd = fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    // SAFETY: two valid pollfd entries and a valid timespec; no signal mask change.
    unsafe { libc::ppoll(pfd.as_mut_ptr(), 2, &ts, std::ptr::null()) };
}

/// Runs the transfer of `cfg` on the real clock over the sockets `fds` (server, client).
pub fn simulate(
    cfg: &Config,
    cert_dir: &str,
    qlog_dir: Option<String>,
    fds: (i32, i32),
) -> Result<Outcome, String> {
    if cfg.mobile() {
        return Err("the mobile profile is not supported in real time for quiche".into());
    }
    let (client_scid, server_scid) = seed_run(cfg.seed);
    let mut server = End::new(fds.0)?;
    let mut client = End::new(fds.1)?;
    let raw = [server.sock.as_raw_fd(), client.sock.as_raw_fd()];
    let mut client_config = quiche_config(cfg, false, cert_dir)?;
    let mut server_config = quiche_config(cfg, true, cert_dir)?;
    let start = Instant::now();
    let mut conn = quiche::connect(
        Some(SERVER_NAME),
        &quiche::ConnectionId::from_ref(&client_scid),
        client.local,
        server.local,
        &mut client_config,
    )
    .map_err(|e| format!("client connect: {e}"))?;
    set_qlog(&mut conn, &qlog_dir, &client_scid, "client")?;
    client.conn = Some(conn);

    let (mut out, mut buf) = (vec![0u8; 65535], vec![0u8; 65535]);
    let zeros = vec![0u8; 64 << 10];
    let mut requests: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut pending: BTreeMap<u64, u64> = BTreeMap::new();
    let mut got: HashMap<u64, u64> = HashMap::new();
    let (mut requested, mut objects_done) = (false, 0u64);
    let mut done: Option<Instant> = None;
    let limit = start + Duration::from_secs_f64(cfg.time_limit_s);
    let mut error: Option<String> = None;

    let result: Result<(), String> = (|| loop {
        client.flush(false, &mut out)?;
        server.flush(true, &mut out)?;
        let now = Instant::now();
        match done {
            Some(d) => {
                let closed = [&server, &client]
                    .iter()
                    .all(|e| e.conn.as_ref().is_none_or(|c| c.is_closed()));
                if closed || now >= d + CLOSE_GRACE {
                    return Ok(());
                }
            }
            None if now >= limit => return Err("wall-clock time limit reached".into()),
            None => {}
        }
        let next = [server.next_instant(), client.next_instant()]
            .into_iter()
            .flatten()
            .fold(now + MAX_WAIT, Instant::min);
        wait(raw, next);
        // the server: accept on the first datagram, then read requests and answer
        loop {
            let (n, from) = match server.sock.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(format!("server socket: {e}")),
            };
            if server.conn.is_none() {
                let scid = quiche::ConnectionId::from_ref(&server_scid);
                let mut c = quiche::accept(&scid, None, server.local, from, &mut server_config)
                    .map_err(|e| format!("server accept: {e}"))?;
                set_qlog(&mut c, &qlog_dir, &server_scid, "server")?;
                server.conn = Some(c);
            }
            let c = server.conn.as_mut().unwrap();
            let info = quiche::RecvInfo {
                from,
                to: server.local,
            };
            match c.recv(&mut buf[..n], info) {
                Ok(_) | Err(quiche::Error::Done) => {}
                Err(e) => return Err(format!("server recv: {e}")),
            }
            read_requests(c, &mut requests, &mut pending, &mut buf)?;
        }
        // the client: request once established, read everything, close when complete
        loop {
            let (n, from) = match client.sock.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(format!("client socket: {e}")),
            };
            let c = client.conn.as_mut().unwrap();
            let info = quiche::RecvInfo {
                from,
                to: client.local,
            };
            match c.recv(&mut buf[..n], info) {
                Ok(_) | Err(quiche::Error::Done) => {}
                Err(e) => return Err(format!("client recv: {e}")),
            }
            if !requested && c.is_established() {
                requested = true;
                send_requests(c, cfg)?;
            }
            if done.is_none() {
                objects_done += read_all(c, &mut got, &mut buf)?;
                if objects_done == cfg.objects.count {
                    done = Some(Instant::now());
                    let _ = c.close(true, 0, b"done");
                }
            }
        }
        server.on_timeout_if_due();
        client.on_timeout_if_due();
        if let Some(c) = server.conn.as_mut() {
            serve(c, &mut pending, &zeros)?;
        }
    })();
    if let Err(e) = result {
        error = Some(e);
    }
    let total = cfg.objects.count * cfg.objects.size_bytes;
    let mut out = Outcome {
        error,
        ..Default::default()
    };
    out.bytes = if out.error.is_none() {
        total
    } else {
        got.values().sum()
    };
    if out.error.is_none() {
        out.plt_s = done.map(|d| (d - start).as_secs_f64());
    }
    out.retransmissions = server.conn.as_ref().map_or(0, |c| c.stats().lost as u64);
    if let Some(p) = server.conn.as_ref().and_then(|c| c.path_stats().next()) {
        out.srtt_s = Some(p.rtt.as_secs_f64());
        out.min_rtt_s = p.min_rtt.map(|d| d.as_secs_f64());
    }
    out.packets_sent = server.sent + client.sent;
    out.packets_dropped = server.send_errors + client.send_errors; // local; the path's are the emulator's
    out.virtual_time_s = start.elapsed().as_secs_f64();
    quiche::statemine::clear_random_seed();
    Ok(out)
}
