"""A real TRL GRPOTrainer run on the bundled SmolLM2-135M with an evalkit reward: two steps, tiny
batches, short completions; the rewards TRL logs are the ones evalkit's verifier returned."""
from __future__ import annotations

import os
import statistics

import pytest

from tests.conftest import shared

pytestmark = pytest.mark.slow


def test_grpo_trainer_logs_evalkit_rewards(tiny_model_dir, tmp_path):
    torch = pytest.importorskip("torch")
    trl = pytest.importorskip("trl")
    from datasets import Dataset
    from transformers import TrainerCallback

    from evalkit.rl import trl_reward
    from evalkit.rl.export import rows

    torch.set_num_threads(int(os.environ.get("EVALKIT_TORCH_THREADS", "1")))
    data = rows("gsm8k", "trl", data_path=str(shared("gsm8k")), limit=4, num_fewshot=0)
    # two easy rows the model can get right, so the logged mean is not trivially 0
    easy = '{"question": "What is 2+3?", "answer": "#### 5"}'
    data += [{"prompt": "Question: What is 2+3?\nAnswer: 2 + 3 =", "gold": easy, "doc_id": "easy", "task": "gsm8k"}]
    ds = Dataset.from_list(data)
    reward = trl_reward("gsm8k")
    batches = []

    class Grab(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            batches.append([v.reward for v in reward.last_verdicts])

    args = trl.GRPOConfig(output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4, num_generations=4,
                          max_completion_length=12, logging_steps=1, report_to="none", use_cpu=True,
                          save_strategy="no", seed=0, temperature=1.0, dataloader_num_workers=0,
                          log_completions=False)
    trainer = trl.GRPOTrainer(model=tiny_model_dir, reward_funcs=[reward], args=args, train_dataset=ds,
                              callbacks=[Grab()])
    trainer.train()
    logged = [h["rewards/evalkit_gsm8k/mean"] for h in trainer.state.log_history if "rewards/evalkit_gsm8k/mean" in h]
    print("TRL logged rewards/evalkit_gsm8k/mean:", logged, "evalkit batches:", batches)
    assert len(logged) == 2 and len(batches) == 2
    for value, batch in zip(logged, batches):
        assert len(batch) == 4 and None not in batch
        assert value == pytest.approx(statistics.fmean(batch))
    assert reward.verifier.version_hash.startswith("evk-")
