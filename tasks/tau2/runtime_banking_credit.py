"""τ²-bench's banking_knowledge discoverable agent tools for credit cards (``tau2/domains/banking_knowledge/
tools.py`` as the reference; MIT): disputes, replacements, closures, statement credits, account flags,
payments and credit limit increases, as evalkit's own code over the plain-data database. Part of the
banking sandbox source; never imported by evalkit."""
# one sandbox source: names defined in the other runtime_banking*.py parts (or appended by env.py)
# ruff: noqa: F821



def _cc_listed(db, cc_id):
    """Upstream's existence check: a credit card account whose ``account_id`` field is ``cc_id``."""
    return found(query_by(db, "credit_card_accounts", "account_id", cc_id))


def _one_of(value, allowed, what, joined=False):
    if value in allowed:
        return None
    return f"Error: Invalid {what}. Must be one of: {', '.join(allowed) if joined else list(allowed)}"


CC_DISPUTE_REASONS = ("unauthorized_fraudulent_charge", "duplicate_charge", "incorrect_amount",
                      "goods_services_not_received", "goods_services_not_as_described",
                      "canceled_subscription_still_charging", "refund_never_processed")


@tool(discoverable=True)
def file_credit_card_transaction_dispute_4829(db, transaction_id, card_action, card_last_4_digits, full_name,
                                              user_id, phone, email, address, contacted_merchant, purchase_date,
                                              issue_noticed_date, dispute_reason, resolution_requested,
                                              eligible_for_provisional_credit, partial_refund_amount=None):
    if not transaction_id or not user_id:
        return "Error: Missing required parameters."
    error = (_one_of(card_action, ("keep_active", "cancel_and_reissue"), "card_action")
             or _one_of(dispute_reason, CC_DISPUTE_REASONS, "dispute_reason")
             or _one_of(resolution_requested, ("full_refund", "partial_refund"), "resolution_requested"))
    if error:
        return error
    if resolution_requested == "partial_refund" and partial_refund_amount is None:
        return "Error: partial_refund_amount is required when resolution_requested is 'partial_refund'."
    did = dispute_id(user_id, transaction_id)
    record = {"dispute_id": did, "transaction_id": transaction_id, "user_id": user_id, "card_action": card_action,
              "card_last_4_digits": card_last_4_digits, "full_name": full_name, "phone": phone, "email": email,
              "address": address, "contacted_merchant": contacted_merchant, "purchase_date": purchase_date,
              "issue_noticed_date": issue_noticed_date, "dispute_reason": dispute_reason,
              "resolution_requested": resolution_requested, "partial_refund_amount": partial_refund_amount,
              "eligible_for_provisional_credit": eligible_for_provisional_credit,
              "provisional_credit_given": eligible_for_provisional_credit, "submitted_at": TODAY,
              "status": "SUBMITTED"}
    if not add(db, "transaction_disputes", did, record):
        return "Error: Dispute may have already been filed for this transaction."
    out = [("Credit card transaction dispute filed successfully. A case has been opened and will be reviewed "
           "within 10 business days."), "", "Executed: file_credit_card_transaction_dispute_4829",
           f"Dispute ID: {did}", f"Transaction: {transaction_id}", f"Reason: {titled(dispute_reason)}",
           f"Resolution Requested: {titled(resolution_requested)}"]
    if partial_refund_amount:
        out.append(f"Partial Refund Amount: ${partial_refund_amount:.2f}")
    out.append("Provisional Credit: ELIGIBLE - Credit will be applied within 2 business days."
               if eligible_for_provisional_credit else "Provisional Credit: Not eligible at this time.")
    return "\n".join(out)


@tool(discoverable=True)
def order_replacement_credit_card_7291(db, credit_card_account_id, user_id, shipping_address, reason,
                                       expedited_shipping=False):
    cc = credit_card_account_id
    if not cc or not user_id or not shipping_address or not reason:
        return "Error: Missing required parameters (credit_card_account_id, user_id, shipping_address, reason)."
    error = _one_of(reason, ("fraud_suspected", "lost", "stolen", "damaged", "expired", "other"), "reason")
    if error:
        return error
    if not _cc_listed(db, cc):
        return f"Error: Credit card account '{cc}' not found."
    order_id = "ccord_" + hex_id(f"credit_card_order:{cc}:{user_id}:{reason}", 12)
    record = {"order_id": order_id, "credit_card_account_id": cc, "user_id": user_id,
              "shipping_address": shipping_address, "reason": reason, "expedited_shipping": expedited_shipping,
              "order_date": TODAY, "status": "ORDERED", "old_card_cancelled": True}
    if not add(db, "credit_card_orders", order_id, record):
        return "Error: Order may have already been placed for this card replacement."
    accounts = rows(db, "credit_card_accounts")
    if cc in accounts:
        accounts[cc]["status"] = "CLOSED"
        accounts[cc]["closed_date"] = TODAY
    return "\n".join([
        f"Order ID: {order_id}", f"Card Account: {cc}", f"Reason: {titled(reason)}",
        f"Shipping Address: {shipping_address}",
        f"Shipping Method: {'Expedited' if expedited_shipping else 'Standard'}",
        f"Expected Delivery: {'2-3 business days' if expedited_shipping else '7-10 business days'}", "",
        ("The old card has been cancelled for security. The new card will have the same account number but a new "
        "card number and CVV.")])


