"""`evalkit cache info|prune|clear` on a real cache filled by `evalkit run`, the schema migration of
an older cache, and the refusal to open the SQLite (WAL) cache on a network file system, with the
mount table faked."""
from __future__ import annotations

import json
import logging
import sqlite3
import time

import pytest

from evalkit.util import fs_check
from evalkit.run.cache import CacheLocationError, ResponseCache
from evalkit.cli import main
from tests.compare.test_compare import copy_task, fake_backend  # noqa: F401 - copy_task is a fixture


@pytest.fixture
def filled(tmp_path, copy_task, monkeypatch):  # noqa: F811
    """Two model identities' responses in a cache written by `evalkit run` (fake backend, real engine)."""
    import evalkit.cli.run as run_mod
    made = []

    def fake(spec, model_args=None, **kw):
        made.append(fake_backend(spec))
        return made[-1]

    monkeypatch.setattr(run_mod, "make_backend", fake)
    tasks, data = copy_task
    cache_dir, results = tmp_path / "cache", tmp_path / "results"

    def run(model, limit):
        return main(["run", "--model", model, "--tasks", "copy_digits", "--include-path", str(tasks),
                     "--data", f"copy_digits={data}", "--limit", str(limit), "--output", str(results),
                     "--cache-dir", str(cache_dir)])

    assert run("hf:fake-good", 12) == 0 and run("hf:fake-broken", 7) == 0
    return {"cache_dir": cache_dir, "results": results, "run": run, "made": made}


