"""The model roles of a run (``evalkit.run.roles``): one parser, check and factory for the model, the
simulated user, the judge and the second judge; every error names the flag the user typed (#52, #53)."""
from __future__ import annotations

import pytest

from evalkit.run.roles import ModelRole
from evalkit.taskapi.requests import GenerateRequest, GenParams


def test_options_without_their_role_and_a_role_without_options():
    with pytest.raises(ValueError, match="^--judge-args given without --judge: name the judge model"):
        ModelRole.of("judge", None, "dtype=float32", "--judge", "--judge-args")
    absent = ModelRole.of("judge", None, "", "--judge", "--judge-args")
    assert not absent.given and absent.make() is None


def test_a_backends_own_complaint_names_the_roles_flag(tiny_model_dir):
    role = ModelRole.of("judge", f"hf:{tiny_model_dir}", "reasoning_effort=extreme", "--judge", "--judge-args")
    with pytest.raises(ValueError, match="--judge-args reasoning_effort='extreme'") as e:
        role.make()
    assert "--model-args" not in str(e.value)


def test_a_roles_server_address_is_named_by_its_own_flag():
    """An unreachable server of the simulated user says where its address is given: --user-model-args
    (the main model's: --base-url). The server is asked its models as the backend is made."""
    ask = GenerateRequest(prompt="hi", params=GenParams(max_tokens=1, temperature=0.0))
    args = "base_url=http://127.0.0.1:9/v1,max_retries=0,tokenizer=none"
    for role, needle in ((ModelRole.of("simulated user", "openai:someone", args, "--user-model", "--user-model-args"),
                          "Check --user-model-args base_url=."), (ModelRole.of("model", "openai:someone", args),
                                                                  "Check --base-url.")):
        with pytest.raises(Exception, match=needle):
            role.make().generate([ask])