@tool(discoverable=True)
def log_credit_card_closure_reason_4521(db, credit_card_account_id, user_id, closure_reason):
    cc = credit_card_account_id
    if not cc or not user_id or not closure_reason:
        return "Error: Missing required parameters."
    error = _one_of(closure_reason, ("annual_fee", "not_using_card", "found_better_card", "unhappy_with_rewards",
                                     "simplifying_finances", "negative_experience", "other"), "closure_reason")
    if error:
        return error
    record_id = "clsr_" + hex_id(f"closure_reason:{cc}:{user_id}", 12)
    add(db, "credit_card_closure_reasons", record_id,
        {"record_id": record_id, "credit_card_account_id": cc, "user_id": user_id, "closure_reason": closure_reason,
         "logged_at": TODAY, "status": "LOGGED"})
    args = {"credit_card_account_id": cc, "user_id": user_id, "closure_reason": closure_reason}
    return ("Closure reason logged successfully.\n\n" + executed("log_credit_card_closure_reason_4521", args)
            + f"Closure reason '{closure_reason}' logged for account {cc}.")


STATEMENT_CREDIT_REASONS = ("goodwill_adjustment", "promotional_credit", "annual_fee_reversal", "late_fee_reversal",
                            "interest_charge_reversal", "dispute_resolution", "price_match", "retention_offer",
                            "error_correction", "other")


@tool(discoverable=True)
def apply_statement_credit_8472(db, user_id, credit_card_account_id, amount, reason):
    cc = credit_card_account_id
    if not user_id or not cc or amount is None or not reason:
        return "Error: Missing required parameters (user_id, credit_card_account_id, amount, reason)."
    if amount <= 0:
        return "Error: Credit amount must be positive."
    error = _one_of(reason, STATEMENT_CREDIT_REASONS, "reason")
    if error:
        return error
    if not _cc_listed(db, cc):
        return f"Error: Credit card account '{cc}' not found."
    txn = transaction_id(user_id, "STATEMENT_CREDIT", reason, amount, "Statement Credit")
    record = {"transaction_id": txn, "user_id": user_id, "credit_card_account_id": cc, "credit_card_type": "N/A",
              "merchant_name": "Rho-Bank Statement Credit", "transaction_amount": f"-${amount:.2f}",
              "transaction_date": TODAY, "category": "Statement Credit", "status": "COMPLETED",
              "rewards_earned": "0 points", "credit_reason": reason}
    if not add(db, "credit_card_transaction_history", txn, record):
        return f"Error: Failed to apply statement credit. Transaction ID '{txn}' may already exist."
    return (f"Statement credit applied successfully.\n\nExecuted: apply_statement_credit_8472\n"
            f"  - Transaction ID: {txn}\n  - User ID: {user_id}\n  - Account: {cc}\n  - Credit Amount: ${amount:.2f}\n"
            f"  - Reason: {titled(reason)}\n  - Date: {TODAY}")


@tool(discoverable=True)
def apply_credit_card_account_flag_6147(db, credit_card_account_id, user_id, flag_type, expiration_date, reason):
    cc = credit_card_account_id
    if not cc or not user_id or not flag_type or not expiration_date or not reason:
        return ("Error: Missing required parameters (credit_card_account_id, user_id, flag_type, expiration_date, "
                "reason).")
    error = (_one_of(flag_type, ("annual_fee_waived", "promotional_apr", "rewards_bonus", "other"), "flag_type")
             or _one_of(reason, ("retention_offer", "loyalty_benefit", "promotional", "error_correction", "other"),
                        "reason"))
    if error:
        return error
    if not _cc_listed(db, cc):
        return f"Error: Credit card account '{cc}' not found."
    flag_id = "ccflag_" + hex_id(f"account_flag:{cc}:{flag_type}:{expiration_date}", 12)
    record = {"flag_id": flag_id, "credit_card_account_id": cc, "user_id": user_id, "flag_type": flag_type,
              "effective_date": TODAY, "expiration_date": expiration_date, "reason": reason,
              "applied_at": TODAY, "status": "ACTIVE"}
    if not add(db, "credit_card_account_flags", flag_id, record):
        return f"Error: Failed to apply account flag. Flag ID '{flag_id}' may already exist."
    return (f"Account flag applied successfully!\n  - Flag ID: {flag_id}\n  - Account: {cc}\n  - User ID: {user_id}\n"
            f"  - Flag Type: {titled(flag_type)}\n  - Effective Date: {TODAY}\n"
            f"  - Expiration Date: {expiration_date}\n  - Reason: {titled(reason)}")


