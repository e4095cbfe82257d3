# The zkr image: a drop-in for the official `zookeeper` image (same ZOO_* environment, files,
# ports, volumes, user and command; see docker/docker-entrypoint.sh). `docker compose up` starts
# the 3-member ensemble of docker-compose.yml from it.

# Build: the release binary, without debug info.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY benches benches
COPY src src
RUN cargo build --release --locked --bin zkr \
 && strip target/release/zkr

# Run: Debian with zkr, the entrypoint and zkServer.sh/zkCli.sh, as the user `zookeeper`.
FROM debian:bookworm-slim

# The official image's defaults, with its names.
ENV ZOO_CONF_DIR=/conf \
    ZOO_DATA_DIR=/data \
    ZOO_DATA_LOG_DIR=/datalog \
    ZOO_LOG_DIR=/logs \
    ZOO_TICK_TIME=2000 \
    ZOO_INIT_LIMIT=5 \
    ZOO_SYNC_LIMIT=2 \
    ZOO_AUTOPURGE_PURGEINTERVAL=0 \
    ZOO_AUTOPURGE_SNAPRETAINCOUNT=3 \
    ZOO_MAX_CLIENT_CNXNS=60 \
    ZOO_STANDALONE_ENABLED=true \
    ZOO_ADMINSERVER_ENABLED=true

# The same user and group ids as the official image (1000), so existing volumes keep working.
# netcat: `echo ruok | nc localhost 2181` health checks, as with the official image.
RUN set -eux; \
    groupadd -r zookeeper --gid=1000; \
    useradd -r -g zookeeper --uid=1000 zookeeper; \
    mkdir -p "$ZOO_DATA_LOG_DIR" "$ZOO_DATA_DIR" "$ZOO_CONF_DIR" "$ZOO_LOG_DIR"; \
    chown zookeeper:zookeeper "$ZOO_DATA_LOG_DIR" "$ZOO_DATA_DIR" "$ZOO_CONF_DIR" "$ZOO_LOG_DIR"; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends netcat-openbsd; \
    rm -rf /var/lib/apt/lists/*

COPY --from=build /src/target/release/zkr /usr/local/bin/zkr
COPY docker/docker-entrypoint.sh /docker-entrypoint.sh
COPY docker/zkServer.sh docker/zkCli.sh /usr/local/bin/

VOLUME ["/data", "/datalog", "/logs"]
# client, peer (Raft), election (accepted, unused by zkr), AdminServer
EXPOSE 2181 2888 3888 8080

ENV ZOOCFGDIR=$ZOO_CONF_DIR
ENTRYPOINT ["/docker-entrypoint.sh"]
CMD ["zkServer.sh", "start-foreground"]
