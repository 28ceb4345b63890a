# The deltafs image for the Kubernetes CSI node plugin (deploy/kubernetes):
#   docker build -t deltafs:latest .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# cgo, as make build: NVML GPU detection (gds/); the runtime image has glibc.
RUN CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" go build -ldflags "-X main.release=${VERSION}" -o /deltafs ./cmd/deltafs

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends fuse3 ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /deltafs /usr/local/bin/deltafs
ENTRYPOINT ["/usr/local/bin/deltafs"]
