#!/bin/sh
# Builds the Go kit into bin/: the stubs are generated from protos/ by the plugins
# go.mod pins (its `tool` lines), then vetted, then the starter bot is built.
#   PROTOC  the protoc to run (default: grpc_tools of the project's .venv, which
#           brings the well-known types, e.g. google/protobuf/timestamp.proto)
set -eu
cd "$(dirname "$0")"
ROOT=../..
PROTOC=${PROTOC:-$ROOT/.venv/bin/python -m grpc_tools.protoc}
export GOFLAGS="${GOFLAGS:-} -buildvcs=false -trimpath"

mkdir -p bin
go build -o bin/ google.golang.org/protobuf/cmd/protoc-gen-go \
    google.golang.org/grpc/cmd/protoc-gen-go-grpc
# arena.proto's go_package is mammamia/v1: with module=mammamia the stubs land in v1/.
rm -rf v1
$PROTOC -I"$ROOT/protos" \
    --plugin=protoc-gen-go=bin/protoc-gen-go --plugin=protoc-gen-go-grpc=bin/protoc-gen-go-grpc \
    --go_out=. --go_opt=module=mammamia --go-grpc_out=. --go-grpc_opt=module=mammamia \
    mammamia/v1/arena.proto
go vet ./...
go build -o bin/starter ./cmd/starter
