#!/usr/bin/env bash
# Builds the example scheduler outside the source tree: the protocol's Go code generated from
# harness/external/scheduler.proto, Go's cache and the binary all go into OUT (default
# ${XDG_CACHE_HOME:-~/.cache}/herd-go-scheduler), and the binary's path is the last line printed:
#   scheduler=$(examples/go-scheduler/build.sh [OUT])
# Needs Go, protoc and the gRPC and protobuf sources as Debian packages them (GOPATH mode, no
# module proxy):
#   apt-get install golang-go golang-google-grpc-dev golang-google-protobuf-dev \
#     golang-github-golang-protobuf-1-5-dev protoc-gen-go protoc-gen-go-grpc protobuf-compiler
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
proto="$here/../../harness/external"
out="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/herd-go-scheduler}"
mkdir -p "$out/src"
out="$(cd "$out" && pwd)"
protoc -I "$proto" --go_out="$out/src" --go-grpc_out="$out/src" "$proto/scheduler.proto"
# GOPATH: the generated package (herd/schedulerpb) in OUT, the program (herd/scheduler) here.
GO111MODULE=off GOPATH="$out:$here:/usr/share/gocode" GOCACHE="${GOCACHE:-$out/.cache}" \
  go build -o "$out/bin/scheduler" herd/scheduler
echo "$out/bin/scheduler"
