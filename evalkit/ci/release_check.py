"""``python -m evalkit.ci.release_check``: what a built wheel must hold, checked after installing it
alone into a clean venv (the release workflow runs it): the packages (evalkit, its tasks, judges and
dashboard) and the data files they read at run time. Exits 1 naming what is missing."""
from __future__ import annotations

import importlib
import sys
from importlib import resources

PACKAGES = ("evalkit", "evalkit.cli", "evalkit.tasks", "evalkit.tasks.bfcl", "evalkit.tasks.bbh", "evalkit.tasks.tau2",
            "evalkit.tasks.ruler", "evalkit.tasks.lm_eval_catalog", "evalkit.judges", "evalkit.dashboards")
DATA = {"evalkit.records": ["run.schema.json"], "evalkit.run": ["suites/leaderboard-v2.toml"],
        "evalkit.ci": ["gate.sh"], "evalkit.judges": ["judge_prompts.jsonl"],
        "evalkit.tasks.tau2": ["agent_tools.json", "runtime_common.py", "runtime_airline.py", "runtime_retail.py",
                               "runtime_telecom.py", "runtime_telecom_agent.py", "runtime_telecom_user.py",
                               "runtime_telecom_phone.py", "runtime_banking.py", "runtime_banking_db.py",
                               "runtime_banking_agent.py", "runtime_banking_credit.py", "runtime_banking_accounts.py",
                               "runtime_banking_debit.py", "runtime_banking_service.py", "runtime_banking_user.py",
                               "banking_tools.json", "banking_discoverable.json"],
        "evalkit.tasks.bfcl": ["multi_turn_runtime.py"]}


def missing() -> list[str]:
    out = []
    for name in PACKAGES:
        if importlib.util.find_spec(name) is None:
            out.append(f"package {name}")
    for pkg, files in DATA.items():
        for f in files:
            try:
                if not resources.files(pkg).joinpath(f).is_file():
                    out.append(f"{pkg}/{f}")
            except ModuleNotFoundError:
                out.append(f"package {pkg}")
    return out


def main() -> int:
    gone = missing()
    if gone:
        print("evalkit release check: the installed package lacks " + ", ".join(gone), file=sys.stderr)
        return 1
    print(f"evalkit release check: {len(PACKAGES)} packages and {sum(map(len, DATA.values()))} data files present")
    return 0


if __name__ == "__main__":
    sys.exit(main())
