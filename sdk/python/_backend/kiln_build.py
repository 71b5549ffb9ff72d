"""A PEP 517 build backend for the kiln SDK, standard library only: it
writes the wheel (PEP 427) and the sdist with zipfile and tarfile, so
``pip install ./sdk/python`` needs no setuptools and no package index.

What goes in: the ``kiln`` package (every file under kiln/ but caches);
the metadata comes from pyproject.toml's [project] table.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile
from typing import Any, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Files of the sdist besides the package.
SDIST_EXTRA = ("pyproject.toml", "README.md", "_backend/kiln_build.py")
# A fixed date keeps wheels reproducible (zip cannot store times before 1980).
EPOCH = (1980, 1, 1, 0, 0, 0)


def _project() -> dict[str, Any]:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]  # type: ignore[no-any-return]


def _names() -> tuple[str, str]:
    p = _project()
    return p["name"], p["version"]


def _metadata() -> str:
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}",
             f"Summary: {p['description']}", f"Requires-Python: {p['requires-python']}"]
    readme = os.path.join(ROOT, p.get("readme", "README.md"))
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _package_files() -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, "kiln")):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith((".pyc", ".pyo")):
                continue
            out.append(os.path.relpath(os.path.join(dirpath, fn), ROOT))
    return out


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory: str, files: dict[str, bytes]) -> str:
    name, version = _names()
    dist_info = f"{name}-{version}.dist-info"
    files = dict(files)
    files[f"{dist_info}/METADATA"] = _metadata().encode("utf-8")
    files[f"{dist_info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: kiln_build\n"
                                   b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    files[f"{dist_info}/top_level.txt"] = b"kiln\n"
    record = [_record_line(n, d) for n, d in files.items()] + [f"{dist_info}/RECORD,,"]
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel_name = f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            info = zipfile.ZipInfo(n, EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, d)
    return wheel_name


def build_wheel(wheel_directory: str, config_settings: Optional[dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    files = {}
    for rel in _package_files():
        with open(os.path.join(ROOT, rel), "rb") as f:
            files[rel.replace(os.sep, "/")] = f.read()
    return _write_wheel(wheel_directory, files)


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: Optional[dict[str, Any]] = None) -> str:
    """The .dist-info directory alone, so pip need not build the wheel twice."""
    name, version = _names()
    dist_info = f"{name}-{version}.dist-info"
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(metadata_directory, dist_info, "WHEEL"), "w") as f:
        f.write("Wheel-Version: 1.0\nGenerator: kiln_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    return dist_info


def build_editable(wheel_directory: str, config_settings: Optional[dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """PEP 660: a wheel holding one .pth file that puts this tree on sys.path."""
    return _write_wheel(wheel_directory, {"kiln_editable.pth": (ROOT + "\n").encode()})


def build_sdist(sdist_directory: str, config_settings: Optional[dict[str, Any]] = None) -> str:
    name, version = _names()
    base = f"{name}-{version}"
    out = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(out, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in [*_package_files(), *SDIST_EXTRA]:
            path = os.path.join(ROOT, rel)
            if os.path.exists(path):
                tar.add(path, arcname=f"{base}/{rel}", recursive=False)
        pkg_info = _metadata().encode("utf-8")
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg_info)
        tar.addfile(ti, io.BytesIO(pkg_info))
    return base + ".tar.gz"


def get_requires_for_build_wheel(config_settings: Optional[dict[str, Any]] = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict[str, Any]] = None) -> list[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[dict[str, Any]] = None) -> list[str]:
    return []
