//! statemine's quiche smoke program: one quiche client fetches one object
//! from one quiche server, both in this process, over an in-memory path
//! (a rate-limited drop-tail bottleneck and a fixed one-way delay each way,
//! optional random loss), in virtual time through the instrument patch's
//! clock hook (`quiche::statemine::set_virtual_time`), with quiche's own
//! random choices seeded (`quiche::statemine::set_random_seed`).
//!
//! Usage: smoke CERT KEY CC BYTES LOSS_PER_MILLE SEED QLOG_OR_DASH [BLACKOUT]
//!
//! BLACKOUT `START_MS+LEN_MS` drops every server-to-client packet sent in that
//! window of virtual time (so the server's probe timeout fires).
//!
//! The statemine lines go where `STATEMINE_LOG` says (the patch reads it).
//! Prints one summary line: `done t=<virtual seconds> bytes=<received>`.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;
use std::time::Instant;

const MAX_DATAGRAM: usize = 1350;
/// Bottleneck rate (bytes per second), one-way delay, queue limit (bytes).
const RATE: f64 = 1_250_000.0;
const DELAY: Duration = Duration::from_millis(20);
const QUEUE: usize = 64 * 1024;
const LIMIT: Duration = Duration::from_secs(120);

/// A deterministic generator (xorshift64*), for the random loss.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One direction of the path: a FIFO bottleneck then a fixed delay.
struct Link {
    /// Virtual time (since the clock origin) when the bottleneck is free.
    free_at: Duration,
    /// Packets in flight: arrival time and bytes.
    queue: VecDeque<(Duration, Vec<u8>)>,
    loss: f64,
    /// Every packet sent in this window of virtual time is dropped.
    blackout: (Duration, Duration),
}

impl Link {
    fn new(loss: f64) -> Self {
        Link {
            free_at: Duration::ZERO,
            queue: VecDeque::new(),
            loss,
            blackout: (Duration::ZERO, Duration::ZERO),
        }
    }

    /// Bytes still waiting at the bottleneck at `now`.
    fn backlog(&self, now: Duration) -> usize {
        (self.free_at.saturating_sub(now).as_secs_f64() * RATE) as usize
    }

    fn send(&mut self, now: Duration, pkt: &[u8], rng: &mut Rng) {
        let dark = now >= self.blackout.0 && now < self.blackout.1;
        if dark || self.backlog(now) + pkt.len() > QUEUE || rng.next_f64() < self.loss {
            return;
        }
        let start = self.free_at.max(now);
        self.free_at = start + Duration::from_secs_f64(pkt.len() as f64 / RATE);
        self.queue.push_back((self.free_at + DELAY, pkt.to_vec()));
    }

    fn next_arrival(&self) -> Option<Duration> {
        self.queue.front().map(|p| p.0)
    }
}

fn since(origin: Instant, at: Instant) -> Duration {
    at.saturating_duration_since(origin)
}

/// Sends what `conn` has to send now. Pacing: each packet leaves at its
/// `SendInfo::at`; once one is due later than now, the application stops
/// asking quiche for more until then (returned: the time to come back).
fn flush(
    conn: &mut quiche::Connection, now: Duration, link: &mut Link, rng: &mut Rng,
    origin: Instant,
) -> Option<Duration> {
    let mut out = [0u8; MAX_DATAGRAM];
    loop {
        match conn.send(&mut out) {
            Ok((n, info)) => {
                let at = now.max(since(origin, info.at));
                link.send(at, &out[..n], rng);
                if at > now {
                    return Some(at);
                }
            },
            Err(quiche::Error::Done) => return None,
            Err(e) => panic!("send: {e:?}"),
        }
    }
}