@tool(discoverable=True)
def close_credit_card_account_7834(db, credit_card_account_id, user_id):
    cc = credit_card_account_id
    if not cc or not user_id:
        return "Error: Missing required parameters (credit_card_account_id, user_id)."
    if not _cc_listed(db, cc):
        return f"Error: Credit card account '{cc}' not found."
    if update(db, "credit_card_accounts", cc, {"status": "CLOSED", "closed_date": TODAY, "closed_by": user_id}) is None:
        return f"Error: Failed to close credit card account '{cc}'."
    return ("Credit card account closed successfully.\n\n"
            + executed("close_credit_card_account_7834", {"credit_card_account_id": cc, "user_id": user_id})
            + f"Account {cc} has been closed.")


@tool(discoverable=True)
def pay_credit_card_from_checking_9182(db, user_id, checking_account_id, credit_card_account_id, amount):
    chk, cc = checking_account_id, credit_card_account_id
    if not user_id or not chk or not cc or amount is None:
        return "Error: Missing required parameters (user_id, checking_account_id, credit_card_account_id, amount)."
    try:
        amount = float(amount)
        if amount <= 0:
            return "Error: Payment amount must be a positive number."
    except (ValueError, TypeError):
        return "Error: Invalid payment amount. Must be a positive number."
    accounts, cards = rows(db, "accounts"), rows(db, "credit_card_accounts")
    if chk not in accounts:
        return f"Error: Checking account '{chk}' not found."
    checking = accounts[chk]
    if checking.get("user_id") != user_id:
        return f"Error: Checking account '{chk}' does not belong to user '{user_id}'."
    if checking.get("class") != "checking":
        return f"Error: Account '{chk}' is not a checking account."
    have = account_balance(checking)
    if amount > have:
        return (f"Error: Insufficient funds in checking account. Available balance: ${have:.2f}, requested payment: "
                f"${amount:.2f}.")
    if cc not in cards:
        return f"Error: Credit card account '{cc}' not found."
    if cards[cc].get("user_id") != user_id:
        return f"Error: Credit card account '{cc}' does not belong to user '{user_id}'."
    owed = money(cards[cc].get("current_balance", "$0.00"))
    if amount > owed:
        return (f"Error: Payment amount (${amount:.2f}) exceeds credit card balance (${owed:.2f}). Please specify an "
                f"amount up to the outstanding balance.")
    checking["current_holdings"] = f"{have - amount:.2f}"
    cards[cc]["current_balance"] = f"${owed - amount:.2f}"
    return (f"Payment processed successfully!\n  - Payment Amount: ${amount:.2f}\n  - From Checking Account: {chk}\n"
            f"  - To Credit Card Account: {cc}\n  - New Checking Balance: ${have - amount:.2f}\n"
            f"  - New Credit Card Balance: ${owed - amount:.2f}\nThe payment has been applied immediately.")


def _own_card(db, cc, user_id):
    cards = rows(db, "credit_card_accounts")
    if cc not in cards:
        return f"Error: Credit card account '{cc}' not found."
    if cards[cc].get("user_id") != user_id:
        return f"Error: Credit card account '{cc}' does not belong to user '{user_id}'."
    return None


@tool(discoverable=True)
def submit_credit_limit_increase_request_7392(db, credit_card_account_id, user_id, requested_increase_amount):
    cc, amount = credit_card_account_id, requested_increase_amount
    if not cc or not user_id or amount is None:
        return "Error: Missing required parameters."
    if amount <= 0:
        return "Error: Requested increase amount must be positive."
    error = _own_card(db, cc, user_id)
    if error:
        return error
    request_id = cli_request_id(cc, user_id, amount)
    record = {"request_id": request_id, "credit_card_account_id": cc, "user_id": user_id,
              "requested_increase_amount": amount, "submitted_at": TODAY, "status": "PENDING"}
    if not add(db, "credit_limit_increase_requests", request_id, record):
        return "Error: A similar request may already exist."
    return (f"Credit limit increase request submitted successfully.\n\n"
            f"Executed: submit_credit_limit_increase_request_7392\n  - Request ID: {request_id}\n  - Account: {cc}\n"
            f"  - Requested Increase: ${amount:,}\n  - Status: PENDING")


