# syntax=docker/dockerfile:1
#
# zkserverd container image: a static Go binary on distroless/static,
# configured with the same ZOO_* variables as the official ZooKeeper image.
# Build and run instructions, the variables and what was verified: see
# docs/docker.md.
#
#   docker build -t zkserverd .
#   docker run -d -p 2181:2181 zkserverd

# Both base images can be overridden, e.g. with a mirror or a pinned digest.
ARG GO_IMAGE=golang:1.26
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

# ---- build stage -----------------------------------------------------------
# Runs on the build host's platform and cross-compiles for the target.
FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
WORKDIR /src

# Modules first, in their own layer: it is reused until go.mod/go.sum change.
COPY go.mod go.sum ./
RUN go mod download && go mod verify

COPY . .

# VERSION is what srvr, mntr and envi report; clients read its leading
# "3.8.0" as the ZooKeeper release served, so keep that prefix.
ARG VERSION=3.8.0-zkserverd
ARG BUILD_DATE=unknown
# COMMIT is shown by `zkserverd version` (.git is not in the context).
ARG COMMIT=unknown
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS="${TARGETOS}" GOARCH="${TARGETARCH}" \
    go build -trimpath \
      -ldflags "-s -w -X github.com/zkserverd/zkserverd/server.Version=${VERSION} -X 'github.com/zkserverd/zkserverd/server.BuildDate=${BUILD_DATE}' -X 'main.commit=${COMMIT}'" \
      -o /out/usr/local/bin/zkserverd ./cmd/zkserverd \
 && mkdir -p /out/data /out/datalog /out/logs /out/conf

# ---- runtime stage ---------------------------------------------------------
# distroless/static:nonroot has no shell or package manager, only CA
# certificates, tzdata, /etc/passwd with the "nonroot" user (65532) and
# /tmp: about 2 MB on top of the binary.
FROM ${RUNTIME_IMAGE}

ARG VERSION=3.8.0-zkserverd
LABEL org.opencontainers.image.title="zkserverd" \
      org.opencontainers.image.description="ZooKeeper-compatible coordination server" \
      org.opencontainers.image.source="https://github.com/zkserverd/zkserverd" \
      org.opencontainers.image.version="${VERSION}"

COPY --from=build /out/usr/local/bin/zkserverd /usr/local/bin/zkserverd
# The volumes must exist, owned by the runtime user, so that new named
# volumes inherit a writable directory. /conf stays root-owned: zkserverd
# only reads a mounted /conf/zoo.cfg and never writes one.
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build --chown=65532:65532 /out/datalog /datalog
# /logs is for ZOO_LOG_DIR=/logs (a rotated log file instead of standard
# error); it is not set here, so `docker logs` shows the log by default.
COPY --from=build --chown=65532:65532 /out/logs /logs
COPY --from=build /out/conf /conf

# The official image's defaults (its Dockerfile ENV); see docs/docker.md.
ENV ZOO_CONF_DIR=/conf \
    ZOO_DATA_DIR=/data \
    ZOO_DATA_LOG_DIR=/datalog \
    ZOO_TICK_TIME=2000 \
    ZOO_INIT_LIMIT=5 \
    ZOO_SYNC_LIMIT=2 \
    ZOO_AUTOPURGE_PURGEINTERVAL=0 \
    ZOO_AUTOPURGE_SNAPRETAINCOUNT=3 \
    ZOO_MAX_CLIENT_CNXNS=60 \
    ZOO_STANDALONE_ENABLED=true \
    ZOO_ADMINSERVER_ENABLED=true

USER 65532:65532
WORKDIR /data
VOLUME ["/data", "/datalog"]

# client, quorum (peer), election, AdminServer, Prometheus metrics
EXPOSE 2181 2888 3888 8080 7000

# Sends "srvr" (always allowed, whatever 4lw.commands.whitelist says) to
# this container's client port and succeeds only if the server is serving.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/zkserverd", "healthcheck"]

# zkserverd stops cleanly on SIGTERM (docker stop's default signal).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/zkserverd"]
CMD []
