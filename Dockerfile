# The gpuledger image: `gpuledger up` (platform) and `gpuledger collect` (agent) both run from it.
#   docker build -t gpuledger:local .
# The package is installed from its wheel into a virtualenv; the SQL in sql/ ships inside it as
# package data.
# Configuration comes from a mounted file ($GPULEDGER_CONFIG) and secrets from env files: see
# docker-compose.yml and docs/deploy.md. Nothing secret is baked into the image.
# Stage 1 builds the wheel (python -m build: the same wheel `pip install` gets, sql/ and the
# dashboard's assets inside it); stage 2 installs that wheel and nothing else from the checkout.
FROM python:3.11-slim AS wheel

ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY base ./base
COPY collector ./collector
COPY ingest ./ingest
COPY alerts ./alerts
COPY dashboard ./dashboard
COPY sim ./sim
COPY sql ./sql
COPY gpuledger ./gpuledger
RUN pip install build && python -m build --wheel --outdir /dist .

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin gpuledger \
 && mkdir -p /var/lib/gpuledger/spool /etc/gpuledger \
 && chown -R gpuledger:gpuledger /var/lib/gpuledger

COPY --from=wheel /dist /opt/gpuledger/dist
RUN python3 -m venv /opt/gpuledger/venv \
 && /opt/gpuledger/venv/bin/pip install /opt/gpuledger/dist/gpuledger-*.whl \
 && /opt/gpuledger/venv/bin/gpuledger --version
ENV PATH=/opt/gpuledger/venv/bin:$PATH
WORKDIR /var/lib/gpuledger

USER gpuledger
ENV HOME=/home/gpuledger
EXPOSE 8050 9400
# /healthz answers 503 when the store is unreachable; urlopen raises on it, so the check fails.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8050/healthz', timeout=4)"]
# `up` on 0.0.0.0 refuses to start unless a credential is configured (receiver.token and/or
# [[dashboard.users]] in $GPULEDGER_CONFIG, as deploy/ does) or --no-auth is given on purpose.
ENTRYPOINT ["gpuledger"]
CMD ["up", "--host", "0.0.0.0"]
