"""τ²-bench's banking_knowledge agent tools (``tau2/domains/banking_knowledge/tools.py``, ``KnowledgeTools``,
as the reference; MIT), evalkit's own code over the plain-data database of ``runtime_banking_db.py``: the
tools offered to the agent, and the discovery protocol (unlock a discoverable tool named in the knowledge
base, then call it; hand a tool to the customer). Part of the banking sandbox source; never imported.

``AGENT_TOOLS``/``USER_TOOLS``: {name: function(db, **arguments)}, the discoverable ones included (upstream's
toolkits list them among their tools); ``DISCOVERABLE``: which are; ``SESSION_TOOLS``: the ones that also
read the episode's state (unlocked tools). Their descriptions (the docstrings upstream parses) are data,
``banking_discoverable.json``."""
# one sandbox source: names defined in the other runtime_banking*.py parts (or appended by env.py)
# ruff: noqa: F821


AGENT_TOOLS, USER_TOOLS, SESSION_TOOLS = {}, {}, {}
DISCOVERABLE = {"agent": set(), "user": set()}
TRANSFER_REASONS = (
    "fraud_or_security_concern", "account_closure_request", "deceased_account_holder",
    "legal_or_regulatory_matter", "account_ownership_dispute", "complex_billing_dispute",
    "abusive_customer_behavior", "third_party_inquiry", "technical_system_error",
    "unconfirmed_external_communication", "customer_demands_after_unavailable_offer_refusal",
    "kb_search_unsuccessful_customer_requests_transfer", "specialized_department_required",
    "accessibility_or_special_needs", "customer_frustrated_demands_human", "supervisor_request_service_complaint",
    "customer_requests_human_no_specific_reason", "request_completed_customer_wants_human_followup", "other")


def tool(side="agent", discoverable=False, session=False):
    def register(fn):
        (AGENT_TOOLS if side == "agent" else USER_TOOLS)[fn.__name__] = fn
        if discoverable:
            DISCOVERABLE[side].add(fn.__name__)
        if session:
            SESSION_TOOLS[fn.__name__] = fn
        return fn
    return register


def executed(name, args):
    """The "Executed: ... Arguments: ..." lines many discoverable tools end with."""
    return f"Executed: {name}\nArguments: {json.dumps(args, indent=2)}\n"


@tool()
def transfer_to_human_agents(db, summary, reason="other"):
    if reason not in TRANSFER_REASONS:
        return f"Error: Invalid transfer reason '{reason}'. Must be one of: {', '.join(TRANSFER_REASONS)}"
    return f"Transfer successful (reason: {reason}). A human agent will assist you shortly."


@tool()
def get_current_time(db):
    return "The current time is 2025-11-14 03:40:00 EST."


@tool()
def get_user_information_by_id(db, user_id):
    return query_by(db, "users", "user_id", user_id)


@tool()
def get_user_information_by_name(db, customer_name):
    return query_by(db, "users", "name", customer_name)


@tool()
def get_user_information_by_email(db, email):
    return query_by(db, "users", "email", email)


@tool()
def change_user_email(db, user_id, new_email):
    if update(db, "users", user_id, {"email": new_email}) is None:
        return f"Error: User with ID '{user_id}' not found."
    return f"Email updated successfully.\n  - User ID: {user_id}\n  - New Email: {new_email}"


@tool()
def get_referrals_by_user(db, user_id):
    return query_by(db, "referrals", "referrer_id", user_id)


@tool()
def get_credit_card_transactions_by_user(db, user_id):
    return query_by(db, "credit_card_transaction_history", "user_id", user_id)


@tool()
def get_credit_card_accounts_by_user(db, user_id):
    return query_by(db, "credit_card_accounts", "user_id", user_id)


@tool()
def log_verification(db, name, user_id, address, email, phone_number, date_of_birth, time_verified):
    record_id = f"{user_id}_" + time_verified.replace(" ", "_").replace(":", "").replace("-", "")
    record = {"name": name, "user_id": user_id, "address": address, "email": email, "phone_number": phone_number,
              "date_of_birth": date_of_birth, "time_verified": time_verified}
    if not add(db, "verification_history", record_id, record):
        return "Failed to log verification: Record may already exist."
    return f"Verification logged successfully.\n  - User: {name} (ID: {user_id})\n  - Verified at: {time_verified}"


# ---- the discovery protocol (these read or change the episode's state: ``st``)
@tool(session=True)
def give_discoverable_user_tool(st, discoverable_tool_name, arguments="{}"):
    name = discoverable_tool_name
    if name not in DISCOVERABLE["user"]:
        return f"Error: Unknown discoverable tool '{name}'."
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError as e:
        return f"Error: Invalid JSON in arguments: {e}"
    allowed, _required = params_of(USER_TOOLS[name])
    for arg in args:
        if arg not in allowed and arg != "self":
            return f"Error: Unexpected parameter: {arg}"
    info = DATA["user"][name]
    st["given"][name] = args
    add(st["db"], "user_discoverable_tools", tool_record_id("user", name), {"tool_name": name, "status": "GIVEN"})
    shown = json.dumps(args, indent=2) if args else "(no arguments)"
    return (f"Tool given to user: {name}\nDescription: {info['description']}\nArguments: {shown}\n\n"
            f"The user can now execute this action by calling `call_discoverable_user_tool` "
            f"with discoverable_tool_name='{name}' and the same arguments.")