def info(capsys, *extra) -> dict:
    capsys.readouterr()
    assert main(["cache", "info", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_info_prune_clear(filled, capsys):
    cd = str(filled["cache_dir"])
    rep = info(capsys, "--cache-dir", cd, "--results", str(filled["results"]))
    assert rep["rows"] == 19 and not rep["network_fs"] and rep["journal_mode"] == "WAL"
    by_name = {m["name"]: m for m in rep["models"]}
    assert {"fake-good", "fake-broken"} <= {str(n).rsplit("/", 1)[-1] for n in by_name} or len(by_name) == 2
    assert sorted(m["rows"] for m in rep["models"]) == [7, 12]
    assert main(["cache", "info", "--cache-dir", cd]) == 0
    assert "19 responses, 2 model identities" in capsys.readouterr().out

    broken = next(m for m in rep["models"] if m["rows"] == 7)["model"]
    assert main(["cache", "prune", "--cache-dir", cd, "--model", broken[:8], "--dry-run"]) == 0
    assert "would delete 7 responses; 12 left" in capsys.readouterr().out
    assert main(["cache", "prune", "--cache-dir", cd, "--model", broken[:8]]) == 0
    assert "deleted 7 responses; 12 left" in capsys.readouterr().out
    # age five of the remaining rows by 40 days: --older-than 30 takes exactly those
    db = sqlite3.connect(filled["cache_dir"] / "responses.sqlite")
    db.execute("UPDATE responses SET created=? WHERE rowid IN (SELECT rowid FROM responses LIMIT 5)",
               (time.time() - 40 * 86400,))
    db.commit()
    db.close()
    assert main(["cache", "prune", "--cache-dir", cd, "--older-than", "30"]) == 0
    assert "deleted 5 responses; 7 left" in capsys.readouterr().out
    assert main(["cache", "prune", "--cache-dir", cd]) == 2          # nothing selected: usage error
    assert main(["cache", "clear", "--cache-dir", cd]) == 2          # needs --yes
    assert "pass --yes" in capsys.readouterr().err
    assert main(["cache", "clear", "--cache-dir", cd, "--yes"]) == 0
    assert info(capsys, "--cache-dir", cd)["rows"] == 0
    # a cleared cache really recomputes
    assert filled["run"]("hf:fake-good", 12) == 0 and len(filled["made"][-1].requests) == 12
    assert main(["cache", "prune", "--cache-dir", str(filled["cache_dir"] / "nope"), "--older-than", "1"]) == 2


def test_old_cache_without_timestamps_is_migrated(tmp_path):
    path = tmp_path / "responses.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE responses (model TEXT NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL, "
               "response TEXT NOT NULL, PRIMARY KEY (model, key))")
    db.execute("INSERT INTO responses VALUES ('m', 'k', 'loglikelihood_rolling', '-3.5')")
    db.commit()
    db.close()
    before = time.time()
    cache = ResponseCache(path)
    assert cache.get_many("m", "loglikelihood_rolling", ["k"]) == {"k": -3.5}
    (s,) = cache.stats()
    assert s["rows"] == 1 and s["oldest"] >= before - 1
    cache.put_many("m", "loglikelihood_rolling", [("k2", -1.0)])
    assert cache.count() == 2
    cache.close()


MOUNTS = """\
sysfs /sys sysfs rw,nosuid 0 0
/dev/sda1 / ext4 rw,relatime 0 0
tmpfs /tmp tmpfs rw 0 0
{nfs_dev} {nfs} {fstype} rw,relatime,vers=4.2 0 0
/dev/sdb1 {local} xfs rw 0 0
"""


@pytest.fixture
def fake_mounts(tmp_path, monkeypatch):
    def make(fstype="nfs4", dev="fileserver:/export/home"):
        nfs, local = tmp_path / "shared home", tmp_path / "shared home" / "local disk"
        local.mkdir(parents=True, exist_ok=True)
        table = tmp_path / "mounts"
        table.write_text(MOUNTS.format(nfs_dev=dev, nfs=str(nfs).replace(" ", "\\040"), fstype=fstype,
                                       local=str(local).replace(" ", "\\040")))
        monkeypatch.setattr(fs_check, "MOUNTS", table)
        return nfs, local
    return make


@pytest.mark.parametrize("fstype,dev", [("nfs4", "fileserver:/export/home"), ("nfs", "fs:/x"),
                                        ("cifs", "//nas/share"), ("smb3", "//nas/share"),
                                        ("fuse.sshfs", "me@host:/data"), ("lustre", "10.0.0.1@tcp:/fs")])
def test_cache_refuses_network_file_systems(fake_mounts, fstype, dev, copy_task, monkeypatch, capsys):  # noqa: F811
    nfs, local = fake_mounts(fstype, dev)
    monkeypatch.delenv("EVALKIT_CACHE_NETWORK_FS", raising=False)
    with pytest.raises(CacheLocationError) as e:
        ResponseCache(nfs / "cache" / "responses.sqlite")
    msg = str(e.value)
    assert f"on {fstype} ({dev} mounted at {nfs})" in msg and "WAL" in msg and "--cache-dir" in msg
    assert not (nfs / "cache" / "responses.sqlite").exists()
    # a local disk mounted below the network mount is fine (the longest mount point wins)
    ResponseCache(local / "responses.sqlite").close()
    # the CLI: one line, exit 2, and `info` says why
    assert main(["cache", "info", "--cache-dir", str(nfs / "cache")]) == 0
    assert "network: WAL unsafe" in capsys.readouterr().out
    tasks, data = copy_task
    assert main(["run", "--model", "hf:whatever", "--tasks", "copy_digits", "--include-path", str(tasks),
                 "--data", f"copy_digits={data}", "--cache-dir", str(nfs / "c2")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("evalkit run: error:") and "network file system" in err and len(err.splitlines()) == 1


def test_rollback_journal_when_asked(fake_mounts, monkeypatch, caplog):
    nfs, _ = fake_mounts("nfs4")
    monkeypatch.setenv("EVALKIT_CACHE_NETWORK_FS", "rollback")
    with caplog.at_level(logging.WARNING, logger="evalkit.run.cache"):
        cache = ResponseCache(nfs / "responses.sqlite")
    assert cache.journal_mode == "DELETE"
    assert cache._db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    cache.put_many("m", "loglikelihood_rolling", [("k", 1.0)])
    assert cache.count() == 1
    cache.close()
    assert "rollback journal instead of WAL" in caplog.text


def test_mount_table_parsing():
    table = "a / ext4 rw 0 0\nb /mnt/data\\040x nfs rw 0 0\nc /mnt/data\\040x/sub fuse.rclone rw 0 0\n" \
            "d /home fuse.portal rw 0 0\n"
    assert fs_check.mount_of("/mnt/data x/file", table).fstype == "nfs"
    assert fs_check.mount_of("/mnt/data x/sub/deeper/f", table).fstype == "fuse.rclone"
    assert fs_check.mount_of("/mnt/data xy", table).fstype == "ext4"      # not a path prefix
    assert fs_check.network_fs("/home/me", table) is None                  # a local FUSE file system
    assert fs_check.network_fs("/etc", table) is None
