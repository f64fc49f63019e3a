#!/usr/bin/env bash
# Builds bin/scheduler from src/herd/scheduler, with the protocol's Go code generated from
# harness/external/scheduler.proto into src/herd/schedulerpb. Needs Go, protoc and the gRPC
# and protobuf sources as Debian packages them (GOPATH mode, no module proxy):
#   apt-get install golang-go golang-google-grpc-dev golang-google-protobuf-dev \
#     golang-github-golang-protobuf-1-5-dev protoc-gen-go protoc-gen-go-grpc protobuf-compiler
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
proto="$here/../../harness/external"
protoc -I "$proto" --go_out="$here/src" --go-grpc_out="$here/src" "$proto/scheduler.proto"
cd "$here"
GO111MODULE=off GOPATH="$here:/usr/share/gocode" GOCACHE="${GOCACHE:-$here/.cache}" \
  go build -o bin/scheduler herd/scheduler
