"""Install a reference package (Inspect, inspect-evals) with what it really needs, without letting it
move what evalkit's own install chose.

    python scripts/install_reference.py "inspect-ai==0.3.285" ["inspect-evals==0.28.0" ...]

For each package: ``pip install --no-deps`` it, read its own dependency list (``Requires-Dist``, markers
evaluated for this interpreter, extras left out), drop the version pins that the packages already
installed here do not meet (Inspect caps fsspec below what datasets has; evalkit's install decides
those), and let pip resolve the rest together, constrained by what every installed package requires
(pip itself looks only at what it installs). What was dropped, and any requirement no release of
which fits, is printed, one line each. Run it with the interpreter you install into.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def installed() -> dict:
    out = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            out[canonicalize_name(name)] = dist.version
    return out


def installed_requirements(exclude: str) -> list[str]:
    """``name specifier`` of every versioned requirement of the installed distributions (markers
    evaluated here, extras left out), as pip constraints."""
    out = set()
    for dist in metadata.distributions():
        if canonicalize_name(dist.metadata["Name"] or "") == canonicalize_name(exclude):
            continue
        for text in dist.requires or []:
            req = Requirement(text)
            if req.specifier and (req.marker is None or req.marker.evaluate({"extra": ""})):
                out.add(f"{canonicalize_name(req.name)}{req.specifier}")
    return sorted(out)


def needs(package: str, have: dict) -> list[str]:
    """The package's requirements for this interpreter, minus the pins the installed versions break."""
    out = []
    for text in metadata.requires(package) or []:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(req.name)
        version = have.get(name)
        if version is not None and req.specifier and not req.specifier.contains(version, prereleases=True):
            print(f"install_reference: {package}: keeping {req.name} {version} installed here, "
                  f"not {req.specifier} ({package}'s own pin)")
            req.specifier = type(req.specifier)("")
        req.marker = None
        out.append(str(req))
    return out


def pip(*args: str, check: bool = True) -> bool:
    """``pip install -q ARGS``; its resolver's complaints go to stderr only when it fails."""
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
                       capture_output=True, text=True)
    if r.returncode and check:
        sys.stderr.write(r.stdout + r.stderr)
        raise SystemExit(f"install_reference: pip install {' '.join(args)} failed")
    return r.returncode == 0


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for spec in argv:
        name = Requirement(spec).name
        if not pip("--no-deps", spec, check=False):
            if not pip("--no-deps", "--ignore-requires-python", "--dry-run", spec, check=False):
                raise SystemExit(f"install_reference: pip install --no-deps {spec} failed")
            print(f"install_reference: {spec} does not support Python {sys.version.split()[0]} (its "
                  f"Requires-Python): skipped; what needs it is not in this install")
            continue
        have = installed()
        reqs = needs(name, have)
        missing = [r for r in reqs if canonicalize_name(Requirement(r).name) not in have]
        if not missing:
            continue
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            # new packages resolve around what the installed ones require (pip itself only looks at
            # what it installs): an upgrade or downgrade nothing here forbids is fine, a break is not
            f.write("\n".join(installed_requirements(exclude=name)))
        if pip("-c", f.name, *reqs, check=False):
            print(f"install_reference: {spec}: {len(missing)} of its {len(reqs)} requirements were missing, now installed")
            continue
        # together they can't resolve around what is installed: each on its own, and name what can't
        left = [r for r in missing if not pip("-c", f.name, r, check=False)]
        for r in left:
            print(f"install_reference: {spec}: {r} cannot be installed here (no release on the index fits "
                  f"beside evalkit's packages); the parts of {name} that import it will not work")
        print(f"install_reference: {spec}: {len(missing) - len(left)} of {len(missing)} missing requirements installed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
