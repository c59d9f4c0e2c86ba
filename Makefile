# zkserverd developer targets.
#
#   make test              the whole test suite under the race detector (go test -race ./...),
#                          then the tests that need the test-only hooks (build tag testhooks)
#   make lint              go vet, gofmt, staticcheck, and refcheck (every file a comment
#                          names is in the repository: internal/refcheck)
#   make compat            stock clients (zkCli, Java API, Curator, C cli_mt, kazoo,
#                          go-zookeeper) against zkserverd; ends with "N passed, M failed"
#   make compat-diff       the same scenarios against Apache ZooKeeper 3.8 (Debian jars)
#                          and zkserverd, normalized transcripts compared
#   make compat-zookeeper  the scenarios against Apache ZooKeeper only (checks the scenarios)
#   make compat-mirror     the standalone scenarios against a ZooKeeper 3.8 observer and
#                          a zkserverd mirror serving clients, transcripts compared
#   make compat-unit       unit tests of the suite's runner (normalizer, diff, allowlist)
#   make chaos             the partition/kill/pause test (test/chaos_test.go) with random
#                          fault schedules: CHAOS_SEEDS seeds (a count or a list, default 10)
#                          for CHAOS_DURATION each (default 60s), 3 and 5 members
#
#   make kerberos          the Kerberos (SASL GSSAPI) integration test, build tag
#                          kerberos (test/kerberos_test.go): a private realm on a
#                          loopback krb5kdc; a Go client, the Java client and kazoo
#                          log in to zkserverd (and the stock clients to Apache
#                          ZooKeeper too); installs KERBEROS_PACKAGES with apt-get
#                          (as root) when missing
#
#   make migrate-deps      the migration clients' packages alone (CI installs them first)
#
#   make migrate           the migration proof (test/migrate): Curator and kazoo
#                          clients hold an ephemeral node, a lock, a leadership
#                          and a watch and write while three `zkserverd mirror`s
#                          follow Apache ZooKeeper 3.8, serve them and take over
#                          (`zkserverd takeover`); also a ZooKeeper leader death,
#                          a mirror restart, a 100k-znode snapshot, mirrors that
#                          serve only after the switch, and a dry run against
#                          ZooKeeper alone; reports the write pause at the
#                          switch; installs MIGRATE_PACKAGES with apt-get (as root)
#                          when missing. Select one with ARGS="-run TestMigrateDryRun"
#
#   make resources         the flood tests (test/resources_test.go): the built server
#                          under floods of rejected 1 MB and accepted 512 KiB setData
#                          requests, its RSS sampled; about 3 minutes
#
#   make release           static binaries (CGO_ENABLED=0) for RELEASE_PLATFORMS (default
#                          linux/amd64 linux/arm64) in DIST (default dist/), named
#                          zkserverd-VERSION-OS-ARCH, with SHA256SUMS; VERSION, COMMIT and
#                          BUILD_DATE are stamped into what `zkserverd version` prints
#                          (VERSION keeps the leading 3.8.0 clients read as the release)
#
#   make fuzz              every native fuzz target in the repository, one after
#                          another, FUZZTIME each (default 10m); stops at the
#                          first failure (the failing input is kept under
#                          testdata/fuzz/ of that package)
#
# The compat targets install missing Debian packages with apt-get (as root).
# Pass runner flags with ARGS, e.g. make compat ARGS="-run kazoo/ -v -keep".

GO ?= go
ARGS ?=
FUZZTIME ?= 10m
# The runner is built first (not go run) so its last line stays the summary.
COMPAT_RUNNER ?= $(or $(TMPDIR),/tmp)/zkserverd-compat-runner

CHAOS_SEEDS ?= 10
CHAOS_DURATION ?= 60s

STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

# make release: what the binaries report. VERSION is what srvr, mntr and
# `zkserverd version` show; its "3.8.0" prefix is the ZooKeeper release
# clients take it for.
VERSION ?= 3.8.0-zkserverd-$(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
BUILD_DATE ?= $(shell date -u '+%Y-%m-%d %H:%M UTC')
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64
DIST ?= dist
RELEASE_LDFLAGS = -s -w \
	-X 'github.com/zkserverd/zkserverd/server.Version=$(VERSION)' \
	-X 'github.com/zkserverd/zkserverd/server.BuildDate=$(BUILD_DATE)' \
	-X 'main.commit=$(COMMIT)'

.PHONY: zookeeper kerberos migrate migrate-deps test lint compat compat-diff compat-zookeeper compat-mirror compat-unit compat-runner compat-zkformat chaos fuzz resources release

test:
	$(GO) test -race -timeout 30m ./...
	$(GO) test -race -tags testhooks -run 'ForTest|Divergence' ./datatree/ ./replication/

lint:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) run $(STATICCHECK) ./...
	$(GO) run ./internal/refcheck

