# Build stage: the official Swift image.
FROM swift:6.1-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libzmq3-dev libsqlite3-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources Sources
COPY Examples Examples
COPY Tests Tests
RUN swift build -c release --product replica-node --static-swift-stdlib \
 && cp "$(swift build -c release --show-bin-path)/replica-node" /usr/local/bin/replica-node

# Runtime stage: slim Debian with the ZeroMQ and SQLite runtime libraries only.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libzmq5 libsqlite3-0 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/replica-node /usr/local/bin/replica-node
ENV REPLICA_DATA=/data \
    REPLICA_LISTEN=0.0.0.0:7000
VOLUME /data
# 7000: PUB (updates, heartbeats); 7001: ROUTER (anti-entropy sync).
EXPOSE 7000 7001
ENTRYPOINT ["replica-node"]
CMD ["serve"]