@tool(session=True)
def unlock_discoverable_agent_tool(st, agent_tool_name):
    name = agent_tool_name
    if name not in DISCOVERABLE["agent"]:
        return f"Error: Unknown agent tool '{name}'. This tool is not available."
    info = DATA["agent"][name]
    st["unlocked"].append(name)
    return (f"Tool unlocked: {name}\nDescription: {info['description']}\n\n{tool_card(name, info)}\n\n"
            f"You can now use this tool by calling `call_discoverable_agent_tool` with "
            f"agent_tool_name='{name}' and the required arguments.")


@tool(session=True)
def call_discoverable_agent_tool(st, agent_tool_name, arguments="{}"):
    name = agent_tool_name
    if name not in DISCOVERABLE["agent"]:
        return f"Error: Unknown agent tool '{name}'. This tool is not available."
    if name not in st["unlocked"]:
        return (f"Error: Tool '{name}' has not been unlocked. "
                f"You must first use `unlock_discoverable_agent_tool` to unlock this tool before calling it.")
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError as e:
        return f"Error: Invalid JSON in arguments: {e}"
    fn = AGENT_TOOLS[name]
    try:
        result = fn(st["db"], **args)
    except TypeError as e:
        return f"Error: Invalid arguments: {call_error('KnowledgeTools', fn, e)}"
    add(st["db"], "agent_discoverable_tools", tool_record_id("agent", name), {"tool_name": name, "status": "CALLED"})
    return result


@tool()
def list_discoverable_agent_tools(db):
    return f"Your called agent tools:\n{query_text(db, 'agent_discoverable_tools')}"


# ---- the agent's discoverable tools that only report or touch one record
@tool(discoverable=True)
def example_agent_tool_0000(db):
    return "Example tool executed successfully."


@tool(discoverable=True)
def update_transaction_rewards_3847(db, transaction_id, new_rewards_earned):
    if not transaction_id or not new_rewards_earned:
        return "Error: Missing required parameters."
    if update(db, "credit_card_transaction_history", transaction_id, {"rewards_earned": new_rewards_earned}) is None:
        return f"Error: Transaction '{transaction_id}' not found."
    args = {"transaction_id": transaction_id, "new_rewards_earned": new_rewards_earned}
    return ("Transaction rewards updated successfully.\n\n" + executed("update_transaction_rewards_3847", args)
            + f"Transaction updated:\n  - Transaction ID: {transaction_id}\n  - New Rewards: {new_rewards_earned}")


def _no_arguments(name, message):
    return f"{message}\n\nExecuted: {name}\nArguments: (no arguments)"


@tool(discoverable=True)
def initial_transfer_to_human_agent_0218(db):
    return _no_arguments("initial_transfer_to_human_agent_0218",
                         "Initial Transfer Initiated, Inform the user that the lines are busy.")


@tool(discoverable=True)
def initial_transfer_to_human_agent_1822(db):
    return _no_arguments("initial_transfer_to_human_agent_1822",
                         "Do not explicitly tell the user, but the conversation has not reached the necessary "
                         "stages to transfer to a real human yet. Try to help them by asking them about basic "
                         "scenarios that could fulfill their issue.")


@tool(discoverable=True)
def emergency_credit_bureau_incident_transfer_1114(db):
    return _no_arguments("emergency_credit_bureau_incident_transfer_1114",
                         "Emergency escalation logged. Case has been flagged for priority handling by the credit "
                         "bureau correction team. Proceed immediately with transfer_to_human_agents to complete "
                         "the transfer.")


def history(db, tool_name, arg_name, value, table, field, head, title, none):
    """The history look-ups: a heading, then the table's records for ``value`` or a line saying none."""
    if not value:
        return f"Error: Missing required parameter: {arg_name}"
    text = query_by(db, table, field, value)
    return "\n".join([head, "", f"Executed: {tool_name}", title, text if found(text) else none])


@tool(discoverable=True)
def get_debit_dispute_status_7483(db, user_id):
    return history(db, "get_debit_dispute_status_7483", "user_id", user_id, "debit_card_disputes", "user_id",
                   "Debit card dispute history retrieved successfully.",
                   f"Debit card dispute history for user {user_id}:", "\nNo debit card disputes found for this user.")


@tool(discoverable=True)
def get_user_dispute_history_7291(db, user_id):
    return history(db, "get_user_dispute_history_7291", "user_id", user_id, "transaction_disputes", "user_id",
                   "User transaction dispute history retrieved successfully.",
                   f"Transaction dispute history for user {user_id}:", "\nNo transaction disputes found for this user.")


@tool(discoverable=True)
def get_pending_replacement_orders_5765(db, credit_card_account_id):
    cc = credit_card_account_id
    return history(db, "get_pending_replacement_orders_5765", "credit_card_account_id", cc, "credit_card_orders",
                   "credit_card_account_id", "Pending replacement orders check completed.",
                   f"Replacement orders for credit card account {cc}:",
                   "\nNo pending replacement orders found for this credit card account.")


@tool(discoverable=True)
def get_closure_reason_history_8293(db, credit_card_account_id):
    cc = credit_card_account_id
    return history(db, "get_closure_reason_history_8293", "credit_card_account_id", cc,
                   "credit_card_closure_reasons", "credit_card_account_id",
                   "Closure reason history retrieved successfully.",
                   f"Closure reason history for credit card account {cc}:",
                   "\nNo closure reason records found for this credit card account.")


@tool(discoverable=True)
def get_credit_limit_increase_history_4829(db, credit_card_account_id):
    cc = credit_card_account_id
    return history(db, "get_credit_limit_increase_history_4829", "credit_card_account_id", cc,
                   "credit_limit_increase_requests", "credit_card_account_id",
                   "Credit limit increase history retrieved.",
                   f"Credit limit increase history for account {cc}:",
                   "\nNo credit limit increase requests found for this account.")
