"""τ²-bench (sierra-research/tau2-bench): conversational agents with a simulated user; see ``task``."""
from . import task  # noqa: F401 (registers tau2_airline, tau2_retail, tau2_telecom)
from . import banking  # noqa: F401 (registers tau2_banking_knowledge)