@tool(discoverable=True)
def get_payment_history_6183(db, credit_card_account_id, months):
    cc = credit_card_account_id
    if not cc or months is None:
        return "Error: Missing required parameters (credit_card_account_id, months)."
    try:
        months = int(months)
        if months <= 0:
            return "Error: months must be a positive integer."
    except (ValueError, TypeError):
        return "Error: Invalid months value. Must be a positive integer."
    payments = [p for p in rows(db, "payment_history").values() if p.get("credit_card_account_id") == cc]
    if not payments:
        return f"No payment history found for account '{cc}'."
    payments = sorted(payments, key=lambda p: p.get("payment_date") or "", reverse=True)[:months]
    streak = 0
    while streak < len(payments) and payments[streak].get("status") == "ON_TIME":
        streak += 1
    out = [f"Payment history for account '{cc}' (last {months} months):", f"Consecutive on-time payments: {streak}"]
    out += [f"\n  - Payment Date: {p.get('payment_date')}\n    Amount: {p.get('amount')}\n    Status: {p.get('status')}"
            for p in payments]
    return "\n".join(out)


@tool(discoverable=True)
def approve_credit_limit_increase_5847(db, credit_card_account_id, user_id, new_credit_limit):
    cc = credit_card_account_id
    if not cc or not user_id or new_credit_limit is None:
        return "Error: Missing required parameters."
    error = _own_card(db, cc, user_id)
    if error:
        return error
    card = rows(db, "credit_card_accounts")[cc]
    ineligible = any(d.get("user_id") == user_id and d.get("status") in ("SUBMITTED", "UNDER_REVIEW", "PENDING")
                     for d in rows(db, "transaction_disputes").values())
    ineligible = ineligible or any(
        o.get("credit_card_account_id") == cc and o.get("status") in ("PENDING", "PROCESSING", "SHIPPED")
        for o in rows(db, "credit_card_orders").values())
    if ineligible or card.get("account_status", "").upper() in ("PAST_DUE", "DELINQUENT", "COLLECTIONS", "CLOSED"):
        return "Error: Credit limit increase request cannot be approved at this time."
    before, after = money(card.get("credit_limit", "$0.00")), float(new_credit_limit)
    card["credit_limit"] = f"${after:.2f}"
    request_id = cli_request_id(cc, user_id, after - before)
    add(db, "credit_limit_increase_requests", request_id,
        {"request_id": request_id, "credit_card_account_id": cc, "user_id": user_id,
         "previous_limit": f"${before:.2f}", "new_limit": f"${after:.2f}", "increase_amount": f"${after - before:.2f}",
         "decision_date": TODAY, "status": "APPROVED"})
    return (f"Credit limit increase approved!\n  - Account: {cc}\n  - Previous Limit: ${before:.2f}\n"
            f"  - New Limit: ${after:.2f}\n  - Increase: ${after - before:.2f}\n  - Effective Date: {TODAY}\n"
            f"The customer will receive a confirmation email.")


CLI_DENIAL_REASONS = ("insufficient_account_age", "cooldown_period_active", "pending_disputes",
                      "pending_replacement_card", "past_due_balance", "high_utilization",
                      "insufficient_payment_history", "requested_amount_exceeds_limit", "other")


@tool(discoverable=True)
def deny_credit_limit_increase_5848(db, credit_card_account_id, user_id, denial_reason):
    cc = credit_card_account_id
    if not cc or not user_id or not denial_reason:
        return "Error: Missing required parameters."
    error = _one_of(denial_reason, CLI_DENIAL_REASONS, "denial_reason", joined=True)
    if error:
        return error
    if cc not in rows(db, "credit_card_accounts"):
        return f"Error: Credit card account '{cc}' not found."
    request_id = cli_request_id(cc, user_id, 0.0)
    add(db, "credit_limit_increase_requests", request_id,
        {"request_id": request_id, "credit_card_account_id": cc, "user_id": user_id, "denial_reason": denial_reason,
         "decision_date": TODAY, "status": "DENIED"})
    return (f"Credit limit increase request denied.\n  - Account: {cc}\n  - Denial Reason: {denial_reason}\n"
            f"  - Date: {TODAY}\nThe customer will receive a notification explaining the denial.")
