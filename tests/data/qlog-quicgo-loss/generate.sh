#!/bin/sh
# Regenerate the qlogs of this folder (README.md): build gen/ (unmodified quic-go v0.63.0
# from the Go module proxy), run both conditions on loopback, keep the servers' qlogs
# gzip-compressed as <condition>/conn-<i>.sqlog.gz and the relay's counts as
# <condition>.relay.jsonl (beside the folder: statemine reads every file of a folder). Usage: sh tests/data/qlog-quicgo-loss/generate.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-modcacherw GOWORK=off GOTOOLCHAIN=local
(cd "$here/gen" && go build -o "$work/gen" .)
run() {  # condition, extra flags
    rm -rf "${here:?}/$1"
    mkdir -p "$here/$1"
    shift_name=$1
    shift
    "$work/gen" -out "$work/$shift_name" -conns 6 -bytes 200000 -loss 0.02 "$@" >"$here/$shift_name.relay.jsonl"
    for dir in "$work/$shift_name"/*/; do
        i=$(basename "$dir")
        gzip -9 -n -c "$dir"/*_server.sqlog >"$here/$shift_name/conn-$i.sqlog.gz"
    done
}
run loss2 -seed 1
run loss2-jitter10 -seed 101 -jitter 10
