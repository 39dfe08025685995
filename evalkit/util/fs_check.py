"""Which file system a path lives on, from the mount table (``/proc/mounts``).

SQLite's WAL mode keeps its index in a shared-memory file and relies on POSIX locks that network
file systems (NFS, SMB/CIFS, sshfs, Lustre, ...) do not provide faithfully: two machines writing one
WAL database there can corrupt it (https://www.sqlite.org/wal.html, "WAL does not work over a network
filesystem"). ``evalkit.run.cache`` asks ``network_fs(path)`` before opening the response cache.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

MOUNTS = Path("/proc/mounts")

NETWORK_FS = {"nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "ncpfs", "afs", "coda", "9p", "lustre",
              "gpfs", "glusterfs", "ceph", "beegfs", "ocfs2", "gfs2", "davfs", "orangefs", "pvfs2", "panfs"}
NETWORK_FUSE = {"sshfs", "glusterfs", "s3fs", "gcsfuse", "rclone", "davfs2", "cephfs", "ceph", "juicefs",
                "goofys", "blobfuse", "blobfuse2", "lustre", "moosefs", "mfs", "seaweedfs", "alluxio"}


@dataclass
class Mount:
    device: str
    point: str
    fstype: str

    @property
    def network(self) -> bool:
        t = self.fstype.lower()
        if t in NETWORK_FS:
            return True
        if t.startswith("fuse."):
            return t[5:] in NETWORK_FUSE
        return False


def _unescape(s: str) -> str:
    # /proc/mounts writes space, tab, newline and backslash as octal escapes
    for esc, ch in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        s = s.replace(esc, ch)
    return s


def read_mounts(table: Optional[str] = None) -> list[Mount]:
    if table is None:
        try:
            table = MOUNTS.read_text()
        except OSError:
            return []
    out = []
    for line in table.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            out.append(Mount(_unescape(parts[0]), _unescape(parts[1]), parts[2]))
    return out


def mount_of(path, table: Optional[str] = None) -> Optional[Mount]:
    """The mount holding ``path`` (its nearest existing parent; the last of stacked mounts wins)."""
    p = Path(os.path.abspath(os.path.expanduser(str(path))))
    tail = []
    while not p.exists() and p != p.parent:   # resolve links in the part that exists, keep the rest
        tail.insert(0, p.name)
        p = p.parent
    real = os.path.join(os.path.realpath(p), *tail)
    best = None
    for m in read_mounts(table):
        point = m.point.rstrip("/") or "/"
        if real == point or real.startswith(point if point.endswith("/") else point + "/") or point == "/":
            if best is None or len(point) >= len(best.point.rstrip("/") or "/"):
                best = m
    return best


def network_fs(path, table: Optional[str] = None) -> Optional[Mount]:
    """The network mount holding ``path``, or None when it is local (or unknown)."""
    m = mount_of(path, table)
    return m if m is not None and m.network else None
