# botd — common tasks. `make test` is what CI runs.
SHELL        := /bin/bash
.SHELLFLAGS  := -o pipefail -c
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
# The build date (UTC); SOURCE_DATE_EPOCH pins it for reproducible builds.
DATE    ?= $(shell date -u $${SOURCE_DATE_EPOCH:+-d @$$SOURCE_DATE_EPOCH} +%Y-%m-%dT%H:%M:%SZ)
# Evaluated once, so every binary of one make names the same date.
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
# goolm: mautrix's pure-Go Olm, so Matrix's end-to-end encrypted rooms
# work without cgo. Without it mautrix's crypto needs libolm (cgo), so
# botd builds without encryption and refuses encrypted rooms, saying so.
TAGS    ?= goolm

.PHONY: build test testdeps fuzz-ci bench run lint fuzz conformance package image clean

build:
	$(GO) build -tags "$(TAGS)" -ldflags "$(LDFLAGS)" -o bin/botd ./cmd/botd

# The tag goes through GOFLAGS so the binaries the end-to-end tests build
# (go build from inside go test) carry it too.
# testdeps installs what the tests run besides Go (versitygw into .tools/bin,
# Chromium, ffmpeg, poppler and postgresql through apt) or stops naming the command.
# The S3 and Postgres tests are required here: they fail rather than skip.
test: testdeps
	PATH="$(CURDIR)/.tools/bin:$$PATH" BOTD_REQUIRE_S3=1 BOTD_REQUIRE_PG=1 GOFLAGS="$$($(GO) env GOFLAGS) -tags=$(TAGS)" $(GO) test -race -timeout 20m ./...

testdeps:
	@GO=$(GO) scripts/testdeps.sh

# Benchmarks only (no tests); BENCH narrows them, e.g. make bench BENCH=Registry
BENCH ?= .
bench:
	$(GO) test -tags "$(TAGS)" -run '^$$' -bench '$(BENCH)' -benchmem -timeout 30m ./... | $(GO) run scripts/benchtable.go

# Every fuzz target for FUZZTIME each (make test already runs their seeds).
FUZZTIME ?= 60s
FUZZ_TARGETS := ./config:FuzzParse ./mediaregistry:FuzzParse ./mediaregistry:FuzzRenderRoundTrip \
	./ipc:FuzzDecodeRequest ./agent:FuzzParseAnswer ./channels/telegram:FuzzReceiveUpdate \
	./channels/slack:FuzzReceiveEvent ./channels/whatsapp:FuzzReceiveMessage ./channels/whatsapp:FuzzDecodeHandle \
	./scheduler:FuzzParse ./doctext:FuzzExtract ./doctext:FuzzPDF ./doctext/internal/pdf:FuzzRead ./doctext:FuzzZipDocs ./channels/web:FuzzUploadName \
	./netguard:FuzzCheckURL ./channels:FuzzRenderLink ./channels/discord:FuzzReceiveMessage ./channels/matrix:FuzzReceiveSync \
	./doctext/internal/pdf:FuzzFontPrograms ./format:FuzzChunks ./format:FuzzRendererGrows
fuzz:
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "== $$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test -tags "$(TAGS)" $$pkg -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) || exit 1; done

# The targets that read chat members' bytes, for FUZZ_CI_TIME each: what CI
# runs on every submission (a few minutes in all).
FUZZ_CI_TIME ?= 20s
FUZZ_CI_TARGETS := ./doctext:FuzzPDF ./doctext:FuzzZipDocs ./doctext:FuzzExtract ./channels/web:FuzzUploadName \
	./mediaregistry:FuzzParse ./mediaregistry:FuzzRenderRoundTrip ./agent:FuzzParseAnswer ./netguard:FuzzCheckURL \
	./channels/discord:FuzzReceiveMessage ./channels/matrix:FuzzReceiveSync ./doctext/internal/pdf:FuzzFontPrograms
fuzz-ci:
	@$(MAKE) --no-print-directory fuzz FUZZ_TARGETS="$(FUZZ_CI_TARGETS)" FUZZTIME=$(FUZZ_CI_TIME)

# Quiet on stdout but for the one line to open (the web room, with a login
# token on the first start); the logs go to stderr.
run:
	@$(GO) build -tags "$(TAGS)" -ldflags "$(LDFLAGS)" -o bin/botd ./cmd/botd
	@test -f config.yaml || { cp config.example.yaml config.yaml; echo "created config.yaml from config.example.yaml" >&2; }
	@bin/botd run --config config.yaml

# Vetted with the tag and without: the build without it keeps compiling.
lint:
	$(GO) vet -tags "$(TAGS)" ./...
	$(GO) vet ./channels/matrix/...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Official MCP conformance suite against `botd mcp --http` (not part of
# `make test`: it installs Node 22 and the suite from npm into .conformance/).
conformance: build
	GO=$(GO) BOTD_BIN=bin/botd scripts/conformance.sh

# Releases: dist/botd_<version>_linux_<arch>.tar.gz and botd_<version>_<arch>.deb
# for ARCHS (amd64 arm64), cross-built pure Go; see scripts/package.sh.
ARCHS ?= amd64 arm64
package:
	GO=$(GO) TAGS="$(TAGS)" VERSION=$(VERSION) LDFLAGS="$(LDFLAGS)" ARCHS="$(ARCHS)" scripts/package.sh

# The container image botd:$(VERSION) (and botd:latest) with podman or buildah
# (Containerfile). With no registry reachable it first builds the Debian
# base from the apt mirror (mmdebstrap); see scripts/image.sh.
image:
	VERSION=$(VERSION) COMMIT=$(COMMIT) DATE=$(DATE) scripts/image.sh

clean:
	rm -rf bin dist
