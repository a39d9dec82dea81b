//! statemine's quiche corpus program: one connection over loopback, the server sending
//! BYTES on a unidirectional stream (id 3), each side writing its own qlog (quiche's `qlog`
//! feature, unmodified, CUBIC), one thread per side on blocking UDP sockets.
//! Usage: quiche-corpus LISTEN CONNECT BYTES OUT_DIR (LISTEN: the server's address;
//! CONNECT: where the client sends, e.g. a relay); CORPUS_CERT and CORPUS_KEY name the
//! server's PEM certificate and key.
use std::{fs::File, io::BufWriter, net::SocketAddr, net::UdpSocket, time::Duration};

fn config(server: bool) -> quiche::Config {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("config");
    if server {
        c.load_cert_chain_from_pem_file(&std::env::var("CORPUS_CERT").expect("CORPUS_CERT"))
            .expect("cert");
        c.load_priv_key_from_pem_file(&std::env::var("CORPUS_KEY").expect("CORPUS_KEY"))
            .expect("key");
    }
    c.verify_peer(false);
    c.set_application_protos(&[b"corpus"]).expect("alpn");
    c.set_max_idle_timeout(5000);
    c.set_max_recv_udp_payload_size(1350);
    c.set_max_send_udp_payload_size(1350);
    c.set_initial_max_data(16_000_000);
    c.set_initial_max_stream_data_uni(16_000_000);
    c.set_initial_max_streams_uni(4);
    c.set_cc_algorithm(quiche::CongestionControlAlgorithm::CUBIC);
    c
}

fn qlog(conn: &mut quiche::Connection, path: std::path::PathBuf, title: &str) {
    let writer = BufWriter::new(File::create(path).expect("qlog file"));
    conn.set_qlog(Box::new(writer), title.to_string(), "statemine corpus".to_string());
}

/// Receive (until the connection's next timeout), run `app`, send; until closed.
fn drive(
    socket: &UdpSocket, conn: &mut quiche::Connection, first: Option<(Vec<u8>, SocketAddr)>,
    mut app: impl FnMut(&mut quiche::Connection),
) {
    let local = socket.local_addr().expect("local");
    let mut buf = vec![0u8; 65535];
    let mut out = vec![0u8; 1350];
    if let Some((mut data, from)) = first {
        conn.recv(&mut data, quiche::RecvInfo { from, to: local }).expect("first packet");
    }
    loop {
        app(conn);
        loop {
            match conn.send(&mut out) {
                Ok((len, info)) => {
                    socket.send_to(&out[..len], info.to).expect("send");
                }
                Err(quiche::Error::Done) => break,
                Err(e) => panic!("send: {e:?}"),
            }
        }
        if conn.is_closed() {
            return;
        }
        let wait = conn.timeout().unwrap_or(Duration::from_millis(100));
        socket.set_read_timeout(Some(wait.max(Duration::from_micros(50)))).expect("timeout");
        match socket.recv_from(&mut buf) {
            Ok((len, from)) => {
                let _ = conn.recv(&mut buf[..len], quiche::RecvInfo { from, to: local });
            }
            Err(_) => conn.on_timeout(),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let listen: SocketAddr = args[1].parse().expect("LISTEN");
    let connect: SocketAddr = args[2].parse().expect("CONNECT");
    let bytes: usize = args[3].parse().expect("BYTES");
    let out = std::path::PathBuf::from(&args[4]);
    let server_socket = UdpSocket::bind(listen).expect("listen");
    let server_out = out.clone();
    let server = std::thread::spawn(move || {
        let mut buf = vec![0u8; 65535];
        let (len, from) = server_socket.recv_from(&mut buf).expect("first packet");
        let scid = quiche::ConnectionId::from_ref(&[2u8; 16]);
        let mut cfg = config(true);
        let local = server_socket.local_addr().expect("local");
        let mut conn = quiche::accept(&scid, None, local, from, &mut cfg).expect("accept");
        qlog(&mut conn, server_out.join("server.sqlog"), "quiche server");
        let data = vec![7u8; bytes];
        let mut sent = 0;
        drive(&server_socket, &mut conn, Some((buf[..len].to_vec(), from)), |c| {
            if c.is_established() && sent < bytes {
                if let Ok(n) = c.stream_send(3, &data[sent..], true) {
                    sent += n;
                }
            }
        });
    });
    let socket = UdpSocket::bind("127.0.0.1:0").expect("client socket");
    let scid = quiche::ConnectionId::from_ref(&[1u8; 16]);
    let mut cfg = config(false);
    let local = socket.local_addr().expect("local");
    let mut conn = quiche::connect(Some("localhost"), &scid, local, connect, &mut cfg).expect("connect");
    qlog(&mut conn, out.join("client.sqlog"), "quiche client");
    let mut got = 0;
    let mut buf = vec![0u8; 65535];
    drive(&socket, &mut conn, None, |c| {
        for id in c.readable() {
            while let Ok((n, fin)) = c.stream_recv(id, &mut buf) {
                got += n;
                if fin && got == bytes {
                    let _ = c.close(true, 0, b"done");
                }
            }
        }
    });
    assert_eq!(got, bytes);
    drop(conn);
    server.join().expect("server thread");
}
