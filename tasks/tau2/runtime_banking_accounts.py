"""τ²-bench's banking_knowledge discoverable agent tools for bank accounts (``tau2/domains/banking_knowledge/
tools.py`` as the reference; MIT): open, close, list, transfer, credit, interest reports, transactions and
ATM deposit images (their scanned texts are data: ``banking_discoverable.json``), as evalkit's own code over
the plain-data database. Part of the banking sandbox source; never imported by evalkit."""
# one sandbox source: names defined in the other runtime_banking*.py parts (or appended by env.py)
# ruff: noqa: F821


LIVE = ("ACTIVE", "OPEN")
CHECKING = ("checking", "personal_checking")


def _kind(account):
    return account.get("account_type", account.get("class", ""))


def _age(account):
    """Days since ``date_opened`` (0 when it does not parse)."""
    try:
        return days_since(account.get("date_opened", ""))
    except ValueError:
        return 0


def _eligible(account_type, mine):
    """``open_bank_account_4821``'s rules on the customer's other accounts."""
    if account_type == "savings":
        return any(_kind(a) in CHECKING and a.get("status", "") in LIVE and _age(a) >= 14 for a in mine)
    if account_type == "business_checking":
        if any(a.get("status") == "CLOSED" for a in mine):
            return False
        return any(_kind(a) in CHECKING and a.get("status", "") in LIVE for a in mine)
    if account_type == "business_savings":
        if any(balance_of(a.get("current_holdings", a.get("balance", 0))) < 0 for a in mine):
            return False
        return any(_kind(a) == "business_checking" and a.get("status", "") in LIVE and _age(a) >= 30 for a in mine)
    return True


@tool(discoverable=True)
def open_bank_account_4821(db, user_id, account_type, account_class):
    if not user_id or not account_type or not account_class:
        return "Error: Missing required parameters."
    kinds = ["checking", "savings", "business_checking", "business_savings"]
    if account_type not in kinds:
        return f"Error: Invalid account_type. Must be one of: {kinds}"
    mine = [a for a in rows(db, "accounts").values() if a.get("user_id") == user_id]
    if not _eligible(account_type, mine):
        return "Error: Account eligibility requirements not met."
    account_id = hex_id(f"account:{user_id}:{account_type}:{account_class}")
    record = {"account_id": account_id, "user_id": user_id, "account_type": account_type,
              "account_class": account_class, "current_holdings": "0.00", "status": "OPEN", "date_opened": TODAY}
    if not add(db, "accounts", account_id, record):
        return f"Failed to open account: Account ID '{account_id}' may already exist."
    return (f"Bank account opened successfully!\n  - Account ID: {account_id}\n  - User ID: {user_id}\n"
            f"  - Account Type: {account_type}\n  - Account Class: {account_class}\n  - Status: OPEN\n"
            f"  - Initial Balance: $0.00\n  - Date Opened: {TODAY}")


#: early closure (fee, window in days) by account level, personal checking and savings
EARLY_CLOSURE = {
    "checking": {"Light Blue Account": (15, 30), "Light Green Account": (15, 30), "Green Fee-Free Account": (15, 30),
                 "Blue Account": (25, 60), "Green Account": (25, 60), "Evergreen Account": (50, 90),
                 "Bluest Account": (100, 180)},
    "savings": {"Bronze Account": (20, 60), "Silver Account": (35, 90), "Silver Plus Account": (35, 90),
                "Gold Account": (75, 180), "Gold Plus Account": (75, 180), "Gold Years Account": (75, 180),
                "Platinum Account": (150, 270), "Platinum Plus Account": (150, 270),
                "Diamond Elite Account": (150, 270)}}


@tool(discoverable=True)
def close_bank_account_7392(db, account_id, reason="Customer requested closure", waive_early_closure_fee=False):
    if not account_id:
        return "Error: Missing required parameter (account_id)."
    accounts = rows(db, "accounts")
    if account_id not in accounts:
        return f"Error: Account '{account_id}' not found."
    account = accounts[account_id]
    if account.get("status") == "CLOSED":
        return f"Error: Account '{account_id}' is already closed."
    balance, fee = account_balance(account), 0.0
    if not waive_early_closure_fee:
        rule = EARLY_CLOSURE.get(account.get("class", ""), {}).get(account.get("level", ""))
        opened = account.get("date_opened", "")
        if rule and opened:
            try:
                if days_since(opened) < rule[1]:
                    if balance < rule[0]:
                        return "Error: Account unable to be closed."
                    fee = rule[0]
            except ValueError:
                pass
    if balance - fee != 0:
        return f"Error: Account balance must be $0.00 before closing. Current balance: ${balance:.2f}"
    account.update({"status": "CLOSED", "date_closed": TODAY, "closure_reason": reason,
                    "early_closure_fee_waived": waive_early_closure_fee})
    return (f"Bank account closed successfully!\n  - Account ID: {account_id}\n"
            f"  - Account Type: {account.get('account_type', 'N/A')}\n"
            f"  - Account Class: {account.get('account_class', 'N/A')}\n  - Status: CLOSED\n"
            f"  - Date Closed: {TODAY}\n  - Reason: {reason}\n"
            f"  - Early Closure Fee Waived: {'Yes' if waive_early_closure_fee else 'No'}")


