"""Build llama.cpp's `llama-server` once, for the tests against a llama.cpp-family server.

No registry this project installs from ships the server as a binary, so it is compiled from
the llama.cpp sources vendored in the `llama-cpp-python` source package on PyPI (a pinned
release), with CMake and the machine's C++ compiler, and kept in a cache directory: later
calls return at once. About 10 minutes on 2 cores the first time.

    python -m agentkeel.inference.model_builds.llama_server [DEST]

DEST defaults to ~/.cache/agentkeel/llama.cpp.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

SOURCE_PACKAGE = "llama-cpp-python==0.3.36"
"""Its sdist vendors llama.cpp at a known commit (pinned by this release)."""
DEFAULT_DEST = Path.home() / ".cache" / "agentkeel" / "llama.cpp"
CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_CURL=OFF",  # models come from files, never downloaded
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DGGML_NATIVE=OFF",  # portable: the cache may outlive the CPU it was built on
]


class BuildError(RuntimeError):
    pass


def server_binary(dest: Path = DEFAULT_DEST) -> Path:
    return dest / "bin" / "llama-server"


def build(dest: Path = DEFAULT_DEST) -> Path:
    """The path of a working `llama-server`, building it first if the cache has none."""
    binary = server_binary(dest)
    if _works(binary):
        return binary
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise BuildError(f"building llama-server needs {tool} (apt install cmake g++)")
    with tempfile.TemporaryDirectory(prefix="agentkeel-llama-") as tmp:
        work = Path(tmp)
        source = _vendored_source(work)
        build_dir = work / "build"
        jobs = str(os.cpu_count() or 2)
        _run(["cmake", "-S", str(source), "-B", str(build_dir), *CMAKE_FLAGS])
        _run(["cmake", "--build", str(build_dir), "--target", "llama-server", "-j", jobs])
        built = next(build_dir.rglob("llama-server"), None)
        if built is None:
            raise BuildError(f"the build finished without a llama-server in {build_dir}")
        binary.parent.mkdir(parents=True, exist_ok=True)
        partial = binary.with_suffix(".partial")
        shutil.copy2(built, partial)
        partial.replace(binary)  # atomically: an interrupted build leaves no half binary
    if not _works(binary):
        raise BuildError(f"{binary} was built but does not run")
    return binary


def _vendored_source(work: Path) -> Path:
    _run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary=:all:",
         SOURCE_PACKAGE, "-d", str(work)]
    )  # fmt: skip
    [archive] = work.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if "/vendor/llama.cpp/" in m.name]
        tar.extractall(work, members=members, filter="data")
    [source] = work.glob("*/vendor/llama.cpp")
    return source


def _works(binary: Path) -> bool:
    if not binary.exists():
        return False
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout)[-2000:]
        raise BuildError(f"{' '.join(argv[:3])} ... failed ({done.returncode}):\n{tail}")


def main() -> int:
    dest = Path(sys.argv[1]).expanduser() if len(sys.argv) > 1 else DEFAULT_DEST
    try:
        print(build(dest))
    except BuildError as exc:
        print(f"llama-server build: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
