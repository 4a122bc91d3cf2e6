# syntax=docker/dockerfile:1
# The Mamma Mia! arena server: `mammamia serve` on 0.0.0.0, gRPC on 50051, the web
# page on 8051. Built from this repository's own files (docs/deploy.md):
#
#   docker build -t mammamia .
#   docker run --rm -p 50051:50051 -p 8051:8051 -e MAMMAMIA_ORGANISER_KEY mammamia
#
# The same image runs the other commands: `docker run mammamia bot random --ladder ...`.

ARG PYTHON=python:3.11-slim

# -- build: one wheel for the project, and the wheels of its dependencies ----------------
FROM ${PYTHON} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
# What `pip install .` reads: the package metadata and the packages pyproject.toml
# lists (the generated gRPC code in mammamia_pb/ is committed, so no protoc runs here).
COPY pyproject.toml README.md ./
COPY mammamia/ mammamia/
COPY mammamia_pb/ mammamia_pb/
COPY server/ server/
COPY client_sdk/ client_sdk/
COPY bots/ bots/
RUN pip wheel --wheel-dir /wheels .

# -- run: the installed project, no build tools, a user without privileges ----------------
FROM ${PYTHON}
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels mammamia
COPY --chmod=0755 deploy/entrypoint.sh /usr/local/bin/mammamia-entrypoint
COPY --chmod=0644 deploy/healthcheck.py /usr/local/lib/mammamia/healthcheck.py
RUN groupadd --system --gid 10001 mammamia \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/mammamia \
        --create-home --shell /usr/sbin/nologin mammamia
# The working directory holds the SQLite database (./mammamia.db, when no --db or
# MAMMAMIA_DB names another) and a ladder bot's key file (NAME.key): a volume.
WORKDIR /var/lib/mammamia
VOLUME /var/lib/mammamia
USER 10001:10001
# JSON logs, one event per line, for the container runtime's log collection.
ENV MAMMAMIA_LOG_FORMAT=json
EXPOSE 50051 8051
# The standard gRPC health protocol (grpc.health.v1, service ""): healthy while the
# server is SERVING; unhealthy while it starts, drains, or cannot write its database.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "/usr/local/lib/mammamia/healthcheck.py"]
# SIGTERM drains (health NOT_SERVING, running matches may finish for --drain-seconds,
# 30 by default): give `docker stop` more than that (`docker stop -t 45`, or
# stop_grace_period in compose).
STOPSIGNAL SIGTERM
ENTRYPOINT ["mammamia-entrypoint"]
CMD ["serve", "--host", "0.0.0.0"]
