//! statemine's quinn corpus program: one connection over loopback, the server sending
//! BYTES on a unidirectional stream, each side writing its own qlog (quinn's `qlog`
//! feature, unmodified). Usage: quinn-corpus LISTEN CONNECT BYTES OUT_DIR
//! (LISTEN: the server's address; CONNECT: where the client sends, e.g. a relay).
use std::{fs::File, io::BufWriter, net::SocketAddr, sync::Arc, time::Instant};

fn transport(path: std::path::PathBuf, title: &str, start: Instant) -> quinn::TransportConfig {
    let mut config = quinn::TransportConfig::default();
    let mut qlog = quinn::QlogConfig::default();
    qlog.writer(Box::new(BufWriter::new(File::create(path).expect("qlog file"))))
        .title(Some(title.to_string()))
        .start_time(start);
    config.qlog_stream(qlog.into_stream());
    config
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let listen: SocketAddr = args[1].parse().expect("LISTEN");
    let connect: SocketAddr = args[2].parse().expect("CONNECT");
    let bytes: usize = args[3].parse().expect("BYTES");
    let out = std::path::PathBuf::from(&args[4]);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("cert");
    let cert_der = cert.cert.der().clone();
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der());
    let start = Instant::now();
    let mut server_config =
        quinn::ServerConfig::with_single_cert(vec![cert_der.clone()], key.into()).expect("server");
    server_config.transport_config(Arc::new(transport(out.join("server.sqlog"), "quinn server", start)));
    let server = quinn::Endpoint::server(server_config, listen).expect("listen");
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert_der).expect("root");
    let mut client_config = quinn::ClientConfig::with_root_certificates(Arc::new(roots)).expect("client");
    client_config.transport_config(Arc::new(transport(out.join("client.sqlog"), "quinn client", start)));
    let mut client = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).expect("client endpoint");
    client.set_default_client_config(client_config);
    let sender = tokio::spawn(async move {
        let conn = server.accept().await.expect("incoming").await.expect("accept");
        let mut stream = conn.open_uni().await.expect("open");
        stream.write_all(&vec![7u8; bytes]).await.expect("write");
        stream.finish().expect("finish");
        conn.closed().await;
        server.wait_idle().await;
    });
    let conn = client.connect(connect, "localhost").expect("connect").await.expect("handshake");
    let mut stream = conn.accept_uni().await.expect("accept uni");
    let data = stream.read_to_end(usize::MAX).await.expect("read");
    assert_eq!(data.len(), bytes);
    conn.close(0u32.into(), b"done");
    client.wait_idle().await;
    sender.await.expect("server task");
}