compat-runner:
	@$(GO) build -o $(COMPAT_RUNNER) ./test/compat/runner

compat: compat-runner compat-zkformat
	@$(COMPAT_RUNNER) -mode compat $(ARGS)

# Apache ZooKeeper 3.8 (Debian's jar) loads a backup zkserverd wrote in
# ZooKeeper's snapshot format (test/zkformat_test.go); the packages it
# needs are installed first, so that the test runs rather than skips.
ZKFORMAT_PACKAGES = zookeeper libslf4j-java

compat-zkformat: zookeeper
	$(GO) test -count=1 -run '^TestZooKeeperLoadsBackup$$' ./test

# Debian's Apache ZooKeeper 3.8, for the tests that run it (the zab
# observer, the mirror, zkserverd mirror, the backup format): installed
# when missing.
zookeeper:
	@missing=$$(for p in $(ZKFORMAT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

compat-diff: compat-runner
	@$(COMPAT_RUNNER) -mode diff $(ARGS)

compat-zookeeper: compat-runner
	@$(COMPAT_RUNNER) -mode zookeeper $(ARGS)

compat-mirror: compat-runner
	@$(COMPAT_RUNNER) -mode mirror $(ARGS)

compat-unit:
	$(GO) test -race ./test/compat/...

chaos:
	CHAOS_SEEDS=$(CHAOS_SEEDS) CHAOS_DURATION=$(CHAOS_DURATION) \
		$(GO) test ./test -run '^TestChaos$$' -count=1 -timeout 0 $(ARGS)

# The Kerberos test's packages: the KDC, kinit, and the stock clients it logs
# in with (the Java client through the compat suite's program, kazoo) and
# Apache ZooKeeper it compares with.
KERBEROS_PACKAGES = krb5-kdc krb5-admin-server krb5-user openjdk-17-jdk-headless zookeeper \
	libcurator-framework-java libcurator-recipes-java libslf4j-java \
	python3-kazoo python3-pure-sasl python3-kerberos

kerberos:
	@missing=$$(for p in $(KERBEROS_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi
	$(GO) test -tags kerberos ./test -run '^TestKerberos' -count=1 -timeout 5m $(ARGS)

# The migration proof's packages: ZooKeeper, javac and Curator for the Java
# client, kazoo for the Python one.
MIGRATE_PACKAGES = zookeeper openjdk-17-jdk-headless libcurator-framework-java \
	libcurator-recipes-java libslf4j-java python3-kazoo

# The packages alone, for CI to install before the suite, whose quick
# form of the migration (TestQuickMigration) runs the same clients.
migrate-deps:
	@missing=$$(for p in $(MIGRATE_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

migrate: migrate-deps
	ZKSERVERD_MIGRATE=1 ZKSERVERD_REQUIRE_ZOOKEEPER=1 $(GO) test ./test/migrate -run '^TestMigrate' -count=1 -v -timeout 40m $(ARGS)

resources:
	ZK_RESOURCE_TESTS=1 $(GO) test ./test -run '^TestFloodsKeepMemoryBounded$$' -count=1 -v -timeout 10m $(ARGS)

# Each fuzz target runs alone (-fuzz accepts one target per package run);
# the list is found afresh, so new targets are picked up. -parallel 1
# keeps one fuzzing worker: the server fuzzer shares one server per worker.
fuzz:
	@set -e; grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r file; do \
		dir=$$(dirname "$$file"); dir=$${dir#./}; \
		for name in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$file"); do \
			echo "== $$dir $$name ($(FUZZTIME))"; \
			$(GO) test "./$$dir" -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) -parallel 1; \
		done; \
	done

# Static (CGO_ENABLED=0), reproducible paths (-trimpath), stripped (-s -w).
release:
	@mkdir -p $(DIST)
	@set -e; for p in $(RELEASE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; out=$(DIST)/zkserverd-$(VERSION)-$$os-$$arch; \
		echo "== $$out"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(RELEASE_LDFLAGS)" -o $$out ./cmd/zkserverd; \
	done
	@cd $(DIST) && sha256sum zkserverd-$(VERSION)-* > SHA256SUMS && cat SHA256SUMS
