# The agentkeel image: CLI, CPU worker, inference worker and the carrier service.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Only what the package needs: the build context also holds .venv and .agentkeel state.
COPY pyproject.toml README.md ./
COPY schemas/ schemas/
COPY workflows/ workflows/
COPY activities/ activities/
COPY inference/ inference/
COPY workers/ workers/

RUN pip install . \
    && useradd --create-home --uid 10001 agentkeel

USER agentkeel

ENTRYPOINT ["agentkeel"]
CMD ["--help"]
