"""``evalkit cache info|prune|clear``: look after the SQLite response cache.

  evalkit cache info                         # where it is, its file system, size, rows per model
  evalkit cache info --results results/      # ...naming each model identity from the run records there
  evalkit cache prune --older-than 30        # drop responses written more than 30 days ago
  evalkit cache prune --model 3f2a9c         # drop one model identity (hash prefix, see `info`)
  evalkit cache clear --yes                  # drop everything

The cache is ``$EVALKIT_CACHE_DIR/responses.sqlite`` (default ~/.cache/evalkit), or
``--cache-dir DIR`` as for ``evalkit run``. It refuses to open on a network file system (NFS, SMB,
sshfs, ...), where SQLite's WAL locking is unsafe; ``info`` still reports where it is and why.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import time
from pathlib import Path

from evalkit.util import fs_check
from evalkit.run.cache import CacheLocationError, ResponseCache, default_cache_dir


def _path(args) -> Path:
    return (Path(args.cache_dir) if args.cache_dir else default_cache_dir()) / "responses.sqlite"


def _when(t) -> str:
    if t is None:
        return "-"
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M")


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def model_names(results) -> dict:
    """identity hash -> model name, from the run records under ``results``."""
    out = {}
    for f in Path(results).rglob("run.json"):
        try:
            m = json.loads(f.read_text(encoding="utf-8")).get("model", {})
        except (OSError, ValueError):
            continue
        if m.get("identity_hash"):
            out.setdefault(m["identity_hash"], m.get("name") or m.get("spec"))
    return out


def info(args) -> int:
    path = _path(args)
    mount = fs_check.mount_of(path)
    fs = f"{mount.fstype} at {mount.point}" if mount else "unknown"
    rep = {"path": str(path), "exists": path.exists(), "filesystem": mount.fstype if mount else None,
           "mount_point": mount.point if mount else None, "network_fs": bool(mount and mount.network)}
    lines = [f"cache: {path}", f"file system: {fs}" + (" (network: WAL unsafe, the cache refuses to open)"
                                                       if rep["network_fs"] else "")]
    if path.exists() and not rep["network_fs"]:
        cache = ResponseCache(path)
        try:
            stats = cache.stats()
            rep["bytes_on_disk"] = sum(p.stat().st_size for p in cache.files())
            rep["journal_mode"] = cache.journal_mode
        finally:
            cache.close()
        names = model_names(args.results) if args.results else {}
        rep["models"] = [{**s, "name": names.get(s["model"])} for s in stats]
        rep["rows"] = sum(s["rows"] for s in stats)
        lines.append(f"size on disk: {_size(rep['bytes_on_disk'])}; {rep['rows']} responses, "
                     f"{len({s['model'] for s in stats})} model identities; journal {rep['journal_mode']}")
        if stats:
            head = ("model", "name", "kind", "rows", "size", "oldest", "newest")
            rows = [head] + [(s["model"][:16], str(names.get(s["model"]) or "-"), s["kind"], str(s["rows"]),
                              _size(s["bytes"]), _when(s["oldest"]), _when(s["newest"])) for s in stats]
            w = [max(len(r[i]) for r in rows) for i in range(len(head))]
            lines.append("")
            lines += ["  ".join(c.ljust(x) for c, x in zip(r, w)).rstrip() for r in rows]
    elif not path.exists():
        lines.append("no cache yet (it is created by the first `evalkit run`)")
    print(json.dumps(rep, indent=2) if args.json else "\n".join(lines))
    return 0


def _open(args) -> ResponseCache:
    path = _path(args)
    if not path.exists():
        raise FileNotFoundError(f"no response cache at {path}")
    return ResponseCache(path)


def prune(args) -> int:
    if args.older_than is None and not args.model and not args.kind:
        raise ValueError("prune needs --older-than DAYS, --model HASH or --kind KIND (use `clear` to drop everything)")
    if args.older_than is not None and args.older_than < 0:
        raise ValueError("--older-than must be >= 0 days")
    cache = _open(args)
    try:
        before = sum(p.stat().st_size for p in cache.files())
        cutoff = time.time() - args.older_than * 86400 if args.older_than is not None else None
        n = cache.delete(older_than=cutoff, model=args.model, kind=args.kind, dry_run=args.dry_run)
        after = sum(p.stat().st_size for p in cache.files())
        left = cache.count()
    finally:
        cache.close()
    verb = "would delete" if args.dry_run else "deleted"
    print(f"{verb} {n} responses; {left - n if args.dry_run else left} left"
          + ("" if args.dry_run else f"; {_size(before)} -> {_size(after)}"))
    return 0


def clear(args) -> int:
    if not args.yes:
        raise ValueError(f"clear deletes every cached response in {_path(args)}: pass --yes")
    cache = _open(args)
    try:
        n = cache.delete()
    finally:
        cache.close()
    print(f"deleted {n} responses from {_path(args)}")
    return 0


def register(sub):
    p = sub.add_parser("cache", help="response cache: info, prune, clear",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cmds = p.add_subparsers(dest="cache_command", metavar="info|prune|clear")
    cmds.required = True

    def common(q):
        q.add_argument("--cache-dir", default=None,
                       help="cache folder (default $EVALKIT_CACHE_DIR or ~/.cache/evalkit)")

    q = cmds.add_parser("info", help="where the cache is, its file system, size and rows per model")
    common(q)
    q.add_argument("--results", default=None, metavar="DIR", help="name model identities from run records here")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=info)
    q = cmds.add_parser("prune", help="delete old responses or one model's")
    common(q)
    q.add_argument("--older-than", type=float, default=None, metavar="DAYS", help="written more than DAYS ago")
    q.add_argument("--model", default=None, metavar="HASH", help="model identity hash (a prefix is enough)")
    q.add_argument("--kind", default=None, help="request kind (generate, loglikelihood, loglikelihood_rolling)")
    q.add_argument("--dry-run", action="store_true", help="count only")
    q.set_defaults(func=prune)
    q = cmds.add_parser("clear", help="delete every cached response")
    common(q)
    q.add_argument("--yes", action="store_true", help="really delete everything")
    q.set_defaults(func=clear)


__all__ = ["register", "CacheLocationError"]
