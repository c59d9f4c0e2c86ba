# zkserverd developer targets.
#
#   make compat            stock clients (zkCli, Java API, Curator, C cli_mt, kazoo,
#                          go-zookeeper) against zkserverd; ends with "N passed, M failed"
#   make compat-diff       the same scenarios against Apache ZooKeeper 3.8 (Debian jars)
#                          and zkserverd, normalized transcripts compared
#   make compat-zookeeper  the scenarios against Apache ZooKeeper only (checks the scenarios)
#   make compat-unit       unit tests of the suite's runner (normalizer, diff, allowlist)
#   make chaos             the partition/kill/pause test (test/chaos_test.go) with random
#                          fault schedules: CHAOS_SEEDS seeds (a count or a list, default 10)
#                          for CHAOS_DURATION each (default 60s), 3 and 5 members
#
# The compat targets install missing Debian packages with apt-get (as root).
# Pass runner flags with ARGS, e.g. make compat ARGS="-run kazoo/ -v -keep".

GO ?= go
ARGS ?=
# The runner is built first (not go run) so its last line stays the summary.
COMPAT_RUNNER ?= $(or $(TMPDIR),/tmp)/zkserverd-compat-runner

CHAOS_SEEDS ?= 10
CHAOS_DURATION ?= 60s

.PHONY: compat compat-diff compat-zookeeper compat-unit compat-runner chaos

compat-runner:
	@$(GO) build -o $(COMPAT_RUNNER) ./test/compat/runner

compat: compat-runner
	@$(COMPAT_RUNNER) -mode compat $(ARGS)

compat-diff: compat-runner
	@$(COMPAT_RUNNER) -mode diff $(ARGS)

compat-zookeeper: compat-runner
	@$(COMPAT_RUNNER) -mode zookeeper $(ARGS)

compat-unit:
	$(GO) test -race ./test/compat/...

chaos:
	CHAOS_SEEDS=$(CHAOS_SEEDS) CHAOS_DURATION=$(CHAOS_DURATION) \
		$(GO) test ./test -run '^TestChaos$$' -count=1 -timeout 0 $(ARGS)