@tool(discoverable=True)
def get_all_user_accounts_by_user_id_3847(db, user_id):
    if not user_id:
        return "Error: Missing required parameter: user_id"
    bank = query_by(db, "accounts", "user_id", user_id)
    cards = query_by(db, "credit_card_accounts", "user_id", user_id)
    out = ["User accounts retrieved successfully.", "", "Executed: get_all_user_accounts_by_user_id_3847",
           f"Accounts for user {user_id}:", "", "Bank Accounts:",
           bank if found(bank) else "  No bank accounts found.", "\nCredit Card Accounts:",
           cards if found(cards) else "  No credit card accounts found."]
    return "\n".join(out)


@tool(discoverable=True)
def transfer_funds_between_bank_accounts_7291(db, source_account_id, destination_account_id, amount):
    src, dst = source_account_id, destination_account_id
    if not src or not dst or amount is None:
        return "Error: Missing required parameters (source_account_id, destination_account_id, amount)."
    try:
        amount = float(amount)
    except (ValueError, TypeError):
        return f"Error: Invalid amount '{amount}'. Must be a number."
    if amount <= 0:
        return "Error: Transfer amount must be positive."
    if src == dst:
        return "Error: Source and destination accounts cannot be the same."
    accounts = rows(db, "accounts")
    for which, key in (("Source", src), ("Destination", dst)):
        if key not in accounts:
            return f"Error: {which} account '{key}' not found."
    for which, key in (("Source", src), ("Destination", dst)):
        if accounts[key].get("status") not in LIVE:
            return f"Error: {which} account '{key}' is not active."
    have = account_balance(accounts[src])
    if have < amount:
        return (f"Error: Insufficient funds. Source account balance is ${have:.2f}, "
                f"but transfer amount is ${amount:.2f}.")
    new_src, new_dst = have - amount, account_balance(accounts[dst]) + amount
    accounts[src]["current_holdings"] = f"${new_src:.2f}"
    accounts[dst]["current_holdings"] = f"${new_dst:.2f}"
    return (f"Transfer completed successfully!\n  - Amount: ${amount:.2f}\n"
            f"  - From: {src} (new balance: ${new_src:.2f})\n  - To: {dst} (new balance: ${new_dst:.2f})")


def _credit(db, account_id, amount, credit_type, kinds, classes, what, prefix, holdings_format, labels):
    """The checking and savings credit tools: checks, the new balance and a posted transaction."""
    if not account_id or amount is None or not credit_type:
        return "Error: Missing required parameters."
    if amount <= 0:
        return "Error: Credit amount must be positive."
    if credit_type not in kinds:
        return f"Error: Invalid credit_type. Must be one of: {list(kinds)}"
    accounts = rows(db, "accounts")
    if account_id not in accounts:
        return f"Error: Account '{account_id}' not found."
    account = accounts[account_id]
    if account.get("class", "").lower() not in classes:
        return f"Error: Account '{account_id}' is not a {what}."
    if account.get("status") not in LIVE:
        return f"Error: Account '{account_id}' is not active."
    before = account_balance(account)
    after = before + amount
    account["current_holdings"] = holdings_format.format(after)
    txn = "txn_" + hex_id(f"{prefix}:{account_id}:{credit_type}:{amount}:{TODAY}")
    rows(db, "bank_account_transaction_history")[txn] = {
        "transaction_id": txn, "account_id": account_id, "date": TODAY, "description": labels[credit_type],
        "amount": amount, "type": credit_type, "status": "posted"}
    return (f"\nCredit applied successfully!\n  - Transaction ID: {txn}\n  - Account: {account_id}\n"
            f"  - Credit Type: {credit_type}\n  - Amount: ${amount:.2f}\n  - Previous Balance: ${before:.2f}\n"
            f"  - New Balance: ${after:.2f}")


@tool(discoverable=True)
def apply_checking_account_credit_5829(db, account_id, amount, credit_type):
    return _credit(db, account_id, amount, credit_type, ("rebate_credit", "fee_refund"), ("checking",),
                   "checking account. Credits can only be applied to checking accounts", "checking_credit", "${:.2f}",
                   {"rebate_credit": "REBATE CREDIT - CUSTOMER SERVICE", "fee_refund": "FEE REFUND - CUSTOMER SERVICE"})


