"""Builds one CUDA/C++ solution with the torch binding (`ki verify`), cached by source digest.

Usage: python ki_build.py SOURCE_DIR BUILD_DIR MODULE_NAME
Compiles every .cu/.cpp/.cc/.cxx file of SOURCE_DIR with torch's extension builder
(torch.utils.cpp_extension.load, ninja, the host's nvcc) for the device's architecture (TORCH_CUDA_ARCH_LIST, set by the runner from the device) and
prints one JSON line: {"ok": true, "so_path": ...} or {"ok": false, "log": ...}. BUILD_DIR/ok marks a
finished build: a second call returns at once.
"""

import json
import os
import sys
import time


PCH_HEADER = "ki_torch_extension_pch.h"


def build_pch(pch_dir):
    """A precompiled <torch/extension.h>: built once with the exact host flags torch's builder uses
    (read from the build.ninja of a one-line extension), then offered to every build by `-include`.
    When gcc finds the .gch unusable it reads the header itself, so the result never differs."""
    import subprocess

    import torch.utils.cpp_extension as ext

    os.makedirs(pch_dir, exist_ok=True)
    header = os.path.join(pch_dir, PCH_HEADER)
    with open(header, "w") as f:
        f.write("#include <torch/extension.h>\n")
    probe = os.path.join(pch_dir, "probe")
    os.makedirs(probe, exist_ok=True)
    src = os.path.join(probe, "probe.cpp")
    with open(src, "w") as f:
        f.write("#include <torch/extension.h>\nint ki_probe() { return 1; }\n")
    start = time.time()
    try:
        ext.load(name="ki_pch_probe", sources=[src], build_directory=probe, with_cuda=False, verbose=False)
    except ImportError:
        pass  # built (the probe defines no module); only its build.ninja is wanted
    ninja = open(os.path.join(probe, "build.ninja")).read()
    cflags = ""
    for line in ninja.splitlines():
        if line.startswith("cflags = "):
            cflags = line[len("cflags = ") :]
        if line.startswith("cxx = "):
            cxx = line[len("cxx = ") :]
    flags = [f for f in cflags.split() if not f.startswith("-DTORCH_EXTENSION_NAME")]
    gch = header + ".gch"
    result = subprocess.run([cxx, *flags, "-x", "c++-header", header, "-o", gch + ".partial"], capture_output=True, text=True)
    if result.returncode != 0:
        print(json.dumps({"ok": False, "log": result.stderr[-4000:], "seconds": time.time() - start}))
        return
    os.replace(gch + ".partial", gch)
    print(json.dumps({"ok": True, "so_path": gch, "seconds": time.time() - start}))


def main():
    if sys.argv[1] == "--pch":
        build_pch(sys.argv[2])
        return
    source_dir, build_dir, name = sys.argv[1:4]
    pch_dir = sys.argv[4] if len(sys.argv) > 4 else None
    os.makedirs(build_dir, exist_ok=True)
    marker = os.path.join(build_dir, "ok")
    so_path = os.path.join(build_dir, f"{name}.so")
    if os.path.exists(marker) and os.path.exists(so_path):
        print(json.dumps({"ok": True, "so_path": so_path, "cached": True, "seconds": 0.0}))
        return
    import torch.utils.cpp_extension as ext

    sources = []
    for root, _, files in os.walk(source_dir):
        for f in sorted(files):
            if f.endswith((".cu", ".cpp", ".cc", ".cxx")):
                sources.append(os.path.join(root, f))
    start = time.time()
    extra_cflags = []
    if pch_dir and os.path.exists(os.path.join(pch_dir, PCH_HEADER + ".gch")):
        extra_cflags = ["-include", os.path.join(pch_dir, PCH_HEADER)]
    try:
        ext.load(
            name=name,
            sources=sources,
            extra_cflags=extra_cflags,
            extra_include_paths=[source_dir],
            extra_cuda_cflags=["-O3", "--expt-relaxed-constexpr"],
            build_directory=build_dir,
            with_cuda=True,
            verbose=False,
        )
    except Exception as error:
        print(json.dumps({"ok": False, "log": f"{type(error).__name__}: {error}"[-20000:], "seconds": time.time() - start}))
        return
    open(marker, "w").write("ok\n")
    print(json.dumps({"ok": True, "so_path": so_path, "cached": False, "pch": bool(extra_cflags), "seconds": time.time() - start}))


if __name__ == "__main__":
    main()