fn config(cert: &str, key: &str, cc: &str, server: bool) -> quiche::Config {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    c.set_application_protos(&[b"statemine"]).unwrap();
    c.set_max_idle_timeout(30_000);
    c.set_max_recv_udp_payload_size(MAX_DATAGRAM);
    c.set_max_send_udp_payload_size(MAX_DATAGRAM);
    c.set_initial_max_data(16 << 20);
    c.set_initial_max_stream_data_bidi_local(16 << 20);
    c.set_initial_max_stream_data_bidi_remote(16 << 20);
    c.set_initial_max_streams_bidi(4);
    c.set_disable_active_migration(true);
    if let Err(e) = c.set_cc_algorithm_name(cc) {
        eprintln!("smoke: quiche does not know the congestion controller {cc:?} ({e:?})");
        std::process::exit(2);
    }
    if server {
        c.load_cert_chain_from_pem_file(cert).unwrap();
        c.load_priv_key_from_pem_file(key).unwrap();
    } else {
        c.verify_peer(false);
    }
    c
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 8 && a.len() != 9 {
        eprintln!("usage: smoke CERT KEY CC BYTES LOSS_PER_MILLE SEED QLOG_OR_DASH [BLACKOUT]");
        std::process::exit(2);
    }
    let (cert, key, cc) = (&a[1], &a[2], &a[3]);
    let total: usize = a[4].parse().expect("BYTES");
    let loss = a[5].parse::<f64>().expect("LOSS_PER_MILLE") / 1000.0;
    let mut rng = Rng(a[6].parse::<u64>().expect("SEED") | 1);

    let seed: u64 = a[6].parse().expect("SEED");
    quiche::statemine::set_random_seed(seed);
    quiche::statemine::set_virtual_time(Duration::ZERO);
    let origin = quiche::statemine::clock_origin();
    let mut now = Duration::ZERO;

    let client_addr: SocketAddr = "127.0.0.1:4433".parse().unwrap();
    let server_addr: SocketAddr = "127.0.0.1:4434".parse().unwrap();
    let mut ccfg = config(cert, key, cc, false);
    let mut scfg = config(cert, key, cc, true);
    let cid_c = quiche::ConnectionId::from_ref(&[1u8; 16]);
    let cid_s = quiche::ConnectionId::from_ref(&[2u8; 16]);
    let mut client =
        quiche::connect(Some("statemine"), &cid_c, client_addr, server_addr, &mut ccfg)
            .unwrap();
    let mut server =
        quiche::accept(&cid_s, None, server_addr, client_addr, &mut scfg).unwrap();
    if a[7] != "-" {
        let f = std::fs::File::create(&a[7]).expect("qlog file");
        server.set_qlog(Box::new(f), "statemine smoke".into(), "server".into());
    }

    let mut up = Link::new(0.0);
    let mut down = Link::new(loss);
    if let Some((start, len)) = a.get(8).and_then(|b| b.split_once('+')) {
        let ms = |s: &str| Duration::from_millis(s.parse().expect("BLACKOUT START_MS+LEN_MS"));
        down.blackout = (ms(start), ms(start) + ms(len));
    }
    let mut sent = 0usize;
    let mut received = 0usize;
    let mut requested = false;
    let mut fin = false;
    let body = vec![0x5au8; 64 * 1024];
    let mut buf = vec![0u8; 65536];
    // Per endpoint (client, server): no send() before this virtual time.
    let mut hold = [Duration::ZERO; 2];

    while now < LIMIT && !(client.is_closed() && server.is_closed()) {
        // Deliver every packet that has arrived by now.
        for (link, to, from, conn) in [
            (&mut up, server_addr, client_addr, &mut server),
            (&mut down, client_addr, server_addr, &mut client),
        ] {
            while link.next_arrival().is_some_and(|t| t <= now) {
                let (_, mut pkt) = link.queue.pop_front().unwrap();
                let info = quiche::RecvInfo { from, to };
                let _ = conn.recv(&mut pkt, info);
            }
        }
        for conn in [&mut client, &mut server] {
            if conn.timeout_instant().is_some_and(|t| since(origin, t) <= now) {
                conn.on_timeout();
            }
        }
        // The application: the client asks once, the server answers with
        // `total` bytes, the client reads and closes when it has them all.
        if client.is_established() && !requested {
            client.stream_send(0, b"GET", true).unwrap();
            requested = true;
        }
        for id in server.readable().collect::<Vec<_>>() {
            while server.stream_recv(id, &mut buf).is_ok() {}
        }
        while requested && server.is_established() && sent < total {
            let n = (total - sent).min(body.len());
            match server.stream_send(0, &body[..n], sent + n == total) {
                Ok(w) if w > 0 => sent += w,
                _ => break,
            }
        }
        for id in client.readable().collect::<Vec<_>>() {
            while let Ok((n, f)) = client.stream_recv(id, &mut buf) {
                received += n;
                fin |= f;
            }
        }
        if fin && !client.is_closed() && !client.is_draining() {
            let _ = client.close(true, 0, b"done");
        }
        // An endpoint whose last packet is still due later is not asked for
        // more (asking on every ACK would let quiche's pacer run ahead).
        if hold[0] <= now {
            hold[0] = flush(&mut client, now, &mut up, &mut rng, origin).unwrap_or(now);
        }
        if hold[1] <= now {
            hold[1] = flush(&mut server, now, &mut down, &mut rng, origin).unwrap_or(now);
        }

        // Advance virtual time to the next thing that happens.
        let next = [
            (hold[0] > now).then_some(hold[0]),
            (hold[1] > now).then_some(hold[1]),
            up.next_arrival(),
            down.next_arrival(),
            client.timeout_instant().map(|t| since(origin, t)),
            server.timeout_instant().map(|t| since(origin, t)),
        ]
        .into_iter()
        .flatten()
        .min();
        match next {
            Some(t) => now = t.max(now),
            None => break,
        }
        quiche::statemine::set_virtual_time(now);
    }
    println!("done t={:.6} bytes={received}", now.as_secs_f64());
    if received != total {
        std::process::exit(1);
    }
}