@tool(discoverable=True)
def apply_savings_account_credit_6831(db, account_id, amount, credit_type):
    return _credit(db, account_id, amount, credit_type, ("interest_correction", "fee_refund", "goodwill_credit"),
                   ("saving", "savings"), "savings account. This tool only applies to savings accounts",
                   "savings_credit", "{:.2f}",
                   {"interest_correction": "INTEREST CORRECTION - CUSTOMER SERVICE",
                    "fee_refund": "FEE REFUND - CUSTOMER SERVICE",
                    "goodwill_credit": "GOODWILL CREDIT - CUSTOMER SERVICE"})


@tool(discoverable=True)
def submit_interest_discrepancy_report_7294(db, account_id, user_id, expected_apy, actual_apy, amount_difference):
    if not account_id or not user_id or expected_apy is None or actual_apy is None or amount_difference is None:
        return "Error: Missing required parameters."
    try:
        expected, actual, diff = float(expected_apy), float(actual_apy), float(amount_difference)
    except (ValueError, TypeError):
        return "Error: expected_apy, actual_apy, and amount_difference must be numbers."
    account = rows(db, "accounts").get(account_id)
    if account is None:
        return f"Error: Account '{account_id}' not found."
    user = rows(db, "users").get(user_id)
    if user is None:
        return f"Error: User '{user_id}' not found."
    report_id = "IDR_" + hex_id(f"interest_report:{account_id}:{user_id}:{expected}:{actual}:{TODAY}")
    level = account.get("level", "Unknown")
    # τ²-bench's database has no interest_discrepancy_reports table: the report is not stored (add does nothing)
    add(db, "interest_discrepancy_reports", report_id, {
        "report_id": report_id, "account_id": account_id, "user_id": user_id, "account_level": level,
        "expected_apy": expected, "actual_apy": actual, "apy_difference": round(expected - actual, 4),
        "amount_difference": diff, "submitted_date": TODAY, "status": "PENDING_REVIEW"})
    return (f"\nInterest Discrepancy Report Submitted Successfully!\n  - Report ID: {report_id}\n"
            f"  - Account: {account_id} ({level})\n  - Customer: {user.get('name', 'Unknown')}\n"
            f"  - Expected APY: {expected}%\n  - Actual APY: {actual}%\n"
            f"  - APY Difference: {round(expected - actual, 4)}%\n  - Amount Difference: ${diff:.2f}\n"
            f"  - Status: PENDING_REVIEW\n\nThe backend team will investigate this discrepancy and ensure "
            f"correct APY calculations are applied going forward.")


@tool(discoverable=True)
def get_bank_account_transactions_9173(db, account_id):
    if not account_id:
        return "Error: Missing required parameter: account_id"
    if account_id not in rows(db, "accounts"):
        return f"Error: Account '{account_id}' not found."
    text = query_by(db, "bank_account_transaction_history", "account_id", account_id)
    return "\n".join(["Bank account transactions retrieved successfully.", "",
                      "Executed: get_bank_account_transactions_9173", f"Transactions for account {account_id}:",
                      text if found(text) else "\nNo transactions found for this account."])


@tool(discoverable=True)
def get_atm_deposit_images_8473(db, transaction_id):
    if not transaction_id:
        return "Error: Missing required parameter: transaction_id"
    txns = rows(db, "bank_account_transaction_history")
    if transaction_id not in txns:
        return f"Error: Transaction '{transaction_id}' not found."
    txn = txns[transaction_id]
    if txn.get("type") != "atm_deposit":
        return (f"Error: Transaction '{transaction_id}' is not an ATM deposit. This tool only works for ATM deposit "
                f"transactions.")
    description = txn.get("description", "")
    if "RHO-BANK" not in description.upper() and "RHOBANK" not in description.upper():
        return (f"Error: Transaction '{transaction_id}' is from a third-party ATM. Deposit images are only available "
                f"for Rho-Bank ATM deposits. For third-party ATM disputes, a chargeback request must be submitted to "
                f"the ATM network.")
    head = (f"ATM Deposit Image Retrieval Results\n=====================================\n"
            f"Transaction ID: {transaction_id}\n")
    image = DATA["atm_deposit_images"].get(transaction_id)
    if image:
        return (f"{head}ATM: {image['atm_id']}\nDeposit Date: {txn.get('date', 'Unknown')}\n"
                f"\n{image['envelope_contents']}\n\n--- VERIFICATION NOTES ---\n{image['verification_notes']}\n")
    return (f"{head}ATM: {description}\nDeposit Date: {txn.get('date', 'Unknown')}\n"
            f"Amount Recorded: ${abs(txn.get('amount', 0)):.2f}\n\n--- IMAGE STATUS ---\nStatus: IMAGES NOT AVAILABLE\n"
            f"Reason: Deposit images for this transaction have either expired (older than 90 days) or were not "
            f"captured by the ATM system.\n\nFor deposits without available images, the dispute will proceed based "
            f"on customer statement and ATM journal records only. Investigation timeline may be extended.\n")
