"""τ²-bench's banking_knowledge customer tools (``tau2/domains/banking_knowledge/tools.py``,
``KnowledgeUserTools``, as the reference; MIT), evalkit's own code over the plain-data database: the ones a
task lists for the customer (apply for a card, submit a referral or a transaction, ask for a human, call a
tool the agent handed over) and the discoverable ones the agent can hand over. Part of the banking sandbox
source; never imported by evalkit."""
# one sandbox source: names defined in the other runtime_banking*.py parts (or appended by env.py)
# ruff: noqa: F821


CARD_TYPES = ["Bronze Rewards Card", "Business Bronze Rewards Card", "Business Gold Rewards Card",
              "Business Platinum Rewards Card", "Business Silver Rewards Card", "Crypto-Cash Back",
              "Diamond Elite Card",
              "EcoCard", "Gold Rewards Card", "Green Rewards Card", "Platinum Rewards Card", "Silver Rewards Card",
              "Silver Zoom Card"]
#: reward rate (%) by card and purchase category ("default": any other)
CARD_REWARDS = {
    "Bronze Rewards Card": {"default": 1.0},
    "Silver Rewards Card": {"Travel": 4.0, "Software": 4.0, "default": 1.0},
    "Gold Rewards Card": {"default": 2.5},
    "Platinum Rewards Card": {"default": 10.0},
    "Business Bronze Rewards Card": {"default": 1.0},
    "Business Silver Rewards Card": {"Travel": 10.0, "Software": 10.0, "default": 1.0},
    "Green Rewards Card": {"Sustainable": 3.0, "default": 1.0},
    "Business Gold Rewards Card": {"Operations": 2.5, "default": 1.0},
    "Business Platinum Rewards Card": {"Travel": 4.0, "Software": 4.0, "Media": 4.0, "default": 1.5},
    "Silver Zoom Card": {"Transportation": 3.0, "default": 1.0},
    "Diamond Elite Card": {"default": 5.0},
    "EcoCard": {"Green": 5.0, "default": 1.0},
    "Crypto-Cash Back": {"default": 2.0}}


def _handed_over(db, name, args):
    """The customer may call a discoverable tool only once the agent gave it; each call is logged."""
    if "No records found" in query_by(db, "user_discoverable_tools", "tool_name", name):
        return (f"Error: Tool '{name}' has not been given to you by the agent. "
                f"The agent must first use `give_discoverable_user_tool` to give this tool to you.")
    call_id = hex_id(f"user_discoverable_tool_call:{name}:{json.dumps(args, sort_keys=True)}")
    add(db, "user_discoverable_tool_calls", call_id,
        {"tool_name": name, "arguments": args, "called_at": TODAY, "status": "CALLED"})
    return None


@tool("user", discoverable=True)
def submit_cash_back_dispute_0589(db, user_id, transaction_id):
    args = {"user_id": user_id, "transaction_id": transaction_id}
    error = _handed_over(db, "submit_cash_back_dispute_0589", args)
    if error:
        return error
    did = dispute_id(user_id, transaction_id)
    settings = rows(db, "task_config").get("dispute_settings", {}) if rows(db, "task_config") else {}
    record = {"dispute_id": did, "user_id": user_id, "transaction_id": transaction_id, "submitted_at": TODAY}
    if settings.get("auto_resolve_disputes", False):
        record.update(status="RESOLVED", resolution="APPROVED")
        status = ("Status: RESOLVED - The dispute has been reviewed and approved. The transaction rewards need to be "
                  "updated.")
    else:
        record["status"] = "SUBMITTED"
        status = "Status: SUBMITTED - Your dispute has been queued for review."
    stored = add(db, "cash_back_disputes", did, record)
    return ("Cash back dispute submitted successfully. Your case has been queued for review.\n\n"
            + executed("submit_cash_back_dispute_0589", args)
            + (f"Dispute ID: {did}\n{status}" if stored
               else "Note: Dispute may have already been submitted for this transaction."))


@tool("user", discoverable=True)
def get_referral_link(db, user_id, card_name):
    args = {"user_id": user_id, "card_name": card_name}
    error = _handed_over(db, "get_referral_link", args)
    if error:
        return error
    rid = hex_id(f"referral_link:{user_id}:{card_name}")
    stored = add(db, "referrals", rid, {"referral_id": rid, "referrer_id": user_id,
                                        "referred_account_type": card_name, "referral_status": "NO_PROGRESS",
                                        "date": TODAY})
    return ("Referral link generated successfully. Share this link with the person you want to refer.\n\n"
            + executed("get_referral_link", args)
            + (f"Referral ID: {rid}\nReferral link: https://rhobank.com/refer/{rid}" if stored
               else "Note: A referral link for this card may have already been generated."))


@tool("user", discoverable=True)
def get_card_last_4_digits(db, credit_card_account_id):
    cc = credit_card_account_id
    args = {"credit_card_account_id": cc}
    error = _handed_over(db, "get_card_last_4_digits", args)
    if error:
        return error
    if not found(query_by(db, "credit_card_accounts", "account_id", cc)):
        return f"Error: Credit card account '{cc}' not found."
    digest = hashlib.sha256(f"card_last4:{cc}".encode()).hexdigest()
    last_4 = "".join(c for c in digest if c.isdigit())[:4].ljust(4, "0")
    return ("Card information retrieved successfully.\n\n" + executed("get_card_last_4_digits", args)
            + f"Last 4 digits of card: {last_4}")


