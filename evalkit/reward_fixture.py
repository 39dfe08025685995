"""A deterministic reward model built from the bundled SmolLM2-135M: no random weights.

``LlamaForSequenceClassification`` with the bundled model's body and a one-label score head equal
to the difference of the output-embedding rows of the tokens "yes" and "no". Its rewards are
NOISE as a judgment of quality ("2+3=7" may score above "2+3=5"): it exists to prove plumbing and
numerics (transformers and vLLM agree on it), never reward-model quality.

Built once per machine into ``<models dir>/smollm2-135m-yesno-rm`` (517 MB fp32; never committed):
``python -m evalkit.reward_fixture`` prints the folder, building it when missing.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from evalkit import models

NAME = "smollm2-135m-yesno-rm"


def build(out: os.PathLike | None = None, force: bool = False) -> Path:
    out = Path(out) if out else models.models_dir() / NAME
    if (out / "config.json").exists() and any(out.glob("*.safetensors")) and not force:
        return out
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForSequenceClassification

    base = models.prepare("smollm2-135m")
    tok = AutoTokenizer.from_pretrained(base)
    lm = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    cfg = lm.config.__class__.from_dict(lm.config.to_dict())
    cfg.num_labels = 1
    cfg.architectures = ["LlamaForSequenceClassification"]
    cfg.tie_word_embeddings = False
    cfg.pad_token_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    rm = LlamaForSequenceClassification(cfg).to(torch.float32)
    rm.model.load_state_dict(lm.model.state_dict())
    yes, no = (tok(w, add_special_tokens=False)["input_ids"] for w in ("yes", "no"))
    if len(yes) != 1 or len(no) != 1:
        raise RuntimeError(f"'yes'/'no' are not single tokens for {base}: {yes}, {no}")
    w = lm.get_output_embeddings().weight.detach()
    with torch.no_grad():
        rm.score.weight.copy_((w[yes[0]] - w[no[0]]).unsqueeze(0))
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    rm.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "FIXTURE.txt").write_text(__doc__)
    if out.exists():
        import shutil
        shutil.rmtree(out)
    os.replace(tmp, out)
    return out


if __name__ == "__main__":
    print(build(force="--force" in sys.argv[1:]))
