# syntax=docker/dockerfile:1
# The runner node image: the runner and the demo agent, static binaries, on
# a slim Debian with git (the runner clones the sessions' repositories with
# it), as a non-root user. Not distroless: git, and the agents' CLIs an
# operator adds, need a userland. Build from the repository root:
#
#   docker build -f deploy/images/runner.Dockerfile -t zimmer/runner .
#
# The image runs only the demo agent. For claude or codex, build an image
# FROM this one that installs the CLI onto the PATH (docs/kubernetes.md ›
# Images) and set RUNNER_DEFAULT_RUNTIME in your overlay.
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
RUN --mount=type=bind,target=/src \
    --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    cd /src && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ \
      ./services/runner/cmd/runner ./services/runner/cmd/zimmer-demo-agent

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends git openssh-client ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 zimmer \
 && useradd --uid 65532 --gid 65532 --home-dir /home/zimmer --create-home --shell /usr/sbin/nologin zimmer \
 && install -d -o zimmer -g zimmer /var/lib/zimmer
COPY --from=build /out/runner /out/zimmer-demo-agent /usr/local/bin/
# The agents inherit HOME (their CLIs keep settings and logins there); in
# deploy/k8s it is on the node's volume.
ENV HOME=/home/zimmer
USER 65532:65532
WORKDIR /home/zimmer
ENTRYPOINT ["/usr/local/bin/runner"]