@tool("user", discoverable=True)
def deposit_check_3847(db, account_id, check_amount):
    args = {"account_id": account_id, "check_amount": check_amount}
    error = _handed_over(db, "deposit_check_3847", args)
    if error:
        return error
    try:
        check_amount = float(check_amount)
    except (ValueError, TypeError):
        return f"Error: Invalid check amount '{check_amount}'. Must be a number."
    if check_amount <= 0:
        return "Error: Check amount must be positive."
    accounts = rows(db, "accounts")
    if account_id not in accounts:
        return f"Error: Account '{account_id}' not found."
    if accounts[account_id].get("status") not in ("ACTIVE", "OPEN"):
        return f"Error: Account '{account_id}' is not active."
    before = account_balance(accounts[account_id])
    accounts[account_id]["current_holdings"] = f"${before + check_amount:.2f}"
    return ("Check deposited successfully. Funds will be available according to your account's deposit policy.\n\n"
            + executed("deposit_check_3847", args)
            + f"Check deposit processed!\n  - Account: {account_id}\n  - Check Amount: ${check_amount:.2f}\n"
            f"  - Previous Balance: ${before:.2f}\n  - New Balance: ${before + check_amount:.2f}")


@tool("user")
def apply_for_credit_card(db, card_type, customer_name, annual_income, rho_bank_subscription=False):
    if card_type not in CARD_TYPES:
        return f"Error: Invalid card_type '{card_type}'. Must be one of: {CARD_TYPES}"
    app_id = hex_id(f"credit_card:{card_type}:{customer_name}:{annual_income}:{rho_bank_subscription}")
    record = {"application_id": app_id, "card_type": card_type, "customer_name": customer_name,
              "annual_income": annual_income, "rho_bank_subscription": rho_bank_subscription, "status": "PENDING",
              "date": TODAY}
    if not add(db, "credit_card_applications", app_id, record):
        return f"Failed to submit application: Record ID '{app_id}' may already exist."
    return ("Credit card application submitted:\nYour application has been successfully submitted. "
            "You will receive a decision within 5-7 business days via email.")


@tool("user")
def submit_referral(db, user_id, account_type):
    rid = hex_id(":".join(["referral", user_id, account_type]))  # noqa: FLY002 (as upstream: a non-text id raises)
    record = {"referral_id": rid, "referrer_id": user_id, "referred_account_type": account_type,
              "referral_status": "NO_PROGRESS", "date": TODAY}
    if not add(db, "referrals", rid, record):
        return f"Failed to submit referral: Record ID '{rid}' may already exist."
    return (f"Referral request submitted successfully!\n  - Referral ID: {rid}\n  - Referrer ID: {user_id}\n"
            f"  - Account Type: {account_type}\n  - Status: NO_PROGRESS\n  - Date: {TODAY}\n\n"
            f"Share your referral ID with the person you're referring. "
            f"They will need to use this when applying for their account.")


@tool("user")
def call_discoverable_user_tool(db, discoverable_tool_name, arguments="{}"):
    name = discoverable_tool_name
    if name not in DISCOVERABLE["user"]:
        return f"Error: Unknown discoverable tool '{name}'."
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError as e:
        return f"Error: Invalid JSON in arguments: {e}"
    allowed, required = params_of(USER_TOOLS[name])
    for p in required:
        if p not in args:
            return f"Error: Missing required parameter: {p}"
    for p in args:
        if p not in allowed:
            return f"Error: Unexpected parameter: {p}"
    try:
        return USER_TOOLS[name](db, **args)
    except TypeError as e:
        return f"Error: Invalid arguments for tool '{name}': {e}"


@tool("user")
def list_discoverable_user_tools(db):
    return f"Tools given to you by the agent:\n{query_text(db, 'user_discoverable_tools')}"


@tool("user")
def request_human_agent_transfer(db):
    existing = query_text(db, "human_transfer_requests")
    count = 1 if not found(existing) else existing.count("request_id") + 1
    request_id = f"transfer_request_{count}"
    add(db, "human_transfer_requests", request_id,
        {"request_id": request_id, "request_number": count, "requested_at": TODAY, "status": "PENDING"})
    return f"Transfer request #{count} submitted.\nThe agent will process your request."


@tool("user")
def submit_transaction(db, user_id, credit_card_type, merchant_name, amount, category):
    if credit_card_type not in CARD_REWARDS:
        return f"Error: Unknown credit card type '{credit_card_type}'. Available types: {list(CARD_REWARDS)}"
    txn = transaction_id(user_id, credit_card_type, merchant_name, amount, category)
    rates = CARD_REWARDS[credit_card_type]
    rate = rates.get(category, rates["default"])
    points = int(amount * rate)
    record = {"transaction_id": txn, "user_id": user_id, "credit_card_type": credit_card_type,
              "merchant_name": merchant_name, "transaction_amount": f"${amount:.2f}", "transaction_date": TODAY,
              "category": category, "status": "COMPLETED", "rewards_earned": f"{points} points"}
    if not add(db, "credit_card_transaction_history", txn, record):
        return f"Failed to submit transaction: Record ID '{txn}' may already exist."
    return (f"Transaction submitted successfully!\n  - Transaction ID: {txn}\n  - User ID: {user_id}\n"
            f"  - Card Type: {credit_card_type}\n  - Merchant: {merchant_name}\n  - Amount: ${amount:.2f}\n"
            f"  - Category: {category}\n  - Date: {TODAY}\n"
            f"  - Rewards Earned: {points} points ({rate}% cashback rate)\n")
