# syntax=docker/dockerfile:1
# The lineage image: a static binary on a distroless base, as a non-root user.
# Build from the repository root (go.work spans the modules):
#
#   docker build -f deploy/images/lineage.Dockerfile -t zimmer/lineage .
#
# It listens on its gRPC port and 9464 (metrics),
# as deploy/k8s configures it; docs/kubernetes.md › Images.
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
# The source is bind-mounted, not copied: nothing of it stays in a layer,
# and the module and build caches survive between builds.
RUN --mount=type=bind,target=/src \
    --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    cd /src && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/lineage ./services/lineage/cmd/lineage

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/lineage /usr/local/bin/lineage
# Numeric, so that the kubelet can check runAsNonRoot.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/lineage"]
