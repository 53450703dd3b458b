"""``python -m mlsql_ray.kernel install [--user | --sys-prefix | --prefix DIR]``: register the
``mlsql`` kernelspec with Jupyter (``pip install`` already does, as wheel data).

The spec has one source, ``spec/`` beside this module: pip ships those files as wheel data, and
the spec written here is the same ``kernel.json`` with this Python as argv[0], plus the logos.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

KERNEL_NAME = "mlsql"
SPEC_DIR = Path(__file__).resolve().parent / "spec"
LOGOS = ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg")


def shipped_spec() -> dict:
    """The kernelspec as pip ships it (argv[0] is ``python``)."""
    return json.loads((SPEC_DIR / "kernel.json").read_text())


def write_spec(folder: Path, python: str = sys.executable) -> Path:
    """Write kernel.json (argv[0] = ``python``) and the logos into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = shipped_spec()
    spec["argv"][0] = python
    (folder / "kernel.json").write_text(json.dumps(spec, indent=2) + "\n")
    for name in LOGOS:
        shutil.copy(SPEC_DIR / name, folder / name)
    return folder


def _is_root() -> bool:
    try:
        return os.geteuid() == 0
    except AttributeError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlsql_ray.kernel install",
                                     description="Install the MLSQL (Ray) kernelspec for Jupyter.")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="install for the current user (~/.local/share/jupyter)")
    where.add_argument("--sys-prefix", action="store_true", help=f"install into this Python's prefix ({sys.prefix})")
    where.add_argument("--prefix", help="install under PREFIX/share/jupyter/kernels")
    args = parser.parse_args(argv)

    from jupyter_client.kernelspec import KernelSpecManager  # heavy: jupyter_client, not needed for --help

    user = args.user or (not args.sys_prefix and not args.prefix and not _is_root())
    prefix = sys.prefix if args.sys_prefix else args.prefix
    with tempfile.TemporaryDirectory() as tmp:
        write_spec(Path(tmp) / KERNEL_NAME)
        dest = KernelSpecManager().install_kernel_spec(str(Path(tmp) / KERNEL_NAME), KERNEL_NAME,
                                                       user=user, prefix=prefix)
    print(f"Installed the {shipped_spec()['display_name']} kernelspec '{KERNEL_NAME}' in {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
