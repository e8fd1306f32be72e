# Convenience recipes; .ci/run is the source of truth and needs no just.

# Run the tests, as the README says.
test:
    go test ./...

# Formatting, vet and staticcheck.
lint:
    test -z "$(gofmt -l .)"
    go vet ./...
    go vet -tags hosttest ./...
    go vet -tags natsbench ./...
    go tool staticcheck ./...

# An interlink-bus whose bench can start a NATS server of its own
# (bench --store nats without --nats); the server is otherwise a test
# dependency and not linked.
build-bench:
    CGO_ENABLED=0 go build -tags natsbench -o bin/ ./cmd/interlink-bus

# Everything CI runs.
ci:
    bash .ci/run

# The tests against real host programs installed with npm (skipped without node).
host-test:
    go test -tags hosttest -count=1 -v ./internal/hosttest/

# Build both binaries into bin/ without cgo.
build:
    CGO_ENABLED=0 go build -o bin/ ./cmd/interlink-bus ./cmd/interlink-mcp

# Build and vet both binaries for every release target, without cgo.
cross:
    #!/usr/bin/env bash
    set -euo pipefail
    for target in linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64; do
      goos=${target%/*} goarch=${target#*/}
      GOOS=$goos GOARCH=$goarch CGO_ENABLED=0 go build -o /dev/null ./cmd/interlink-bus ./cmd/interlink-mcp
      GOOS=$goos GOARCH=$goarch CGO_ENABLED=0 go vet ./...
      echo "$target ok"
    done

# Example: just release v0.1.0
# Release archives for the five targets, with SHA256SUMS, in dist/.
release version:
    #!/usr/bin/env bash
    set -euo pipefail
    rm -rf dist && mkdir -p dist
    for target in linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64; do
      goos=${target%/*} goarch=${target#*/} ext=""
      [ "$goos" = windows ] && ext=.exe
      name="interlink-{{version}}-$goos-$goarch"
      mkdir -p "dist/$name"
      for cmd in interlink-bus interlink-mcp; do
        GOOS=$goos GOARCH=$goarch CGO_ENABLED=0 go build -trimpath           -ldflags "-s -w -X github.com/interlink-go/interlink/internal/version.Version={{version}}"           -o "dist/$name/$cmd$ext" "./cmd/$cmd"
      done
      cp README.md "dist/$name/"
      tar -C dist -czf "dist/$name.tar.gz" "$name"
      rm -rf "dist/$name"
    done
    (cd dist && sha256sum *.tar.gz > SHA256SUMS)
    ls -l dist

# Show that no dependency needs cgo: a cgo-free build of both binaries.
no-cgo:
    CGO_ENABLED=0 go build -o /dev/null ./cmd/interlink-bus
    CGO_ENABLED=0 go build -o /dev/null ./cmd/interlink-mcp
    test -z "$(CGO_ENABLED=1 go list -deps -f '{{{{if and (not .Standard) .CgoFiles}}{{{{.ImportPath}}{{{{end}}' ./cmd/...)"

# Create a secret key at the default path, or at the path given: just keygen PATH
keygen out="$HOME/.config/interlink/id.key":
    go run ./cmd/interlink-mcp keygen --out {{out}}

# Fuzz one target for a while: just fuzz FuzzDecodeMessage ./internal/identity 60s
fuzz target pkg time="60s":
    go test -run='^$' -fuzz='^{{target}}$' -fuzztime={{time}} {{pkg}}
