# Build stage: the official Swift image (6.2 or later: swift-prometheus and swift-metrics need it).
FROM swift:6.2-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libzmq3-dev libsqlite3-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources Sources
COPY Examples Examples
COPY Tests Tests
# As scripts/install builds it: the Swift runtime linked in, at a fixed address (fast start-up).
RUN swift build -c release --product replica-node --static-swift-stdlib -Xlinker -no-pie \
 && cp "$(swift build -c release --product replica-node --static-swift-stdlib -Xlinker -no-pie --show-bin-path)/replica-node" \
       /usr/local/bin/replica-node

# Runtime stage: slim Debian with the ZeroMQ and SQLite runtime libraries only.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libzmq5 libsqlite3-0 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/replica-node /usr/local/bin/replica-node
ENV REPLICA_DATA=/data \
    REPLICA_LISTEN=0.0.0.0:7000
VOLUME /data
# 7000: PUB (updates, heartbeats); 7001: ROUTER (anti-entropy sync); 9100: /metrics when
# REPLICA_METRICS=0.0.0.0:9100 is set.
EXPOSE 7000 7001 9100
HEALTHCHECK --interval=5s --timeout=3s --start-period=5s CMD ["replica-node", "health", "--data", "/data"]
ENTRYPOINT ["replica-node"]
CMD ["serve"]
