"""The build backend of the vyre package (PEP 517 and PEP 660), with the standard library only.

pyproject.toml names it with backend-path, so pip needs nothing from an index to build the
package: a wheel holds the files of vyre/ and a .dist-info folder made from the [project] table;
an editable install is a wheel whose one .pth file puts this folder on sys.path; an sdist holds
pyproject.toml, this backend and vyre/.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

try:
    import tomllib
except ImportError:  # Python before 3.11: the [project] table is read with the fallback below
    tomllib = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "vyre"
TAG = "py3-none-any"


def _project():
    path = os.path.join(ROOT, "pyproject.toml")
    with open(path, "rb") as f:
        data = f.read()
    if tomllib is not None:
        return tomllib.loads(data.decode())["project"]
    return _project_fallback(data.decode())


def _project_fallback(text):
    """The few [project] fields this file uses, read from its simple layout (key = "string",
    key = ["list"]), for Pythons without tomllib."""
    project, table = {}, None
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("["):
            table = line.strip("[]")
            continue
        if "=" not in line or table not in ("project", "project.optional-dependencies"):
            continue
        key, value = (s.strip() for s in line.split("=", 1))
        if value.startswith("["):
            value = [v.strip().strip('"') for v in value.strip("[]").split(",") if v.strip()]
        elif value.startswith('"'):
            value = value.strip('"')
        else:
            continue
        if table == "project":
            project[key] = value
        else:
            project.setdefault("optional-dependencies", {})[key] = value
    return project


def _metadata(project):
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + project["name"],
        "Version: " + project["version"],
        "Summary: " + project.get("description", ""),
        "License: MIT",
    ]
    if "requires-python" in project:
        lines.append("Requires-Python: " + project["requires-python"])
    for dep in project.get("dependencies", []):
        lines.append("Requires-Dist: " + dep)
    for extra, deps in sorted(project.get("optional-dependencies", {}).items()):
        lines.append("Provides-Extra: " + extra)
        for dep in deps:
            lines.append('Requires-Dist: %s; extra == "%s"' % (dep, extra))
    return "\n".join(lines) + "\n"


def _package_files():
    """(path in the archive, path on disk) of every .py file of the package, sorted."""
    found = []
    top = os.path.join(ROOT, PACKAGE)
    for folder, dirs, names in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                disk = os.path.join(folder, name)
                found.append((os.path.relpath(disk, ROOT).replace(os.sep, "/"), disk))
    return found


def _dist_info(project):
    return "%s-%s.dist-info" % (project["name"], project["version"])


def _wheel_name(project):
    return "%s-%s-%s.whl" % (project["name"], project["version"], TAG)


def _digest(data):
    raw = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _write_wheel(directory, files):
    """A wheel of `files` ((archive path, bytes) pairs) plus its dist-info; returns its name."""
    project = _project()
    info = _dist_info(project)
    files = list(files) + [
        (info + "/METADATA", _metadata(project).encode()),
        (info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: vyre_build\n"
                           "Root-Is-Purelib: true\nTag: %s\n" % TAG).encode()),
        (info + "/top_level.txt", (PACKAGE + "\n").encode()),
    ]
    record = "".join("%s,%s,%d\n" % (path, _digest(data), len(data)) for path, data in files)
    record += info + "/RECORD,,\n"
    name = _wheel_name(project)
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files + [(info + "/RECORD", record.encode())]:
            entry = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
    return name


def _read(disk):
    with open(disk, "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [(p, _read(d)) for p, d in _package_files()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [("vyre_editable.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = "%s-%s" % (project["name"], project["version"])
    paths = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
             ("build_backend/vyre_build.py", os.path.abspath(__file__))] + _package_files()
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        pkg_info = _metadata(project).encode()
        for path, data in [("PKG-INFO", pkg_info)] + [(p, _read(d)) for p, d in paths]:
            entry = tarfile.TarInfo(base + "/" + path)
            entry.size = len(data)
            entry.mode = 0o644
            t.addfile(entry, io.BytesIO(data))
    return name
