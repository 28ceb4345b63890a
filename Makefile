# deltafs: the two set-up commands are `make demo` and `make test`.
GO       ?= go
# Release builds use cgo so NVML GPU detection works (gds/); cuFile itself is
# loaded at run time through purego either way. go-nvml's vendored header
# warns about deprecations on every build: silence that.
export CGO_ENABLED ?= 1
export CGO_CFLAGS  ?= -O2 -g -Wno-deprecated-declarations
BIN      := bin/deltafs
# The version `deltafs --version` prints: `make build VERSION=v1.2.0` for a
# release; by default what git describes (the commit, "-dirty" with local
# changes). Without it the binary reports the Go toolchain's stamp.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS  := $(if $(VERSION),-ldflags "-X github.com/deltafs/deltafs/internal/buildinfo.release=$(VERSION)")
PKGS     := ./...
# Short fuzz runs in `make test`; `make fuzz FUZZTIME=5m` for longer.
FUZZTIME ?= 10s
# Each line: package and fuzz target.
FUZZ_TARGETS := \
	./snapshot FuzzParseCommit \
	./snapshot FuzzDecodeDeletionVector \
	./snapshot FuzzCheckpointCrossCheck \
	./internal/pqcheck FuzzDataFile \
	./extents FuzzParseList \
	./fusefs FuzzParseName \
	./sample FuzzEscapeName \
	./internal/oneline FuzzOf \
	./filter FuzzFilter \
	./storage/sharing FuzzQuery \
	./storage/sharing FuzzProfile \
	./storage/sharing FuzzListing \
	./internal/secret FuzzRedact \
	./catalog/unity FuzzAnswers \
	./catalog/unity FuzzLoadTableAnswer \
	./catalog/unity FuzzCatalogName \
	./internal/attack FuzzAttack \
	./internal/blockcodec FuzzSnappy \
	./internal/blockcodec FuzzLZ4 \
	./sample FuzzDeltaLengths

# make install: the binary into $(PREFIX)/bin and its man pages, generated
# from the command definitions (deltafs man), into $(PREFIX)/share/man/man1.
PREFIX   ?= /usr/local

.PHONY: all build install test unit fuzz vet demo bench deps clean

all: build

build:
	$(GO) build $(LDFLAGS) -o $(BIN) ./cmd/deltafs

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/deltafs
	$(BIN) man $(DESTDIR)$(PREFIX)/share/man/man1

# deps installs what the build and the tests need (gcc, fuse3, Debian's
# torchvision, Azurite) when missing; demo and bench run it before building.
deps:
	@scripts/ensure-deps.sh

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet $(PKGS)

# The release build uses cgo (NVML); the nocgo build must keep building and
# its GPU code paths passing too: build it, and run the gds tests (and the
# gds command's) without cgo.
unit: build
	$(GO) test -count=1 -timeout 20m $(PKGS)
	CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/deltafs
	CGO_ENABLED=0 $(GO) test -count=1 ./gds/
	CGO_ENABLED=0 $(GO) test -count=1 -run '^TestGDS' ./cmd/deltafs/

fuzz:
	@set -e; set -- $(FUZZ_TARGETS); while [ $$# -gt 0 ]; do \
		echo "fuzz $$1 $$2 ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$2$$" -fuzztime $(FUZZTIME) $$1; shift 2; done

test: deps vet unit fuzz

demo: deps build
	@scripts/demo.sh

bench: deps build
	@scripts/bench.sh

clean:
	rm -rf bin .demo bench/out
