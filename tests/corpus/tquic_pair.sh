#!/bin/sh
# One tquic connection over loopback, unmodified tquic_tools: tquic_server serves a
# 400 kB file, tquic_client fetches it (CUBIC on both); each writes its qlog.
# Usage: tquic_pair.sh BIN_DIR LISTEN_PORT CONNECT_PORT OUT_DIR CERT_DIR
set -e
bin=$1 listen=$2 connect=$3 out=$4 certs=$5
mkdir -p "$out/root" "$out/server" "$out/client"
head -c 400000 /dev/zero > "$out/root/file"
"$bin/tquic_server" -l "127.0.0.1:$listen" -c "$certs/cert.pem" -k "$certs/key.pem" \
    -r "$out/root" --congestion-control-algor CUBIC --qlog-dir "$out/server" \
    > "$out/server.log" 2>&1 &
server=$!
sleep 0.5
status=0
timeout 60 "$bin/tquic_client" -c "127.0.0.1:$connect" --congestion-control-algor CUBIC \
    --qlog-dir "$out/client" https://localhost/file > "$out/client.log" 2>&1 || status=$?
sleep 0.5
kill "$server"
rm -r "$out/root"
exit $status
